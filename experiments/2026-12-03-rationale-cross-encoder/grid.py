"""Hit@1 of log p + c1 s(request, tool) + c2 s(rationale, tool) over the probe's best 5, per catalog and mean.

    python experiments/2026-12-03-rationale-cross-encoder/grid.py scores.json
"""
import json
import sys

import numpy as np

d = json.load(open(sys.argv[1]))
G = [0, 0.5, 1, 2, 3, 4]
def hit(rows, base, c1, c2):
    h = []
    for r in rows:
        x = r[base]
        sc = np.log(np.maximum(np.array(x["p"]), 1e-30)) + c1 * np.array(x["s_req"]) + c2 * np.array(x["s_rat"])
        h.append(float(x["candidates"][int(np.argmax(sc))] in r["gold"]))
    return np.array(h)
for base in ["fast", "reason"]:
    print("base", base)
    print("c1\\c2 " + " ".join(f"{c:>17g}" for c in G))
    for c1 in G:
        cells = []
        for c2 in G:
            m = [hit(rows, base, c1, c2).mean() for rows in d.values()]
            cells.append(f"{m[0]:.3f}/{m[1]:.3f}={np.mean(m):.3f}")
        print(f"{c1:>5g} " + " ".join(cells))
