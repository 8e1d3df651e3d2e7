"""training.fit_later's choice of the shipped (l_later, explain), with ToolAlpaca's later steps that repeat a call
(which no setting can hit) left out of its mean. Reads the fit's every-step hits; runs nothing.

    python experiments/2026-12-06-repeated-tools/reachable_fit.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import catalog_queries, steps_of

FIT = Path(__file__).parents[1] / "2026-12-06-later-steps-shipped" / "fit" / "hits.json"


def main() -> None:
    hits = json.loads(FIT.read_text())
    reachable = {}
    for spec, record in hits.items():
        _, queries = catalog_queries(spec)
        later = [s for q in queries for s in steps_of(q) if s.index > 0]
        assert [s.query.id for s in later] == record["ids"], f"{spec}: not the fit's steps"
        reachable[spec] = [i for i, s in enumerate(later) if not s.repeats_a_call]
    rows = []
    for point in hits[next(iter(hits))]["hits"]:
        means = {
            spec: sum(r["hits"][point][i] for i in reachable[spec]) / len(reachable[spec]) for spec, r in hits.items()
        }
        l_later, explain = map(float, point.split(","))
        rows.append((-sum(means.values()) / len(means), explain, l_later, point, means))
    rows.sort()  # best mean first; ties to the smaller explain, then the smaller l_later (the fit's rule)
    print("| (l_later, explain) | " + " | ".join(f"{s} ({len(i)})" for s, i in reachable.items()) + " | mean |")
    print("|---|" + "---:|" * (len(reachable) + 1))
    for neg_mean, _, _, point, means in rows[:5]:
        print(f"| ({point}) | " + " | ".join(f"{m:.3f}" for m in means.values()) + f" | {-neg_mean:.3f} |")


if __name__ == "__main__":
    main()
