"""After minus before, step by step, for every catalog and mode that run.sh judged both ways; and each side
minus the best stock baseline (the judge's own pairing). Prints a markdown table.

    python experiments/2026-12-06-later-steps-shipped/paired.py experiments/2026-12-06-later-steps-shipped
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.metrics import paired_bootstrap


def interval(p: dict) -> str:
    return f"{100 * p['mean']:+.1f} [{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}]"


def main(folder: Path) -> None:
    print("| catalog (steps) | mode | before | after | after minus before | best stock baseline | after minus it |")
    print("|---|---|---:|---:|---|---:|---|")
    for run in sorted(p.name for p in (folder / "after").iterdir()):
        before = json.loads((folder / "before" / run / "results.json").read_text())["catalogs"]
        after = json.loads((folder / "after" / run / "results.json").read_text())["catalogs"]
        for spec, a in after.items():
            b = before[spec]
            m, n = a["measures"]["per-step"], b["measures"]["per-step"]
            assert m["ids"] == n["ids"], f"{spec}: before and after judged different steps"
            best = m["best_stock_baseline"]
            for mode in [x for x in m["per_item"] if x in ("fast", "reason")]:
                diff = paired_bootstrap(m["per_item"][mode], n["per_item"][mode], groups=m["ids"])
                print(
                    f"| {spec} ({a['steps']}) | {mode} | {n['hit@1'][mode]:.3f} | {m['hit@1'][mode]:.3f} | "
                    f"{interval(diff)} | {best} {m['hit@1'][best]:.3f} | {interval(m['paired'][mode])} |"
                )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
