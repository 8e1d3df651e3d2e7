"""Fit the abstention threshold on the scores `scores.py` wrote: the largest request-to-tool cosine threshold
(grid of 0.005) whose hit@1 cost on the answerable validation requests, averaged over the catalogs, is at
most 2 points; then, at it, each catalog's abstention precision and recall and the hit@1 it costs.

    python experiments/2026-12-01-abstention/fit.py runs/abstention-scores.json
"""

import json
import sys

import numpy as np

COST = 0.02


def at(data, threshold):
    answerable = np.array([r["cosine"] for r in data["answerable"]])
    hits = np.array([r["hit"] for r in data["answerable"]])
    none = np.array([r["cosine"] for r in data["no_tool"]])
    abstained_right, abstained_wrong = int((none < threshold).sum()), int((answerable < threshold).sum())
    return {
        "answerable": len(answerable),
        "no_tool": len(none),
        "hit@1": float(hits.mean()),
        "hit@1 abstaining": float((hits * (answerable >= threshold)).mean()),
        "abstention precision": abstained_right / max(1, abstained_right + abstained_wrong),
        "abstention recall": abstained_right / len(none),
        "answerable abstained": abstained_wrong / len(answerable),
    }


def main(path):
    results = json.load(open(path))
    grid = np.round(np.arange(0.0, 0.6, 0.005), 3)
    costs = [np.mean([at(d, t)["hit@1"] - at(d, t)["hit@1 abstaining"] for d in results.values()]) for t in grid]
    threshold = float(max(t for t, c in zip(grid, costs) if c <= COST))
    print(f"threshold {threshold} (largest with mean hit@1 cost <= {COST})\n")
    print("| catalog | answerable | no-tool | hit@1 | hit@1 abstaining | cost | precision | recall |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, data in results.items():
        r = at(data, threshold)
        print(
            f"| {name} | {r['answerable']} | {r['no_tool']} | {r['hit@1']:.3f} | {r['hit@1 abstaining']:.3f} | "
            f"{r['hit@1'] - r['hit@1 abstaining']:+.3f} | {r['abstention precision']:.3f} | {r['abstention recall']:.3f} |"
        )


if __name__ == "__main__":
    main(sys.argv[1])
