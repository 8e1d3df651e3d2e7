"""Fine-tune the embedder on tool data: (request, gold tool text, hard negative) triples, contrastive loss.

    python -m training.embedder --out runs/embedder
    python -m training.embedder --out runs/embedder-seal --catalogs seal_tools:all,bfcl:all   # leave MetaTool out

The triples come from `--catalogs`, each `NAME:train` (the train queries and tools of its `--seed` split, so the
split's validation and unseen tools stay unseen) or `NAME:all` (every query and tool, for leave-one-catalog-out);
by default the train split of every training catalog. Foreign catalogs are refused. A request with two gold tools
gives two triples. The hard negatives (`--negatives`, one by default) are the highest-ranked train tools of the
same catalog that are not gold for the request, under the stock embedder. `--name-word-dropout P` takes out of a
triple's request, with probability P, the words of its gold tool's name (where 3 words are left), so that the pair
cannot be matched on the name alone: a request that repeats its tool's name teaches little about one that
paraphrases it. Training is sentence-transformers' own `SentenceTransformerTrainer` with
`MultipleNegativesRankingLoss` (the other requests' tools in the batch are negatives too), on a LoRA adapter
(PEFT) over all-MiniLM-L6-v2, so what ships is a few MB.

Writes into OUT: `adapter/` (the adapter and `embedder.json`: the folder `load_embedder` and
`python -m eval --embedder OUT/adapter` take) and `manifest.json` (catalogs, splits, seeds, counts, wall
time, examples a second, the commit).
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import click
import numpy as np

from autotool.benchmarks import TRAINING_CATALOGS, load_benchmark, load_split, training_record
from autotool.selection import words
from training.cli import CommandError, doc_help, run
from training.ship import provenance

ADAPTER_MODULES = ["query", "key", "value", "dense"]  # every linear layer of the BERT blocks
# The three catalogs the recipes were chosen on; complexfuncbench is named where a run wants it.
DEFAULT_CATALOGS = "metatool:train,seal_tools:train,bfcl:train"
CANDIDATES = 16  # the hard negatives of a request are drawn from its best tools under the stock embedder (and BM25)


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def name_words(name: str) -> set[str]:
    """The lower-cased words of a tool name, split at case changes, `_`, `.` and `-`, a plural's `s` cut
    (`getUserTokens`: get, user, token)."""
    return {_singular(w) for w in words(name)}


def without_name_words(request: str, name: str, keep: int = 3) -> str:
    """`request` less the words of tool `name` (whole words, any case, singular or plural); `request` as it was
    where fewer than `keep` words would be left."""
    drop = name_words(name)
    kept = [w for w in request.split() if not (name_words(w.lower()) & drop)]  # lowered: not split at case
    return " ".join(kept) if len(kept) >= keep else request


def triples(
    catalog: str,
    seed: int = 0,
    limit: int | None = None,
    every_query: bool = False,
    negatives: int = 1,
    lexical: int = 0,
    name_word_dropout: float = 0.0,
) -> tuple[list[tuple[str, ...]], dict]:
    """(request, gold tool text, `negatives` hard negative texts) for the train queries of `catalog` (every
    query and tool with `every_query`), and its record for the manifest. The hard negatives are the stock
    embedder's best tools that are not gold; the last `lexical` of them BM25's best instead (not gold, not
    already taken; the dense ones again where BM25 finds too few), the confusers a lexical prior brings into the
    served path's candidates. With probability `name_word_dropout` (seeded), a triple's request loses the words
    of its gold tool's name (`without_name_words`)."""
    from toolbank import load_embedder
    from toolbank.search import BM25Index

    bench = load_benchmark(catalog)
    split = load_split(bench, seed)
    train_tools = [t for t in bench.tools if every_query or t.name in set(split.tools["train"])]
    names = [t.name for t in train_tools]
    text = {t.name: t.text for t in train_tools}
    wanted = {q.id for q in bench.queries} if every_query else set(split.queries["train"])
    queries = [q for q in bench.queries if q.id in wanted and set(q.gold_tools) <= set(names)]
    random.Random(seed).shuffle(queries)
    queries = queries[:limit] if limit else queries
    if not queries:
        return [], training_record(bench, seed, "all" if every_query else "train") | {"queries": 0, "triples": 0}
    stock = load_embedder("stock")
    tool_vectors = stock.encode([text[n] for n in names], progress=True)  # (tools, dim)
    query_vectors = stock.encode([q.text for q in queries], progress=True)  # (queries, dim)
    ranks = np.argsort(-(query_vectors @ tool_vectors.T), axis=1)[:, :CANDIDATES]  # (queries, CANDIDATES)
    bm25 = BM25Index(range(len(names)), [text[n] for n in names]) if lexical else None
    rows, dropout, dropped = [], random.Random(seed + 1), 0
    for q, ranked in zip(queries, ranks):
        wrong = [names[i] for i in ranked if names[i] not in q.gold_tools]
        hard = wrong[: negatives - lexical]
        if bm25 is not None:  # a request sharing no word with enough tools keeps dense negatives in their place
            lexical_ranked = [names[i] for i in bm25.search(q.text, CANDIDATES)[1]]
            hard += [n for n in lexical_ranked if n not in q.gold_tools and n not in hard][:lexical]
            hard += [n for n in wrong if n not in hard][: negatives - len(hard)]
        if len(hard) < negatives:
            continue
        hard = [text[n] for n in hard]
        for gold in dict.fromkeys(q.gold_tools):
            request = q.text
            if name_word_dropout and dropout.random() < name_word_dropout:
                request = without_name_words(q.text, gold)
                dropped += request != q.text
            rows.append((request, text[gold], *hard))
    record = training_record(bench, seed, "all" if every_query else "train") | {
        "queries": len(queries),
        "triples": len(rows),
        "tools": len(names),
    }
    if name_word_dropout:
        record["name_words_dropped"] = dropped
    return rows, record


