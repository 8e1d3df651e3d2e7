"""Train a cross-encoder reranker from all-MiniLM-L6-v2 on the training catalogs (the probe of this record).

    python experiments/2026-12-02-reranker/train.py --out runs/reranker

The data are training.embedder's triples: (request, gold tool text, 3 hard negatives: the stock embedder's best
tools of the same catalog that are not gold), from every MetaTool and BFCL request (at most --per-catalog each)
and Seal-Tools' train split. sentence-transformers' own CrossEncoderTrainer with its MultipleNegativesRankingLoss
(the hard negatives and one in-batch negative a request), the whole network fine-tuned (the classifier is new).
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).parents[2]))

from training.embedder import triples
from training.ship import commit


@click.command(help=__doc__)
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--per-catalog", default=1500, show_default=True)
@click.option("--negatives", default=3, show_default=True)
@click.option("--epochs", default=1.0, show_default=True)
@click.option("--batch-size", default=16, show_default=True)
@click.option("--lr", default=5e-5, show_default=True)
@click.option("--max-length", default=96, show_default=True)
def main(out, per_catalog, negatives, epochs, batch_size, lr, max_length):
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import MultipleNegativesRankingLoss

    from toolbank.embed import default_model_folder

    rows, records = [], []
    for catalog, every in (("metatool", True), ("bfcl", True), ("seal_tools", False)):
        got, record = triples(catalog, 0, per_catalog, every, negatives)
        rows += got
        records.append(record)
        click.echo(f"{catalog}: {len(got)} rows", err=True)
    random.Random(0).shuffle(rows)
    columns = ["query", "positive", *(f"negative_{i + 1}" for i in range(negatives))]
    data = Dataset.from_dict({k: [r[i] for r in rows] for i, k in enumerate(columns)})
    model = CrossEncoder(str(default_model_folder()), num_labels=1, max_length=max_length, device="cpu")
    args = CrossEncoderTrainingArguments(
        output_dir=str(out / "checkpoints"),
        num_train_epochs=epochs,
        per_device_train_batch_size=batch_size,
        learning_rate=lr,
        warmup_steps=0.1,
        logging_steps=10,
        save_strategy="no",
        report_to="none",
        seed=0,
        use_cpu=True,
    )
    loss = MultipleNegativesRankingLoss(model, num_negatives=1)
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=data, loss=loss)
    start = time.perf_counter()
    result = trainer.train()
    wall = time.perf_counter() - start
    model.save_pretrained(str(out / "model"))
    manifest = {
        "base": "sentence-transformers/all-MiniLM-L6-v2",
        "trained_on": records,
        "loss": f"cross-encoder MultipleNegativesRankingLoss, {negatives} hard negatives and 1 in-batch",
        "epochs": epochs,
        "batch_size": batch_size,
        "lr": lr,
        "max_length": max_length,
        "rows": len(rows),
        "steps": result.global_step,
        "train_loss": result.training_loss,
        "wall_s": round(wall, 1),
        "rows_per_s": round(len(rows) * epochs / wall, 2),
        "commit": commit(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    click.echo(f"{len(rows)} rows, {result.global_step} steps in {wall:.0f} s; wrote {out}", err=True)


if __name__ == "__main__":
    main()
