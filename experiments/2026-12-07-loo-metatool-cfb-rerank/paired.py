"""This record's policy against the one before (2026-12-07-loo-metatool-cfb-reason's: the reranker without
ComplexFuncBench), paired, on the seed-0 1,000 MetaTool requests and on the 1,000 fresh ones; and each against stock
dense. Writes paired.md.

    .venv/bin/python experiments/2026-12-07-loo-metatool-cfb-rerank/paired.py
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.metrics import paired_bootstrap

HERE = Path(__file__).parent
BEFORE = HERE.parent / "2026-12-07-loo-metatool-cfb-reason/judge-1000"  # fast and reason mode of the policy before
SEED0, FRESH = "metatool:all:1000", "metatool, 1,000 fresh requests"


def per_query(folder: Path, spec: str) -> dict:
    return json.loads((folder / "results.json").read_text())["catalogs"][spec]["measures"]["per-query"]


def interval(a: list, b: list, ids: list) -> str:
    p = paired_bootstrap(a, b, groups=ids)
    gained, lost = sum(x > y for x, y in zip(a, b)), sum(x < y for x, y in zip(a, b))
    return f"{100 * p['mean']:+.1f} [{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}] ({gained} gained, {lost} lost)"


def rows(label: str, before: dict, after: dict) -> list[str]:
    assert before["ids"] == after["ids"], f"{label}: the judgments read different requests"
    ids, b, a = after["ids"], before["per_item"], after["per_item"]
    out = []
    for mode in ("fast", "reason"):
        out.append(
            f"| {label} | {mode} | {sum(b[mode]) / len(ids):.3f} | {sum(a[mode]) / len(ids):.3f} "
            f"| {interval(a[mode], b[mode], ids)} "
            f"| {interval(b[mode], b['dense-stock'], ids)} | {interval(a[mode], a['dense-stock'], ids)} |"
        )
    return out


seed0, seed0_reason = per_query(HERE / "judge-1000", SEED0), per_query(HERE / "judge-1000-reason", SEED0)
assert seed0_reason["ids"] == seed0["ids"], "the fast and reason judgments read different requests"
seed0["per_item"]["reason"] = seed0_reason["per_item"]["reason"]
lines = [
    "Per request, hit@1; intervals are paired 95% bootstrap intervals, in points.",
    "",
    "| requests | mode | before | after | after minus before | before minus stock dense | after minus stock dense |",
    "|---|---|---:|---:|---|---|---|",
    *rows("seed-0 1,000", per_query(BEFORE, SEED0), seed0),
    *rows("fresh 1,000", per_query(HERE / "fresh-before", FRESH), per_query(HERE / "fresh-after", FRESH)),
]
fresh = per_query(HERE / "fresh-after", FRESH)
lines += ["", "Stock baselines on the fresh 1,000: " + ", ".join(f"{m} {fresh['hit@1'][m]:.3f}" for m in fresh["hit@1"])]
(HERE / "paired.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