def parse_catalogs(spec: str) -> list[tuple[str, bool]]:
    """`name:all|train,...` as (catalog, every request of it); a training catalog only, never a foreign one."""
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, _, split = (part.strip() for part in item.partition(":"))
        if name not in TRAINING_CATALOGS:
            raise CommandError(
                f"--catalogs: {name!r} is not a training catalog; expected one of {', '.join(TRAINING_CATALOGS)}"
            )
        if split not in ("all", "train"):
            raise CommandError(f"--catalogs: {item!r}: expected the split 'all' or 'train' after the colon")
        if name in (n for n, _ in out):
            raise CommandError(f"--catalogs: {name!r} is named twice; name each catalog once")
        out.append((name, split == "all"))
    if not out:
        raise CommandError("--catalogs: expected at least one catalog, e.g. metatool:all")
    return out


def catalog_triples(
    catalogs: list[tuple[str, bool]],
    seed: int,
    per_catalog: int | None,
    negatives: int,
    lexical: int = 0,
    name_word_dropout: float = 0.0,
) -> tuple[list[tuple[str, ...]], list[dict]]:
    """`triples` of each of `parse_catalogs`' catalogs (at most `per_catalog` requests of each), shuffled
    together with `seed`, and their records."""
    rows, records = [], []
    for catalog, every in catalogs:
        got, record = triples(catalog, seed, per_catalog, every, negatives, lexical, name_word_dropout)
        spec = f"{catalog}:{'all' if every else 'train'}"
        if not record["queries"]:  # complexfuncbench:train: each request needs 2 to 7 of its 40 tools, never all seen
            raise CommandError(
                f"--catalogs: {spec} gives no training requests (none has all its gold tools among the split's train "
                f"tools); name it {catalog}:all"
            )
        if not got:  # every request was skipped for want of hard negatives
            raise CommandError(
                f"--catalogs: {spec} gives no training triples: no request has {negatives} tools that are not gold "
                f"among the stock embedder's {CANDIDATES} best; lower --negatives"
            )
        rows += got
        records.append(record)
        which = "" if every else "train "
        click.echo(f"{catalog}: {len(got)} triples from {record['queries']} {which}requests", err=True)
    random.Random(seed).shuffle(rows)
    return rows, records


def triples_dataset(rows: list[tuple[str, ...]]):
    """The rows as a `datasets.Dataset` with the columns sentence-transformers' losses read in order: the
    request, the gold tool's text, then each hard negative's."""
    from datasets import Dataset

    negatives = len(rows[0]) - 2 if rows else 0
    columns = ["query", "positive", *(f"negative_{i + 1}" for i in range(negatives))]
    return Dataset.from_dict({k: [r[i] for r in rows] for i, k in enumerate(columns)})


