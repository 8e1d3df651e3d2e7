"""Reads probe.py's results.json files and writes paired.md: for each policy, each rationale vector's b fitted on
API-Bank and ToolAlpaca (the best mean, ties to the smaller b, as `training.fit_rationale` fits it) and the
declared comparison with `greedy`; then, for the policy trained without MetaTool, each vector at its fitted b on
the two MetaTool samples, against greedy and against stock dense (per request items of the served judgments of
2026-12-07-loo-metatool-cfb-reason and 2026-12-07-loo-metatool-cfb-rerank, matched by request id). It also checks
the replay: greedy at the served b must choose as reason mode as served did.

    .venv/bin/python experiments/2026-12-07-sampled-rationales/paired.py
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.metrics import paired_bootstrap
from training.fit_rationale import GRID

HERE = Path(__file__).parent
VECTORS = ("greedy", "sampled", "both")
VALIDATION = ("apibank", "toolalpaca")
SERVED = {  # the served judgments of the same policy on the MetaTool samples: (folder, catalog label)
    "metatool:all:1000": (HERE.parent / "2026-12-07-loo-metatool-cfb-reason/judge-1000", "metatool:all:1000"),
    "metatool-fresh": (
        HERE.parent / "2026-12-07-loo-metatool-cfb-rerank/fresh-before",
        "metatool, 1,000 fresh requests",
    ),
}
SERVED_B = json.loads((HERE.parent / "2026-12-07-loo-metatool-cfb-reason/policy-manifest.json").read_text())[
    "rationale_fitted"
]["b"]  # the policy's b as served


def load(folder: str) -> dict:
    return json.loads((HERE / folder / "results.json").read_text())


def hits(items: list, key: str) -> list[float]:
    return [item["hit"][key] for item in items]


def fitted(results: dict, vector: str) -> tuple[float, float]:
    """The b of the grid with the best validation mean (ties to the smaller), and that mean."""
    mean = {b: np.mean([np.mean(hits(results[c], f"{vector}@{b:g}")) for c in VALIDATION]) for b in GRID}
    b = max(GRID, key=lambda x: (round(float(mean[x]), 9), -x))
    return b, float(mean[b])


def interval(a: list, b: list, ids: list) -> str:
    p = paired_bootstrap(a, b, groups=ids)
    gained, lost = sum(x > y for x, y in zip(a, b)), sum(x < y for x, y in zip(a, b))
    return f"{100 * p['mean']:+.1f} [{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}] ({gained}, {lost})"


lines = ["Per request, hit@1. Intervals: paired 95% bootstrap, in points (requests gained, lost).", ""]
fits = {}
for folder, label in (("no-metatool-validation", "without MetaTool"), ("shipped-validation", "shipped")):
    results = load(folder)
    fits[folder] = {v: fitted(results, v) for v in VECTORS}
    greedy_b, greedy_mean = fits[folder]["greedy"]
    lines += [
        f"## {label} ({folder})",
        "",
        "| vector | fitted b | API-Bank | ToolAlpaca | mean | mean minus greedy's | API-Bank minus greedy | "
        "ToolAlpaca minus greedy |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for vector in VECTORS:
        b, mean = fits[folder][vector]
        cells = []
        for catalog in VALIDATION:
            items = results[catalog]
            ids = [item["id"] for item in items]
            mine, theirs = hits(items, f"{vector}@{b:g}"), hits(items, f"greedy@{greedy_b:g}")
            cells.append((np.mean(mine), interval(mine, theirs, ids)))
        lines.append(
            f"| {vector} | {b:g} | {cells[0][0]:.3f} | {cells[1][0]:.3f} | {mean:.4f} | "
            f"{100 * (mean - greedy_mean):+.2f} | {cells[0][1]} | {cells[1][1]} |"
        )
    lines.append("")

metatool = load("no-metatool-metatool")
lines += [
    "## MetaTool, left out of the policy trained without MetaTool (chooses nothing)",
    "",
    "Each vector at the b its validation fit gives; fast mode is b = 0.",
    "",
    "| requests | vector (b) | hit@1 | minus greedy | minus stock dense |",
    "|---|---|---:|---|---|",
]
for spec in ("metatool:all:1000", "metatool-fresh"):
    items = metatool[spec]
    ids = [item["id"] for item in items]
    folder, label = SERVED[spec]
    served = json.loads((folder / "results.json").read_text())["catalogs"][label]["measures"]["per-query"]
    by_id = {i: n for n, i in enumerate(served["ids"])}
    assert sorted(by_id) == sorted(ids), f"{spec}: the probe and the served judgment read different requests"
    dense = [served["per_item"]["dense-stock"][by_id[i]] for i in ids]
    reason = [served["per_item"]["reason"][by_id[i]] for i in ids]
    differ = sum(x != y for x, y in zip(hits(items, f"greedy@{SERVED_B:g}"), reason))
    greedy = hits(items, f"greedy@{fits['no-metatool-validation']['greedy'][0]:g}")
    for vector, b in [("fast", 0.0)] + [(v, fits["no-metatool-validation"][v][0]) for v in VECTORS]:
        mine = hits(items, f"{'greedy' if vector == 'fast' else vector}@{b:g}")
        lines.append(
            f"| {spec} | {vector} ({b:g}) | {np.mean(mine):.3f} | {interval(mine, greedy, ids)} | "
            f"{interval(mine, dense, ids)} |"
        )
    lines.append(f"| {spec} | replay check | greedy at b = {SERVED_B:g} differs from the served reason mode on "
                 f"{differ} of {len(ids)} requests | | |")
(HERE / "paired.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
