"""Reason mode (b = 0.2, fitted) minus fast mode on this record's 1,000 MetaTool requests, paired; and this fast
mode against 2026-12-07-loo-metatool-cfb-served's (the same policy, so it should match request for request).

    .venv/bin/python experiments/2026-12-07-loo-metatool-cfb-reason/paired.py
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.metrics import paired_bootstrap

HERE = Path(__file__).parent
SPEC = "metatool:all:1000"


def per_query(path: Path) -> dict:
    return json.loads((path / "results.json").read_text())["catalogs"][SPEC]["measures"]["per-query"]


now, served = per_query(HERE / "judge-1000"), per_query(HERE.parent / "2026-12-07-loo-metatool-cfb-served/judge-1000")
assert now["ids"] == served["ids"], "the two judgments read different requests"
fast, reason = now["per_item"]["fast"], now["per_item"]["reason"]
print(f"fast mode matches 2026-12-07-loo-metatool-cfb-served's on every request: {fast == served['per_item']['fast']}")
p = paired_bootstrap(reason, fast, groups=now["ids"])
print(f"reason minus fast: {100 * p['mean']:+.1f} [{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}]")
print(f"requests it gains: {sum(a > b for a, b in zip(reason, fast))}; loses: {sum(a < b for a, b in zip(reason, fast))}")
