"""Do one policy's rationales select better than another's? Paired, on the same val queries.

    python experiments/2026-11-29-diagnostics/compare_rationales.py BEFORE AFTER \
        [--bench metatool,seal_tools] [--b 0.75] [--lexical 0]

BEFORE and AFTER are `training.calibrate --out` folders (their `rationales-BENCH.jsonl`, written for the
same seeded sample of val queries). For the first step of each query, the anchor `normalize(E(query) + b E(rationale))` is
scored against the whole catalog, plus `lexical` times the query's normalised BM25 scores (a = 1, W = 0:
the heads `training.calibrate` fits); prints val hit@1 of both and the paired difference AFTER - BEFORE
with a bootstrap 95% interval.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from autotool.benchmarks import benchmark_bank, load_benchmark
from autotool.head import ToolTable
from autotool.metrics import paired_bootstrap
from autotool.policy import embed
from autotool.selection import StepInput
from training import calibrate
from training.calibrate import ValSteps


def read(folder: Path, bench: str) -> list[dict]:
    """The rationales written for first steps (files from before later steps were written hold only those)."""
    path = folder / f"rationales-{bench}.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no rationales for {bench} (write them with training.calibrate --out)")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("index", 0) == 0]


def hits(table: ToolTable, rows: list[dict], b: float, lexical: float = 0.0) -> np.ndarray:
    """1.0 where the tool scored best (cosine with the anchor, plus the lexical prior) is the gold one: the
    rows as first val steps of `training.calibrate`, with a = 1 and W = 0."""
    queries = [r["query"] for r in rows]
    n, dim = len(rows), table.vectors.shape[1]
    val = ValSteps(
        "",
        table,
        [],
        [],
        embed(table.embedder, queries),
        embed(table.embedder, [r["rationale"] for r in rows]),
        torch.zeros(n, dim),
        table.lexical([StepInput(q) for q in queries]) if lexical else torch.zeros(n, len(table)),
        torch.tensor([table.index[r["gold"]] for r in rows]),
        torch.zeros(n, dtype=torch.bool),
        torch.zeros(n, len(table), dtype=torch.bool),
    )
    return calibrate.hits(val, 1.0, b, lexical).numpy()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--bench", default="metatool,seal_tools")
    parser.add_argument("--b", type=float, default=0.75, help="the rationale's weight in the anchor")
    parser.add_argument("--lexical", type=float, default=0.0, help="the lexical prior's weight l")
    parser.add_argument("--embedder", default="default", help="the embedder the policies were trained with")
    args = parser.parse_args(argv)
    prior = f" + {args.lexical:g} bm25" if args.lexical else ""
    print(f"val hit@1, anchor E(query) + {args.b:g} E(rationale){prior}; {args.after} - {args.before}\n")
    print("| benchmark | n | before | after | after - before [95% CI] |\n|---|---:|---:|---:|---|")
    for name in [b.strip() for b in args.bench.split(",") if b.strip()]:
        bench = load_benchmark(name)
        try:
            before, after = read(args.before, bench.name), read(args.after, bench.name)
        except FileNotFoundError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if [r["query"] for r in before] != [r["query"] for r in after]:
            print(f"error: {args.before} and {args.after} hold different {bench.name} queries", file=sys.stderr)
            return 2
        table = ToolTable.from_bank(benchmark_bank(bench, args.embedder))
        h0, h1 = hits(table, before, args.b, args.lexical), hits(table, after, args.b, args.lexical)
        d = paired_bootstrap(h1, h0)
        print(
            f"| {bench.name} | {len(h0)} | {h0.mean():.3f} | {h1.mean():.3f} | "
            f"{d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
