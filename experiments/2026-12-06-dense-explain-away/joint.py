"""Without Seal-Tools: l_later and the anchor's explain-away (alpha) fitted together on the later steps of API-Bank,
ToolAlpaca and BFCL, judged on the 904 Seal-Tools requests no earlier record judged.

    OMP_NUM_THREADS=2 python experiments/2026-12-06-dense-explain-away/joint.py --out experiments/2026-12-06-dense-explain-away/joint

sweep.py fitted alpha on API-Bank's and ToolAlpaca's 180 later steps, which paraphrase their tools; 2026-12-06-later-
weight-loo found the same two catalogs blind to what requests that name their tools' words want at later steps.
BFCL's requests name their functions' words (2026-12-01-three-catalogs), and BFCL is a training catalog of the
leave-out-Seal-Tools recipe, so its later steps (316, every request) may choose these first-stage weights: the
first stage reads the `tools` embedder (trained on MetaTool alone) and BM25, and nothing in it trained on BFCL.
This choice of fitting catalogs was made after sweep.py's Seal-Tools figures were read, so the judged requests are
new: every Seal-Tools request (904 of 2,054) outside the seed-0 samples of 300, 600 and 1,000 that earlier records
judged. (The script first asked for 1,000 of them sampled with seed 1; there are only 904, so it took them all, in
file order, as it does now.)

Fast mode without the reranker (the one trained without Seal-Tools is not rebuilt here), l = 0.05, through the
served path with the anchor of sweep.py. The fit rule, fixed before the run: the (l_later, alpha) of the grid with
the best mean over the three catalogs' later-step hit@1 (ties: smaller alpha, then smaller l_later). The fit on
API-Bank and ToolAlpaca alone, from the same grid, is reported beside it; Seal-Tools chooses nothing.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
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

_spec = importlib.util.spec_from_file_location("sweep", Path(__file__).parent / "sweep.py")
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)  # wraps the served path's `candidates` with the explained anchor
judge = sweep.judge
_spec = importlib.util.spec_from_file_location("new_requests", Path(__file__).parent / "new_requests.py")
new_requests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(new_requests)
new_seal_requests = new_requests.new_seal_requests

LEXICAL = 0.05
LATER_GRID = (0.1, 0.3, 0.7)
ALPHA_GRID = (0.0, 0.5, 1.0)
FIT = ("apibank", "toolalpaca", "bfcl")
JUDGED = new_requests.LABEL
EMBEDDER = "tools"


def curve(bench, queries) -> dict:
    steps = [s for q in queries for s in steps_of(q)]
    golds = [s.gold for s in steps]
    later = [i for i, s in enumerate(steps) if s.index > 0]
    stock, bank = benchmark_bank(bench, "stock"), benchmark_bank(bench, EMBEDDER)
    stock_items = [step_input(stock, s) for s in steps]
    hits = {m: judge.searched(stock, stock_items, golds, m) for m in ("bm25", "dense", "hybrid")}
    items = [step_input(bank, s) for s in steps]
    policy = judge.policy_for(SHIPPED_POLICY, bank)
    head = policy.head_values
    first = None
    for later_weight, alpha in itertools.product(LATER_GRID, ALPHA_GRID):
        policy._saved_values = dataclasses.replace(head, lexical=LEXICAL, lexical_later=later_weight)
        sweep.ALPHA = alpha
        if first is None:
            first = judge.selected(policy, bank, items, golds, "fast:norerank", 32)  # first steps move with neither
            row = list(first)
        else:
            row = list(first)
            judged = judge.selected(policy, bank, [items[i] for i in later], [golds[i] for i in later], "fast:norerank", 32)
            for i, h in zip(later, judged):
                row[i] = h
        hits[f"l_later={later_weight:g} alpha={alpha:g}"] = row
    sweep.ALPHA = 0.0
    return {"ids": [s.query.id for s in steps], "step_index": [s.index for s in steps], "per_item": hits}


def fit(curves: dict, names) -> tuple[float, float]:
    return max(
        itertools.product(LATER_GRID, ALPHA_GRID),
        key=lambda p: (
            sweep.mean(sweep.later_mean(curves[c], f"l_later={p[0]:g} alpha={p[1]:g}") for c in names),
            -p[1],
            -p[0],
        ),
    )


@click.command(help=__doc__)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    curves = {}
    for name in (*FIT, JUDGED):
        curves[name] = curve(*(new_seal_requests() if name == JUDGED else catalog_queries(name)))
        print(f"{name}: {time.perf_counter() - began:.0f} s", flush=True)
    fitted = {"API-Bank, ToolAlpaca and BFCL": fit(curves, FIT), "API-Bank and ToolAlpaca": fit(curves, FIT[:2])}
    names = [*FIT, JUDGED]
    counts = "; ".join(f"{n} {len(c['step_index'])} / {sum(i > 0 for i in c['step_index'])}" for n, c in curves.items())
    lines = [
        "# Without Seal-Tools: l_later and alpha, fast mode without the reranker (l = 0.05), per step",
        "",
        f"hit@1 of the later steps (all steps in brackets); steps / later steps: {counts}",
        "",
        "| method | " + " | ".join(names) + " | mean of the three fitting catalogs, later steps |",
        "|---|" + "---:|" * (len(names) + 1),
    ]
    methods = [f"l_later={lw:g} alpha={a:g}" for lw, a in itertools.product(LATER_GRID, ALPHA_GRID)]
    for m in [*methods, "bm25", "dense", "hybrid"]:
        cells = [f"{sweep.later_mean(curves[n], m):.3f} ({sweep.mean(curves[n]['per_item'][m]):.3f})" for n in names]
        fit_mean = sweep.mean(sweep.later_mean(curves[n], m) for n in FIT)
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {fit_mean:.3f} |")
    hits, groups = curves[JUDGED]["per_item"], curves[JUDGED]["ids"]
    paired = {}
    for label, (lw, a) in fitted.items():
        key = f"l_later={lw:g} alpha={a:g}"
        paired[label] = {
            "fitted": key,
            "minus bm25": paired_bootstrap(hits[key], hits["bm25"], groups=groups),
            "minus l_later=0.1 alpha=0": paired_bootstrap(hits[key], hits["l_later=0.1 alpha=0"], groups=groups),
        }
    lines += ["", f"Judged on {JUDGED}, all steps, paired 95% intervals over requests:"]
    for label, p in paired.items():
        for what in ("minus bm25", "minus l_later=0.1 alpha=0"):
            d = p[what]
            lines.append(f"- fitted on {label} ({p['fitted']}), {what}: {d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]")
    seconds = round(time.perf_counter() - began, 1)
    lines += ["", f"{seconds:.0f} s."]
    results = {"lexical": LEXICAL, "embedder": EMBEDDER, "fitted": fitted, "paired": paired, "seconds": seconds,
               "curves": curves}
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
