"""The shipped policy's later-step settings with the anchor's explain-away: (l_later, alpha) over a grid, fast mode
as served (the shipped reranker) and without it, per step. Nothing is fitted: a map for the next decision.

    OMP_NUM_THREADS=2 python experiments/2026-12-06-dense-explain-away/shipped_grid.py \\
        --out experiments/2026-12-06-dense-explain-away/shipped-grid

The shipped head (l = 0.1, l_later = 0.7, calibrated on the training catalogs' val) costs API-Bank's later steps
(0.538 in fast mode without the reranker against 0.717 at l_later = 0.1) and suits Seal-Tools'. sweep.py found
alpha = 0 best for the shipped head on API-Bank and ToolAlpaca at l_later = 0.7. Does a lower l_later with
alpha keep Seal-Tools val's later steps while lifting API-Bank's? Catalogs: API-Bank, ToolAlpaca (foreign
validation) and Seal-Tools val (the shipped head's calibration split); the `tools` embedder, as served.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import json
import sys
from pathlib import Path

import click

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("sweep", HERE / "sweep.py")
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)
judge = sweep.judge
sys.path.insert(0, str(HERE.parents[1]))

from autotool.benchmarks import benchmark_bank, catalog_queries, step_input, steps_of  # noqa: E402
from autotool.select import SHIPPED_POLICY  # noqa: E402

CATALOGS = ("apibank", "toolalpaca", "seal_tools:val")
LATER_GRID = (0.1, 0.3, 0.7)
ALPHA_GRID = (0.0, 0.5, 1.0)
MODES = ("fast", "fast:norerank")


@click.command(help=__doc__)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    table = {}
    for spec in CATALOGS:
        bench, queries = catalog_queries(spec)
        steps = [s for q in queries for s in steps_of(q) if s.index > 0]
        golds = [s.gold for s in steps]
        bank = benchmark_bank(bench, "tools")
        items = [step_input(bank, s) for s in steps]
        policy = judge.policy_for(SHIPPED_POLICY, bank)
        head = policy.head_values
        for mode, later, alpha in itertools.product(MODES, LATER_GRID, ALPHA_GRID):
            policy._saved_values = dataclasses.replace(head, lexical_later=later)
            sweep.ALPHA = alpha
            table.setdefault(f"{mode} l_later={later:g} alpha={alpha:g}", {})[spec] = judge.selected(
                policy, bank, items, golds, mode, 32
            )
        sweep.ALPHA = 0.0
        print(f"{spec}: {len(steps)} later steps", flush=True)
    lines = [
        "# The shipped head's later-step settings, hit@1 of the later steps (nothing fitted)",
        "",
        "| mode, l_later, alpha | " + " | ".join(CATALOGS) + " | mean of API-Bank and ToolAlpaca |",
        "|---|" + "---:|" * (len(CATALOGS) + 1),
    ]
    for key, by in table.items():
        cells = [f"{sweep.mean(by[s]):.3f}" for s in CATALOGS]
        lines.append(f"| {key} | " + " | ".join(cells) + f" | {sweep.mean(sweep.mean(by[s]) for s in CATALOGS[:2]):.3f} |")
    (out / "results.json").write_text(json.dumps(table) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
