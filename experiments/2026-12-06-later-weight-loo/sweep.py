"""Fast mode's BM25 weight at later steps, l_later, fitted on the foreign validation catalogs' later steps, judged
per step on Seal-Tools without Seal-Tools.

    OMP_NUM_THREADS=2 python experiments/2026-12-06-later-weight-loo/sweep.py --out experiments/2026-12-06-later-weight-loo

The leave-out-Seal-Tools recipe (2026-12-04-loo-seal-rerank-refit) set l = l_later = 0.05: l was fitted per
request on API-Bank and ToolAlpaca, where no step follows earlier calls, and l_later was given the same value
without being fitted. Here l stays 0.05 and l_later alone moves. Fast mode without the reranker chooses by
`E(request).e_k + l_later bm25_k` at a step after earlier calls (the earlier calls' tools excluded), so only the
embedder and l_later move a later step's choice, and l_later moves no first step.

The served path (`select_steps(..., mode="fast", arguments=False, rerank=False)`) runs once per l_later of the grid
on every step of API-Bank and ToolAlpaca (validation; python -m eval's per-step protocol: one step per gold call,
step i reads the earlier gold calls and may not choose their tools again) and of Seal-Tools' 300 and 1,000
requests (seed 0, the requests of 2026-12-05-loo-seal-per-step). The fitted l_later is the one with the best mean
over the two validation catalogs' later steps (ties go to the smaller); Seal-Tools' curves are reported beside it
and choose nothing. The policy is the shipped one (its language model is never loaded), its head's l and l_later
replaced; the embedder is `tools` (fine-tuned on MetaTool only), as in the leave-out-Seal-Tools records.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
import time
from pathlib import Path

import click

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from autotool.benchmarks import benchmark_bank, catalog_queries, step_input, steps_of  # noqa: E402
from autotool.metrics import paired_bootstrap  # noqa: E402
from autotool.select import SHIPPED_POLICY  # noqa: E402

_spec = importlib.util.spec_from_file_location("judge", ROOT / "experiments/2026-12-01-three-catalogs/judge.py")
judge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(judge)

GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0)
LEXICAL = 0.05  # l at a first step, fitted on API-Bank and ToolAlpaca (2026-12-04-lexical-weight-loo)
VALIDATION = ("apibank", "toolalpaca")
JUDGED = ("seal_tools:all:300", "seal_tools:all:1000")
EMBEDDER = "tools"


def curve(spec: str) -> dict:
    """hit@1 of every step of `spec` for each l_later of GRID, and the stock baselines on the same steps."""
    bench, queries = catalog_queries(spec)
    steps = [s for q in queries for s in steps_of(q)]
    golds = [s.gold for s in steps]
    stock, bank = benchmark_bank(bench, "stock"), benchmark_bank(bench, EMBEDDER)
    stock_items = [step_input(stock, s) for s in steps]
    hits = {m: judge.searched(stock, stock_items, golds, m) for m in ("bm25", "dense", "hybrid")}
    items = [step_input(bank, s) for s in steps]
    policy = judge.policy_for(SHIPPED_POLICY, bank)
    head = policy.head_values
    for later in GRID:
        policy._saved_values = dataclasses.replace(head, lexical=LEXICAL, lexical_later=later)
        hits[f"l_later={later:g}"] = judge.selected(policy, bank, items, golds, "fast:norerank", 32)
    return {"ids": [s.query.id for s in steps], "step_index": [s.index for s in steps], "per_item": hits}


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def later_only(c: dict, method: str) -> list[float]:
    return [h for h, i in zip(c["per_item"][method], c["step_index"]) if i > 0]


@click.command(help=__doc__)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    curves = {}
    for spec in (*VALIDATION, *JUDGED):
        curves[spec] = curve(spec)
        print(f"{spec}: {time.perf_counter() - began:.0f} s", flush=True)
    fitted = max(GRID, key=lambda x: (mean([mean(later_only(curves[v], f"l_later={x:g}")) for v in VALIDATION]), -x))
    specs = [*VALIDATION, *JUDGED]
    counts = {s: (len(curves[s]["step_index"]), sum(i > 0 for i in curves[s]["step_index"])) for s in specs}
    lines = [
        "# fast mode's BM25 weight at later steps, l_later (l = 0.05), without the reranker, per step",
        "",
        "hit@1 of the later steps (all steps in brackets); steps / later steps: "
        + "; ".join(f"{s} {n} / {k}" for s, (n, k) in counts.items()),
        "",
        "| l_later | " + " | ".join(specs) + " | validation mean, later steps |",
        "|---:|" + "---:|" * (len(specs) + 1),
    ]
    methods = [f"l_later={x:g}" for x in GRID] + ["bm25", "dense", "hybrid"]
    for m in methods:
        row = [f"{mean(later_only(curves[s], m)):.3f} ({mean(curves[s]['per_item'][m]):.3f})" for s in specs]
        val = mean([mean(later_only(curves[v], m)) for v in VALIDATION])
        label = m.removeprefix("l_later=")
        if m == f"l_later={fitted:g}":
            label = f"**{label}**"
        lines.append(f"| {label} | " + " | ".join(row) + f" | {val:.3f} |")
    paired = {}
    for spec in JUDGED:
        hits, groups = curves[spec]["per_item"], curves[spec]["ids"]
        paired[spec] = {
            "fitted minus l_later=0.05": paired_bootstrap(hits[f"l_later={fitted:g}"], hits["l_later=0.05"], groups=groups),
            "fitted minus bm25": paired_bootstrap(hits[f"l_later={fitted:g}"], hits["bm25"], groups=groups),
        }
    lines += ["", f"Fitted l_later = {fitted:g} (validation, later steps). Paired 95% intervals over requests, all steps:"]
    for spec, by in paired.items():
        for name, p in by.items():
            lines.append(f"- {spec}, {name}: {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]")
    seconds = round(time.perf_counter() - began, 1)
    lines += ["", f"{seconds:.0f} s."]
    results = {"embedder": EMBEDDER, "lexical": LEXICAL, "grid": GRID, "fitted_l_later": fitted, "paired": paired,
               "seconds": seconds, "curves": curves}
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
