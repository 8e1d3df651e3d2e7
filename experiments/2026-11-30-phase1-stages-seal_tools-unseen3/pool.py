"""Pool the three Seal-Tools unseen-test stage samples: after GRPO minus untrained, hit@1, one query-clustered
paired bootstrap over all their steps (the plan in README.md, fixed before the third sample ran).

    python experiments/2026-11-30-phase1-stages-seal_tools-unseen3/pool.py            # reads hits.csv beside it
    python experiments/2026-11-30-phase1-stages-seal_tools-unseen3/pool.py --extract  # writes it from steps.csv

`hits.csv` (committed; the runs' `steps.csv` are not) holds each unseen-test step's hit@1 of the untrained
backbone, the Phase I policy (after GRPO; `shipped` in the first two runs, `grpo` in the third) and BM25.
Its `sample` column names each run by its folder's name without the date (experiments/2026-11-30-<sample>/).
"""

import csv
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent  # experiments/
SAMPLES = {
    "phase1-stages-seal_tools": "shipped",
    "phase1-stages-seal_tools-unseen": "shipped",
    "phase1-stages-seal_tools-unseen3": "grpo",
}
DATED = "2026-11-30-"  # the three folders' date prefix


def extract() -> None:
    rows = []
    for sample, trained in SAMPLES.items():
        hits = {}
        with open(RESULTS / (DATED + sample) / "steps.csv") as f:
            for r in csv.DictReader(f):
                if r["split"] == "unseen-test" and r["metric"] == "hit@1":
                    hits.setdefault(r["step"], {})[r["method"]] = r["value"]
        rows += [
            {"sample": sample, "step": step, "untrained": h["untrained"], "after_grpo": h[trained], "bm25": h["bm25"]}
            for step, h in hits.items()
        ]
    with open(HERE / "hits.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, ["sample", "step", "untrained", "after_grpo", "bm25"])
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    sys.path.insert(0, str(RESULTS.parent))
    from autotool.metrics import paired_bootstrap

    if "--extract" in sys.argv:
        extract()
    with open(HERE / "hits.csv") as f:
        rows = list(csv.DictReader(f))
    print("| sample | queries | steps | untrained | after GRPO | BM25 | after GRPO minus untrained [95%] |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for sample in [*SAMPLES, "pooled"]:
        part = [r for r in rows if sample in ("pooled", r["sample"])]
        groups = [f"{r['sample']}/{r['step'].split('#')[0]}" for r in part]
        column = lambda key: [float(r[key]) for r in part]
        d = paired_bootstrap(column("after_grpo"), column("untrained"), groups=groups)
        mean = lambda key: sum(column(key)) / len(part)
        print(
            f"| {sample} | {len(set(groups))} | {len(part)} | {mean('untrained'):.3f} | {mean('after_grpo'):.3f} "
            f"| {mean('bm25'):.3f} | {d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] |"
        )


if __name__ == "__main__":
    main()