def save_adapter(peft_model, folder: Path) -> None:
    """Write a PEFT model's adapter (and any layers it saves whole) into `folder`, naming the stock model as its
    base (not this machine's path to it) and without PEFT's empty model card (a manifest says what it is)."""
    from toolbank.embed import STOCK_EMBEDDER

    peft_model.save_pretrained(str(folder))
    config = json.loads((folder / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = STOCK_EMBEDDER
    (folder / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (folder / "README.md").unlink(missing_ok=True)


@click.command(help=doc_help(__doc__), context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output folder.")
@click.option(
    "--catalogs",
    default=DEFAULT_CATALOGS,
    show_default=True,
    help="Comma-separated training catalogs, each NAME:train (its split's train part) or NAME:all (every request "
    "and tool, for leave-one-catalog-out runs; a catalog trained on so is no longer fit for within-catalog figures).",
)
@click.option(
    "--per-catalog", type=click.IntRange(1), default=None, help="At most this many requests from each catalog."
)
@click.option(
    "--negatives",
    type=click.IntRange(1, CANDIDATES),
    default=1,
    show_default=True,
    help="Hard negatives a request: the stock embedder's highest-ranked tools of its catalog that are not gold.",
)
@click.option(
    "--name-word-dropout",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="The share of triples whose request loses the words of its gold tool's name (where 3 words are left).",
)
@click.option("--epochs", type=float, default=1.0, show_default=True)
@click.option("--batch-size", type=int, default=64, show_default=True, help="Triples a step (in-batch negatives).")
@click.option("--lr", type=float, default=2e-4, show_default=True, help="Learning rate of the adapter.")
@click.option("--rank", type=int, default=16, show_default=True, help="LoRA rank.")
@click.option("--max-length", type=int, default=128, show_default=True, help="Tokens kept of each text while training.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the split, shuffling and adapter start.")
def main(
    out,
    catalogs,
    per_catalog,
    negatives,
    name_word_dropout,
    epochs,
    batch_size,
    lr,
    rank,
    max_length,
    seed,
):
    wanted = parse_catalogs(catalogs)  # before the heavy imports, so a typo fails at once
    from peft import LoraConfig, TaskType, get_peft_model
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers
    from transformers import set_seed

    from toolbank import load_embedder
    from toolbank.embed import STOCK_EMBEDDER, default_model_folder

    rows, records = catalog_triples(wanted, seed, per_catalog, negatives, name_word_dropout=name_word_dropout)
    data = triples_dataset(rows)

    set_seed(seed)  # the adapter's random start is drawn here, before the trainer seeds the run
    model = SentenceTransformer(str(default_model_folder()), device="cpu")
    full_length = model.max_seq_length
    model.max_seq_length = max_length
    lora = LoraConfig(
        task_type=TaskType.FEATURE_EXTRACTION, r=rank, lora_alpha=2 * rank, target_modules=ADAPTER_MODULES
    )
    model[0].model = get_peft_model(model[0].model, lora)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(out / "checkpoints"),
        num_train_epochs=epochs,
        per_device_train_batch_size=batch_size,
        learning_rate=lr,
        warmup_steps=0.1,  # a fraction of the steps
        batch_sampler=BatchSamplers.NO_DUPLICATES,  # one request's tool is never another's in-batch negative
        logging_steps=10,
        save_strategy="no",
        report_to="none",
        seed=seed,
        use_cpu=True,
    )
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=data, loss=MultipleNegativesRankingLoss(model)
    )
    start = time.perf_counter()
    result = trainer.train()
    wall = time.perf_counter() - start
    model.max_seq_length = full_length

    out.mkdir(parents=True, exist_ok=True)
    adapter = out / "adapter"
    save_adapter(model[0].model, adapter)
    (adapter / "embedder.json").write_text(json.dumps({"base": STOCK_EMBEDDER}, indent=2) + "\n")
    embedder_id = load_embedder(str(adapter)).id  # merges once; what `--embedder OUT/adapter` loads
    manifest = {
        "embedder": embedder_id,
        "base": STOCK_EMBEDDER,
        "trained_on": records,
        "loss": f"MultipleNegativesRankingLoss, {negatives} hard negative(s) a request",
        "negatives": negatives,
        "name_word_dropout": name_word_dropout,
        "adapter": {"type": "lora", "rank": rank, "alpha": 2 * rank, "modules": ADAPTER_MODULES},
        "epochs": epochs,
        "batch_size": batch_size,
        "lr": lr,
        "max_length": max_length,
        "seed": seed,
        "triples": len(rows),
        "steps": result.global_step,
        "train_loss": result.training_loss,
        "wall_s": round(wall, 1),
        "examples_per_s": round(len(rows) * epochs / wall, 2),
        **provenance(),
    }
    for folder in (out, adapter):  # the adapter folder carries its provenance wherever it is copied
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    click.echo(f"{len(rows)} triples, {result.global_step} steps in {wall:.0f} s; wrote {out}", err=True)


if __name__ == "__main__":
    raise SystemExit(run(main))
