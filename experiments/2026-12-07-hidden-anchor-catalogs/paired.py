"""Reads probe.py's results.json of both policies and writes paired.md: on each judged catalog, fast mode with W h at
the validation-fitted s against s = 0 (fast mode as served), paired over the same requests.

    .venv/bin/python experiments/2026-12-07-hidden-anchor-catalogs/paired.py
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.metrics import paired_bootstrap

HERE = Path(__file__).parent
FOLDERS = ("shipped", "no-metatool")
VALIDATION = ("apibank", "toolalpaca")


def fitted(judged: dict) -> str:
    """The s probe.py fits: the best mean hit@1 over the validation catalogs, ties to the smaller s."""
    scales = judged[VALIDATION[0]][0]["hit"]
    mean = {s: sum(sum(i["hit"][s] for i in judged[c]) / len(judged[c]) for c in VALIDATION) / 2 for s in scales}
    return max(scales, key=lambda s: (round(mean[s], 9), -float(s)))


lines = [
    "Per request, hit@1; fitted s minus s = 0, paired 95% bootstrap intervals in points (requests gained, lost).",
    "",
    "| policy | catalog | s = 0 | fitted s | hit@1 | minus s = 0 |",
    "|---|---|---:|---:|---:|---|",
]
for folder in FOLDERS:
    judged = json.loads((HERE / folder / "results.json").read_text())["judged"]
    s = fitted(judged)
    for spec, items in judged.items():
        ids = [item["id"] for item in items]
        mine, zero = [item["hit"][s] for item in items], [item["hit"]["0"] for item in items]
        p = paired_bootstrap(mine, zero, groups=ids)
        gained, lost = sum(a > b for a, b in zip(mine, zero)), sum(a < b for a, b in zip(mine, zero))
        lines.append(
            f"| {folder} | {spec} | {sum(zero) / len(ids):.3f} | {s} | {sum(mine) / len(ids):.3f} | "
            f"{100 * p['mean']:+.1f} [{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}] ({gained}, {lost}) |"
        )
(HERE / "paired.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
