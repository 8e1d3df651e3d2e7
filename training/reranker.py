"""Train the reranker: a cross-encoder that reads a request and a tool's text together and scores the pair.

    python -m training.reranker --out runs/reranker

It reranks fast and reason mode's best few candidates (`autotool.rerank`); a bi-encoder embeds the request and
the tool apart and cannot weigh one against the other. The rows are `training.embedder.triples`: (request, gold
tool text, `--negatives` hard negatives: the stock embedder's best tools of the same catalog that are not gold,
the last `--lexical-negatives` of them BM25's best instead),
from `--catalogs`: by default every request of MetaTool and BFCL (at most `--per-catalog` of each; MetaTool has
21,029) and Seal-Tools' train split only, so Seal-Tools' val and unseen tools and every foreign catalog stay
unseen. A leave-one-catalog-out reranker leaves one out, e.g. `--catalogs metatool:all,bfcl:all`.
Training is sentence-transformers' own `CrossEncoderTrainer` with its cross-encoder
`MultipleNegativesRankingLoss` (the hard negatives and one in-batch negative a request), on a LoRA adapter (PEFT)
over all-MiniLM-L6-v2 plus the new scoring layer, so what ships is a few MB.

Writes into OUT: `reranker/` (the adapter, the scoring layer, `reranker.json` and `manifest.json`: the folder
`autotool.rerank.load_reranker` reads and a policy's `reranker/` holds) and `manifest.json` (catalogs, splits,
seeds, counts, wall time, rows a second, the commit).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from training.cli import CommandError, doc_help, run
from training.embedder import ADAPTER_MODULES, catalog_triples, parse_catalogs, save_adapter, triples_dataset
from training.ship import provenance

# Seal-Tools keeps its split's val and unseen tools for within-catalog figures
DEFAULT_CATALOGS = "metatool:all,bfcl:all,seal_tools:train"


@click.command(help=doc_help(__doc__), context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output folder.")
@click.option(
    "--catalogs",
    default=DEFAULT_CATALOGS,
    show_default=True,
    help="Comma-separated training catalogs, each NAME:all (every request) or NAME:train (its train split).",
)
@click.option(
    "--per-catalog",
    type=click.IntRange(1),
    default=2500,
    show_default=True,
    help="At most this many requests a catalog.",
)
@click.option("--negatives", type=click.IntRange(1, 15), default=3, show_default=True, help="Hard negatives a request.")
@click.option(
    "--lexical-negatives",
    type=click.IntRange(0, 15),
    default=0,
    show_default=True,
    help="How many of the hard negatives are BM25's best wrong tools instead of the stock embedder's.",
)
@click.option("--epochs", type=float, default=2.0, show_default=True)
@click.option("--batch-size", type=int, default=16, show_default=True, help="Requests a step.")
@click.option("--lr", type=float, default=5e-4, show_default=True, help="Learning rate of the adapter.")
@click.option("--rank", type=int, default=16, show_default=True, help="LoRA rank.")
@click.option("--max-length", type=int, default=96, show_default=True, help="Tokens of a (request, tool) pair.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the split, shuffling and adapter start.")
def main(out, catalogs, per_catalog, negatives, lexical_negatives, epochs, batch_size, lr, rank, max_length, seed):
    wanted = parse_catalogs(catalogs)  # before the heavy imports, so a typo fails at once
    from peft import LoraConfig, TaskType, get_peft_model
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import MultipleNegativesRankingLoss
    from transformers import set_seed

    from autotool.rerank import RERANKER_CONFIG, load_reranker
    from toolbank.embed import STOCK_EMBEDDER, default_model_folder

    if lexical_negatives > negatives:
        raise CommandError(f"--lexical-negatives: expected at most --negatives ({negatives}), got {lexical_negatives}")
    rows, records = catalog_triples(wanted, seed, per_catalog, negatives, lexical=lexical_negatives)
    data = triples_dataset(rows)

    set_seed(seed)  # the new scoring layer's and the adapter's random start, drawn before the trainer seeds the run
    model = CrossEncoder(str(default_model_folder()), num_labels=1, max_length=max_length, device="cpu")
    lora = LoraConfig(  # the new scoring layer (`classifier`) is trained whole and saved with the adapter
        task_type=TaskType.SEQ_CLS,
        r=rank,
        lora_alpha=2 * rank,
        target_modules=ADAPTER_MODULES,
        modules_to_save=["classifier"],
    )
    model[0].model = get_peft_model(model[0].model, lora)
    args = CrossEncoderTrainingArguments(
        output_dir=str(out / "checkpoints"),
        num_train_epochs=epochs,
        per_device_train_batch_size=batch_size,
        learning_rate=lr,
        warmup_steps=0.1,  # a fraction of the steps
        logging_steps=10,
        save_strategy="no",
        report_to="none",
        seed=seed,
        use_cpu=True,
    )
    loss = MultipleNegativesRankingLoss(model, num_negatives=1)
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=data, loss=loss)
    start = time.perf_counter()
    result = trainer.train()
    wall = time.perf_counter() - start

    folder = out / "reranker"
    save_adapter(model[0].model, folder)  # the adapter and the scoring layer
    (folder / RERANKER_CONFIG).write_text(
        json.dumps({"base": STOCK_EMBEDDER, "max_length": max_length}, indent=2) + "\n"
    )
    manifest = {
        "reranker": "cross-encoder over " + STOCK_EMBEDDER,
        "trained_on": records,
        "loss": f"cross-encoder MultipleNegativesRankingLoss, {negatives} hard negatives ({lexical_negatives} of "
        "them BM25's) and 1 in-batch",
        "adapter": {"type": "lora", "rank": rank, "alpha": 2 * rank, "modules": ADAPTER_MODULES},
        "epochs": epochs,
        "batch_size": batch_size,
        "lr": lr,
        "max_length": max_length,
        "seed": seed,
        "rows": len(rows),
        "steps": result.global_step,
        "train_loss": result.training_loss,
        "wall_s": round(wall, 1),
        "rows_per_s": round(len(rows) * epochs / wall, 2),
        **provenance(),
    }
    for where in (out, folder):  # the reranker folder carries its provenance wherever it is copied
        (where / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    load_reranker(folder)  # fails here, not in serving, if what was written does not load
    click.echo(f"{len(rows)} rows, {result.global_step} steps in {wall:.0f} s; wrote {folder}", err=True)


if __name__ == "__main__":
    raise SystemExit(run(main))
