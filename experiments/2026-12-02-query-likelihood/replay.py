"""The table of this record from the saved scores (score.py's JSON files here): hit@1 of fast mode reranked by
`log p_fast + c * (ql - mean ql)` for each c, and the paired 95% bootstrap interval against fast mode (c = 0).

    python experiments/2026-12-02-query-likelihood/replay.py > experiments/2026-12-02-query-likelihood/replay.txt
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.metrics import paired_bootstrap

HERE = Path(__file__).parent
GRID = (0.5, 1.0, 2.0, 4.0, 8.0, 1000.0)


def hits(rows, c: float) -> list[float]:
    out = []
    for r in rows:
        ql = np.array(r["ql"])
        score = np.log(np.maximum(r["p_fast"], 1e-12)) + c * (ql - ql.mean())
        out.append(float(r["candidates"][int(np.argmax(score))] in r["gold"]))
    return out


for path in sorted(HERE.glob("*-*.json")):
    saved = json.loads(path.read_text())
    rows = saved["rows"]
    fast = hits(rows, 0.0)
    print(f"{path.stem} ({len(rows)} requests, {saved['seconds']:.0f} s): fast {np.mean(fast):.3f}")
    for c in GRID:
        reranked = hits(rows, c)
        p = paired_bootstrap(reranked, fast, groups=[r["id"] for r in rows])
        print(f"  c={c:g}: {np.mean(reranked):.3f}, minus fast {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]")
