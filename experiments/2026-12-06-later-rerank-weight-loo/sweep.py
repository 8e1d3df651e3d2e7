"""The reranker's weight at later steps, c_later, fitted on the foreign validation catalogs' later steps, judged per
step on Seal-Tools without Seal-Tools.

    OMP_NUM_THREADS=2 python experiments/2026-12-06-later-rerank-weight-loo/sweep.py runs/refit-policy \\
        --out experiments/2026-12-06-later-rerank-weight-loo

POLICY is 2026-12-06-later-weight-loo's policy folder (the leave-out-Seal-Tools recipe: l = 0.05, l_later = 0.1,
the reranker trained on MetaTool and BFCL, c = 1 fitted per request on API-Bank and ToolAlpaca). c was fitted
where every step is a first step; this sweep keeps c = 1 at first steps and gives the later steps (those after
earlier calls) their own weight from a grid. Fast mode runs through the served path (`select_steps(...,
mode="fast", arguments=False)`) with the `tools` embedder on every later step of API-Bank and ToolAlpaca
(validation; python -m eval's per-step protocol) and of Seal-Tools' 1,000 requests (seed 0, those of
2026-12-05-loo-seal-per-step). c_later is fitted on the mean of the two validation catalogs' later-step hit@1
(ties go to c = 1, the weight as it is, then to the smaller); Seal-Tools chooses nothing. First steps are judged
once, with c = 1, to give every step's figure.
"""

from __future__ import annotations

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

_spec = importlib.util.spec_from_file_location("judge", ROOT / "experiments/2026-12-01-three-catalogs/judge.py")
judge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(judge)

GRID = (0.0, 0.25, 0.5, 1.0, 2.0)
VALIDATION = ("apibank", "toolalpaca")
JUDGED = "seal_tools:all:1000"
EMBEDDER = "tools"


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def curve(spec: str, folder: Path) -> dict:
    """hit@1 of `spec`'s steps: BM25 on every step, fast mode at c = 1 on first steps and at each c of GRID on
    later ones."""
    bench, queries = catalog_queries(spec)
    steps = [s for q in queries for s in steps_of(q)]
    stock, bank = benchmark_bank(bench, "stock"), benchmark_bank(bench, EMBEDDER)
    golds = [s.gold for s in steps]
    bm25 = judge.searched(stock, [step_input(stock, s) for s in steps], golds, "bm25")
    policy = judge.policy_for(folder, bank)
    items = [step_input(bank, s) for s in steps]
    first = [i for i, s in enumerate(steps) if s.index == 0]
    later = [i for i, s in enumerate(steps) if s.index > 0]
    fast = {"first": judge.selected(policy, bank, [items[i] for i in first], [golds[i] for i in first], "fast", 32)}
    for weight in GRID:
        policy.info["rerank"]["weight"] = weight
        fast[f"c_later={weight:g}"] = judge.selected(
            policy, bank, [items[i] for i in later], [golds[i] for i in later], "fast", 32
        )
    policy.info["rerank"]["weight"] = 1.0
    return {"ids": [s.query.id for s in steps], "first": first, "later": later, "bm25": bm25, "fast": fast}


def every_step(c: dict, weight: float) -> list[float]:
    """Fast mode's hit on every step, in step order, with c_later = `weight`."""
    hits = [0.0] * len(c["ids"])
    for i, h in zip(c["first"], c["fast"]["first"]):
        hits[i] = h
    for i, h in zip(c["later"], c["fast"][f"c_later={weight:g}"]):
        hits[i] = h
    return hits


@click.command(help=__doc__)
@click.argument("policy_folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(policy_folder: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    curves = {}
    for spec in (*VALIDATION, JUDGED):
        curves[spec] = curve(spec, policy_folder)
        print(f"{spec}: {time.perf_counter() - began:.0f} s", flush=True)
    val = {w: mean([mean(curves[v]["fast"][f"c_later={w:g}"]) for v in VALIDATION]) for w in GRID}
    fitted = max(GRID, key=lambda w: (round(val[w], 9), w == 1.0, -w))
    specs = [*VALIDATION, JUDGED]
    lines = [
        "# the reranker's weight at later steps, c_later (c = 1 at first steps), fast mode, per step",
        "",
        f"Policy `{policy_folder}`, embedder `{EMBEDDER}`. hit@1 of the later steps (every step in brackets); "
        + "later steps / steps: "
        + "; ".join(f"{s} {len(curves[s]['later'])} / {len(curves[s]['ids'])}" for s in specs),
        "",
        "| c_later | " + " | ".join(specs) + " | validation mean, later steps |",
        "|---:|" + "---:|" * (len(specs) + 1),
    ]
    for w in GRID:
        label = f"**{w:g}**" if w == fitted else f"{w:g}"
        cells = [
            f"{mean(curves[s]['fast'][f'c_later={w:g}']):.3f} ({mean(every_step(curves[s], w)):.3f})" for s in specs
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {val[w]:.3f} |")
    bm25 = [
        f"{mean([curves[s]['bm25'][i] for i in curves[s]['later']]):.3f} ({mean(curves[s]['bm25']):.3f})" for s in specs
    ]
    lines.append("| BM25 | " + " | ".join(bm25) + " | |")
    c = curves[JUDGED]
    paired = {
        "fitted minus c_later = 1": paired_bootstrap(every_step(c, fitted), every_step(c, 1.0), groups=c["ids"]),
        "fitted minus bm25": paired_bootstrap(every_step(c, fitted), c["bm25"], groups=c["ids"]),
    }
    lines += ["", f"Fitted c_later = {fitted:g}. On {JUDGED}, every step, paired 95% intervals over requests:"]
    lines += [f"- {k}: {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]" for k, p in paired.items()]
    seconds = round(time.perf_counter() - began, 1)
    lines += ["", f"{seconds:.0f} s."]
    results = {"policy": str(policy_folder), "embedder": EMBEDDER, "grid": GRID, "fitted_c_later": fitted,
               "validation_mean": {f"{w:g}": v for w, v in val.items()}, "paired": paired, "seconds": seconds,
               "curves": curves}
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
