"""Reason mode at b = 0.2 (judge-1000-b02) minus fast mode (judge-1000) on the same 1,000 MetaTool requests, paired.

    .venv/bin/python experiments/2026-12-07-loo-metatool-reason/paired.py
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.metrics import paired_bootstrap

HERE = Path(__file__).parent
SPEC = "metatool:all:1000"


def per_query(folder: str) -> dict:
    return json.loads((HERE / folder / "results.json").read_text())["catalogs"][SPEC]["measures"]["per-query"]


fast, b02 = per_query("judge-1000"), per_query("judge-1000-b02")
assert fast["ids"] == b02["ids"], "the two judgments read different requests"
before, after = fast["per_item"]["fast"], b02["per_item"]["reason"]
p = paired_bootstrap(after, before, groups=fast["ids"])
print(f"reason (b = 0.2) minus fast: {100 * p['mean']:+.1f} [{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}]")
print(f"requests it gains: {sum(a > b for a, b in zip(after, before))}; loses: {sum(a < b for a, b in zip(after, before))}")
print(f"reason (b = 0) and fast differ on {sum(a != b for a, b in zip(fast['per_item']['reason'], before))} requests")
