"""Explain away the called tools in the anchor at later steps, as `lexical_query` does in BM25's query.

    OMP_NUM_THREADS=2 python experiments/2026-12-06-dense-explain-away/sweep.py --out experiments/2026-12-06-dense-explain-away

At a step after earlier calls, BM25 reads only the request's words that the called tools' texts do not contain
(shipped since 2026-12-01: +2.2 on API-Bank, +8.9 on Seal-Tools val). The anchor has no such step: E(request) is the
same vector at every step, so a later step's anchor still points at the tool the first step called (excluded) and
at its neighbours. Here the anchor at a later step is

    a' = unit(a - alpha sum_c (a . e_c) e_c)

over the called tools' unit vectors e_c: alpha = 0 is the served anchor, alpha = 1 takes out each called tool's
direction. First steps are untouched, so for alpha > 0 only later steps are run and the first steps' hits are
alpha = 0's.

Two settings, each through the served path (`select_steps(..., mode="fast", arguments=False)`, with the anchor
changed by wrapping `autotool.selection.candidates`), embedder `tools`:
- `shipped`: the shipped policy (l = 0.1, l_later = 0.7) and its reranker (fast as served) and without it;
  judged beside: Seal-Tools val (the training catalogs' val, which chose the shipped head).
- `loo-seal`: the first stage of the leave-out-Seal-Tools recipe (l = 0.05, l_later = 0.1, fitted on API-Bank and
  ToolAlpaca; 2026-12-06-later-weight-loo), without a reranker (the one trained without Seal-Tools is not
  rebuilt here); judged on Seal-Tools' 1,000 requests (seed 0), per step.

The fit rule, fixed before the run: in each setting and mode, alpha is the grid value with the best mean over
API-Bank's and ToolAlpaca's later-step hit@1 (ties go to the smaller). The judged catalogs choose nothing.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
import time
from pathlib import Path

import click
import numpy as np

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

import autotool.select as served  # noqa: E402
from autotool.benchmarks import benchmark_bank, catalog_queries, step_input, steps_of  # noqa: E402
from autotool.metrics import paired_bootstrap  # noqa: E402
from autotool.select import SHIPPED_POLICY  # noqa: E402
from autotool.selection import candidates, unit  # noqa: E402

_spec = importlib.util.spec_from_file_location("judge", ROOT / "experiments/2026-12-01-three-catalogs/judge.py")
judge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(judge)

GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)
VALIDATION = ("apibank", "toolalpaca")
SETTINGS = {
    "shipped": {"head": None, "modes": ("fast", "fast:norerank"), "judged": ("seal_tools:val",)},
    "loo-seal": {"head": (0.05, 0.1), "modes": ("fast:norerank",), "judged": ("seal_tools:all:1000",)},
}
EMBEDDER = "tools"
ALPHA = 0.0  # read by `explained`, set per run


def explained(head, tools, anchors, steps, *args, **kwargs):
    """`candidates` with each later step's anchor rid of `ALPHA` of the called tools' directions."""
    anchors = np.array(anchors, dtype=np.float32)
    if ALPHA:
        for row, step in enumerate(steps):
            names = [n for n in step.called_tools if n in tools] if step.later else []
            if names:
                vectors = tools.vectors(names)
                anchors[row] = unit(anchors[row] - ALPHA * (vectors.T @ (vectors @ anchors[row])))
    return candidates(head, tools, anchors, steps, *args, **kwargs)


served.candidates = explained


def curve(spec: str, setting: dict) -> dict:
    """Every step's hit@1 for each mode and alpha, the stock baselines beside."""
    global ALPHA
    bench, queries = catalog_queries(spec)
    steps = [s for q in queries for s in steps_of(q)]
    golds = [s.gold for s in steps]
    later = [i for i, s in enumerate(steps) if s.index > 0]
    stock, bank = benchmark_bank(bench, "stock"), benchmark_bank(bench, EMBEDDER)
    stock_items = [step_input(stock, s) for s in steps]
    hits = {m: judge.searched(stock, stock_items, golds, m) for m in ("bm25", "dense", "hybrid")}
    items = [step_input(bank, s) for s in steps]
    policy = judge.policy_for(SHIPPED_POLICY, bank)
    if setting["head"] is not None:
        lexical, lexical_later = setting["head"]
        policy._saved_values = dataclasses.replace(policy.head_values, lexical=lexical, lexical_later=lexical_later)
    for mode in setting["modes"]:
        for alpha in GRID:
            ALPHA = alpha
            if alpha == 0:
                row = judge.selected(policy, bank, items, golds, mode, 32)
            else:
                row = list(hits[f"{mode} alpha=0"])
                for i, h in zip(later, judge.selected(policy, bank, [items[i] for i in later], [golds[i] for i in later], mode, 32)):
                    row[i] = h
            hits[f"{mode} alpha={alpha:g}"] = row
    ALPHA = 0.0
    return {"ids": [s.query.id for s in steps], "step_index": [s.index for s in steps], "per_item": hits}


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def later_mean(c: dict, method: str) -> float:
    return mean(h for h, i in zip(c["per_item"][method], c["step_index"]) if i > 0)


