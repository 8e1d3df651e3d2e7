"""paired.py's pairing on the later steps alone (a request's steps are consecutive in the judge's per_item lists,
first step first), where the two weights act; first steps are the same before and after by construction.

    python experiments/2026-12-06-later-steps-shipped/later_only.py experiments/2026-12-06-later-steps-shipped
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.metrics import paired_bootstrap


def main(folder: Path) -> None:
    print("| catalog (later steps) | mode | first steps, before = after | later, before | later, after | after minus before |")
    print("|---|---|---:|---:|---:|---|")
    for run in sorted(p.name for p in (folder / "after").iterdir()):
        before = json.loads((folder / "before" / run / "results.json").read_text())["catalogs"]
        after = json.loads((folder / "after" / run / "results.json").read_text())["catalogs"]
        for spec, a in after.items():
            m, n = a["measures"]["per-step"], before[spec]["measures"]["per-step"]
            ids = m["ids"]
            later = [i for i in range(len(ids)) if i > 0 and ids[i] == ids[i - 1]]
            first = [i for i in range(len(ids)) if i not in set(later)]
            for mode in [x for x in m["per_item"] if x in ("fast", "reason")]:
                b, f = n["per_item"][mode], m["per_item"][mode]
                assert [b[i] for i in first] == [f[i] for i in first], f"{spec} {mode}: a first step changed"
                p = paired_bootstrap([f[i] for i in later], [b[i] for i in later], groups=[ids[i] for i in later])
                mean = lambda xs, at: sum(xs[i] for i in at) / len(at)
                print(
                    f"| {spec} ({len(later)}) | {mode} | {mean(f, first):.3f} | {mean(b, later):.3f} | "
                    f"{mean(f, later):.3f} | {100 * p['mean']:+.1f} [{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}] |"
                )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
