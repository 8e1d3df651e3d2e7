"""Pair two evaluations of the same steps: every method's hit@1 minus the best stock baseline's, per step.

    python experiments/2026-12-03-metatool-within-catalog/paired.py STOCK_RUN TUNED_RUN

STOCK_RUN holds BM25, dense and hybrid on the stock embedder; TUNED_RUN the same requests on another embedder.
Reads each run's steps.csv; refuses runs whose steps differ. Paired 95% bootstrap intervals, queries resampled
whole (`autotool.metrics.paired_bootstrap`, 2,000 resamples, seed 0). Prints a Markdown table.
"""

import csv
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[2]))
from autotool.metrics import paired_bootstrap


def hits(run: str) -> dict[str, dict[str, float]]:
    out = defaultdict(dict)
    with open(Path(run, "steps.csv")) as f:
        for row in csv.DictReader(f):
            if row["metric"] == "hit@1":
                out[row["method"]][row["step"]] = float(row["value"])
    return out


stock, tuned = hits(sys.argv[1]), hits(sys.argv[2])
steps = sorted(next(iter(stock.values())))
for method, items in {**stock, **tuned}.items():
    if sorted(items) != steps:
        raise SystemExit(f"{method}: its steps differ from the stock run's; not the same sample")
groups = [s.rpartition("#")[0] for s in steps]
means = {f"{m} (stock)": np.mean([stock[m][s] for s in steps]) for m in stock}
best = max(stock, key=lambda m: np.mean([stock[m][s] for s in steps]))
print(f"{len(steps)} steps of {len(set(groups))} requests; best stock baseline: {best} {means[best + ' (stock)']:.3f}\n")
print("| method | hit@1 | minus best stock baseline |")
print("|---|---:|---|")
for m in stock:
    print(f"| {m}, stock | {means[m + ' (stock)']:.3f} | |")
for m, items in tuned.items():
    a = [items[s] for s in steps]
    p = paired_bootstrap(a, [stock[best][s] for s in steps], groups=groups)
    print(f"| {m} | {np.mean(a):.3f} | {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}] |")
