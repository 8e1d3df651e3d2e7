"""This record's 1,000 MetaTool requests against 2026-12-06-loo-metatool-1000's, the same run but for the embedder
(without ComplexFuncBench there), paired over requests, per request and per step; and a check that the embedder
trained again here scores each request as 2026-12-07-complexfuncbench-embedder's did.

    python experiments/2026-12-07-loo-metatool-cfb-served/paired.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))

from autotool.metrics import paired_bootstrap  # noqa: E402

SPEC = "metatool:all:1000"
EXPERIMENTS = HERE.parent
BEFORE = EXPERIMENTS / "2026-12-06-loo-metatool-1000/judge-1000/results.json"
DENSE = EXPERIMENTS / "2026-12-07-complexfuncbench-embedder/dense-with-cfb/results.json"
METHODS = ["dense-tuned", "fast:norerank", "fast"]


def measures(path: Path) -> dict:
    return json.loads(path.read_text())["catalogs"][SPEC]["measures"]


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def main() -> None:
    now, before = measures(HERE / "judge-1000/results.json"), measures(BEFORE)
    dense = measures(DENSE)["per-query"]
    same = dense["ids"] == now["per-query"]["ids"]
    same = same and dense["per_item"]["dense-tuned"] == now["per-query"]["per_item"]["dense-tuned"]
    lines = [
        "# With ComplexFuncBench in the embedder minus without, on the same 1,000 MetaTool requests",
        "",
        f"The embedder trained again here scores every request as 2026-12-07-complexfuncbench-embedder's: {same}.",
        "",
        "| measure | method | without (2026-12-06) | with (this run) | with minus without (gained, lost) |",
        "|---|---|---:|---:|---|",
    ]
    results = {"dense_reproduces": same}
    for m in ("per-query", "per-step"):
        a_m, b_m = now[m], before[m]
        assert a_m["ids"] == b_m["ids"], f"{m}: not the same items"
        assert a_m["per_item"]["dense-stock"] == b_m["per_item"]["dense-stock"], f"{m}: stock dense differs"
        for method in METHODS:
            a, b = a_m["per_item"][method], b_m["per_item"][method]
            p = paired_bootstrap(a, b, groups=a_m["ids"])
            gained, lost = sum(x > y for x, y in zip(a, b)), sum(x < y for x, y in zip(a, b))
            results[f"{m} {method}"] = {"without": mean(b), "with": mean(a), "paired": p}
            lines.append(
                f"| {m} ({len(a)}) | {method} | {mean(b):.3f} | {mean(a):.3f} "
                f"| {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}] ({gained}, {lost}) |"
            )
    (HERE / "paired.json").write_text(json.dumps(results, indent=1) + "\n")
    (HERE / "paired.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
