"""Stage differences on MetaTool, each sample and combined by inverse variance (README.md here).

    python experiments/2026-11-30-phase1-stages-seen3/combine.py [seen-test] [unseen-test]

Reads the paired hit@1 differences of the three disjoint stage samples from their results.json (the first two
runs' steps.csv are not kept), takes each standard error as the 95% interval's width over 3.92, and prints each
sample's difference and the combined one. The policy after GRPO is `shipped` in the first two runs, `grpo` here.
"""

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1]  # experiments/
SAMPLES = ["2026-11-30-phase1-stages", "2026-11-30-phase1-stages-disjoint", "2026-11-30-phase1-stages-seen3"]
RENAMED = {"grpo": "shipped"}  # the name of the after-GRPO policy in the first two samples


def paired(sample: str, split: str) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(A, B) -> hit@1 of A minus B with its interval, both orders, from one run's results.json split."""
    splits = json.loads((RESULTS / sample / "results.json").read_text())["splits"]
    out = {}
    for row in (r for s in splits if s["split"] == split for r in s["paired"] if r["metric"] == "hit@1"):
        mean, lo, hi = row["mean"], row["ci_low"], row["ci_high"]
        out[row["a"], row["b"]] = (mean, lo, hi)
        out[row["b"], row["a"]] = (-mean, -hi, -lo)
    return out


def main(splits: list[str]) -> None:
    for split in splits:
        for a, b in [
            ("sft", "untrained"),
            ("grpo", "untrained"),
            ("grpo", "sft"),
            ("rank", "untrained"),
            ("rank", "grpo"),
        ]:
            rows = []
            for sample in SAMPLES:
                pairs = paired(sample, split)
                key = (a, b) if sample == SAMPLES[-1] else (RENAMED.get(a, a), RENAMED.get(b, b))
                if key in pairs:
                    rows.append((sample, *pairs[key]))
            if not rows:
                continue
            weights = [(3.92 / (hi - lo)) ** 2 for _, _, lo, hi in rows]
            mean = sum(w * m for w, (_, m, _, _) in zip(weights, rows)) / sum(weights)
            half = 1.96 * sum(weights) ** -0.5
            each = "; ".join(f"{s} {m:+.3f} [{lo:+.3f}, {hi:+.3f}]" for s, m, lo, hi in rows)
            print(f"{split} {a} - {b}: {each} | combined {mean:+.3f} [{mean - half:+.3f}, {mean + half:+.3f}]")


if __name__ == "__main__":
    main(sys.argv[1:] or ["seen-test"])