@click.command(help=__doc__)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    results, lines = {"grid": GRID, "embedder": EMBEDDER, "settings": {}}, []
    for name, setting in SETTINGS.items():
        specs = [*VALIDATION, *setting["judged"]]
        curves = {}
        for spec in specs:
            curves[spec] = curve(spec, setting)
            print(f"{name} {spec}: {time.perf_counter() - began:.0f} s", flush=True)
        fitted, paired = {}, {}
        for mode in setting["modes"]:
            fitted[mode] = max(
                GRID, key=lambda a: (mean(later_mean(curves[v], f"{mode} alpha={a:g}") for v in VALIDATION), -a)
            )
            for spec in specs:
                hits, groups = curves[spec]["per_item"], curves[spec]["ids"]
                best = max(("bm25", "dense", "hybrid"), key=lambda m: mean(hits[m]))
                key = f"{mode} alpha={fitted[mode]:g}"
                paired[f"{spec}, {mode}"] = {
                    "fitted minus alpha=0": paired_bootstrap(hits[key], hits[f"{mode} alpha=0"], groups=groups),
                    f"fitted minus {best}": paired_bootstrap(hits[key], hits[best], groups=groups),
                }
        counts = "; ".join(
            f"{s} {len(c['step_index'])} / {sum(i > 0 for i in c['step_index'])}" for s, c in curves.items()
        )
        lines += [
            f"## {name}: hit@1 of the later steps (all steps in brackets)",
            "",
            f"steps / later steps: {counts}",
            "",
            "| method | " + " | ".join(specs) + " | validation mean, later steps |",
            "|---|" + "---:|" * (len(specs) + 1),
        ]
        methods = [f"{m} alpha={a:g}" for m in setting["modes"] for a in GRID] + ["bm25", "dense", "hybrid"]
        for m in methods:
            cells = [f"{later_mean(curves[s], m):.3f} ({mean(curves[s]['per_item'][m]):.3f})" for s in specs]
            val = mean(later_mean(curves[v], m) for v in VALIDATION)
            label = f"**{m}**" if any(m == f"{k} alpha={a:g}" for k, a in fitted.items()) else m
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {val:.3f} |")
        lines += ["", "Fitted (validation later steps): " + ", ".join(f"{m} alpha = {a:g}" for m, a in fitted.items())]
        lines += ["", "Paired 95% intervals over requests, all steps:"]
        for where, by in paired.items():
            for what, p in by.items():
                lines.append(f"- {where}, {what}: {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]")
        lines.append("")
        results["settings"][name] = {"fitted": fitted, "paired": paired, "curves": curves}
    seconds = round(time.perf_counter() - began, 1)
    lines.append(f"{seconds:.0f} s.")
    results["seconds"] = seconds
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
