"""Two checks of joint.py's alpha = 0.5, neither of which chooses anything.

    OMP_NUM_THREADS=2 python experiments/2026-12-06-dense-explain-away/check.py --policy runs/refit-policy \\
        --out experiments/2026-12-06-dense-explain-away/check

1. The leave-out-Seal-Tools models as served (served.py's curve) on the 1,000 Seal-Tools requests (seed 0) that
   2026-12-05-loo-seal-per-step and 2026-12-06-later-weight-loo judged: does the gain of the 904 new requests
   repeat on a second sample?
2. A paraphrasing catalog with many later steps: every later step of MetaTool (its requests with more than one
   call), read with the stock embedder (the `tools` embedder trained on all of MetaTool), l = 0.05, l_later = 0.1,
   fast mode without a reranker. Does taking the called tools out of the anchor cost it?
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

import click

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("served", HERE / "served.py")
served = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(served)
sweep, judge = served.sweep, served.judge
sys.path.insert(0, str(HERE.parents[1]))

from autotool.benchmarks import benchmark_bank, catalog_queries, step_input, steps_of  # noqa: E402
from autotool.metrics import paired_bootstrap  # noqa: E402
from autotool.select import SHIPPED_POLICY  # noqa: E402


def interval(p: dict) -> str:
    return f"{p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]"


@click.command(help=__doc__)
@click.option("--policy", "policy_folder", type=click.Path(path_type=Path, exists=True), required=True)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(policy_folder: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    lines, results = ["# Checks of alpha = 0.5", ""], {}

    c = served.curve(*catalog_queries("seal_tools:all:1000"), policy_folder, 0.5)
    hits, groups = c["per_item"], c["ids"]
    results["seal_tools:all:1000"] = c
    lines += ["## 1. Without Seal-Tools, served, Seal-Tools 1,000 (seed 0), per step (later steps in brackets)", ""]
    lines += [f"- {m}: {sweep.mean(hits[m]):.3f} ({sweep.later_mean(c, m):.3f})" for m in hits]
    lines += [
        f"- fast alpha=0.5 minus alpha=0: {interval(paired_bootstrap(hits['fast alpha=0.5'], hits['fast alpha=0'], groups=groups))}",
        f"- fast alpha=0.5 minus bm25: {interval(paired_bootstrap(hits['fast alpha=0.5'], hits['bm25'], groups=groups))}",
        "",
    ]

    bench, queries = catalog_queries("metatool")
    steps = [s for q in queries for s in steps_of(q) if s.index > 0]
    golds, ids = [s.gold for s in steps], [s.query.id for s in steps]
    bank = benchmark_bank(bench, "stock")
    items = [step_input(bank, s) for s in steps]
    by = {m: judge.searched(bank, items, golds, m) for m in ("bm25", "dense", "hybrid")}
    policy = judge.policy_for(SHIPPED_POLICY, bank)
    policy._saved_values = dataclasses.replace(policy.head_values, lexical=0.05, lexical_later=0.1)
    for alpha in (0.0, 0.5, 1.0):
        sweep.ALPHA = alpha
        by[f"fast:norerank alpha={alpha:g}"] = judge.selected(policy, bank, items, golds, "fast:norerank", 32)
    sweep.ALPHA = 0.0
    results["metatool later steps"] = {"ids": ids, "per_item": by}
    lines += [f"## 2. MetaTool's {len(steps)} later steps, stock embedder, no reranker", ""]
    lines += [f"- {m}: {sweep.mean(v):.3f}" for m, v in by.items()]
    for alpha in ("0.5", "1"):
        d = paired_bootstrap(by[f"fast:norerank alpha={alpha}"], by["fast:norerank alpha=0"], groups=ids)
        lines.append(f"- alpha={alpha} minus alpha=0: {interval(d)}")
    (out / "results.json").write_text(json.dumps(results) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
