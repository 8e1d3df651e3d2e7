"""After the later-step fit minus before it, step by step, for each mode: on every step and on the later steps alone
(a step after earlier calls, `#index` > 0), where the two weights act.

    python experiments/2026-12-06-metatool-within-later/before_after.py experiments/2026-12-06-metatool-within-later/tuned

Reads the run's steps.csv (methods `fast`, `reason` and `fast_before`, `reason_before`). Paired 95% bootstrap
intervals, requests resampled whole (`autotool.metrics.paired_bootstrap`). Prints a Markdown table.
"""

import csv
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[2]))
from autotool.metrics import paired_bootstrap

hits = defaultdict(dict)
with open(Path(sys.argv[1], "steps.csv")) as f:
    for row in csv.DictReader(f):
        if row["metric"] == "hit@1":
            hits[row["method"]][row["step"]] = float(row["value"])

print("| mode | steps | before | after | after minus before |")
print("|---|---|---:|---:|---|")
for mode in ("fast", "reason"):
    after, before = hits[mode], hits[f"{mode}_before"]
    if sorted(after) != sorted(before):
        raise SystemExit(f"{mode}: before and after judged different steps")
    every = sorted(after)
    for label, steps in (("every step", every), ("later steps", [s for s in every if not s.endswith("#0")])):
        a, b = [after[s] for s in steps], [before[s] for s in steps]
        p = paired_bootstrap(a, b, groups=[s.rpartition("#")[0] for s in steps])
        print(
            f"| {mode} | {label} ({len(steps)}) | {np.mean(b):.3f} | {np.mean(a):.3f} | "
            f"{100 * p['mean']:+.1f} [{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}] |"
        )
