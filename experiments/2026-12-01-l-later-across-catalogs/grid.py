"""Fast-mode per-step hit@1 of the shipped policy with the head's later-step lexical weight `l_later` on a grid,
on validation data of four catalogs: the val splits of Seal-Tools and MetaTool (training catalogs' held-out
tools) and every request of API-Bank and ToolAlpaca (foreign validation). Fast mode with W = 0 and no
arguments runs no language model, so the whole grid takes minutes; reason mode is not measured.

    python experiments/2026-12-01-l-later-across-catalogs/grid.py > experiments/2026-12-01-l-later-across-catalogs/grid.txt
"""

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, load_benchmark, load_split, select_queries, step_input, steps_of
from autotool.metrics import selection_metrics
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY, select_steps

GRID = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
CATALOGS = ("seal_tools", "metatool", "apibank", "toolalpaca")

table = {}
for name in CATALOGS:
    bench = load_benchmark(name)
    queries = select_queries(bench, load_split(bench, 0), "val") if name in ("seal_tools", "metatool") else bench.queries
    steps = [s for q in queries for s in steps_of(q)]
    bank = benchmark_bank(bench)
    policy = Policy.load(SHIPPED_POLICY, bank)
    items = [step_input(bank, s) for s in steps]
    for value in GRID:
        with torch.no_grad():
            policy.head.lexical_later.fill_(value)
        hits = []
        for start in range(0, len(items), 64):
            chosen = select_steps(policy, bank, items[start : start + 64], k=10, mode="fast", arguments=False, min_cosine=0.0)
            for selection, step in zip(chosen, steps[start : start + 64]):
                ranking = [t.name for t, _ in selection.candidates]
                hits.append(selection_metrics(ranking, step.gold, [p for _, p in selection.candidates])["hit@1"])
        later = [h for h, s in zip(hits, steps) if s.index > 0]
        table[name, value] = (float(np.mean(hits)), float(np.mean(later)) if later else float("nan"), len(hits), len(later))
    print(f"{name}: l = {float(policy.head.lexical):.2f}", file=sys.stderr)

print("per-step hit@1, fast mode (all steps / later steps); shipped l_later = 0.7\n")
print("| l_later | " + " | ".join(f"{n} ({table[n, GRID[0]][2]} / {table[n, GRID[0]][3]})" for n in CATALOGS) + " | mean of all |")
print("|---:|" + "---|" * (len(CATALOGS) + 1))
for value in GRID:
    cells = [f"{table[n, value][0]:.3f} / {table[n, value][1]:.3f}" for n in CATALOGS]
    print(f"| {value} | " + " | ".join(cells) + f" | {np.mean([table[n, value][0] for n in CATALOGS]):.3f} |")
