"""Fast mode reranked at one c against the best stock baseline, per request, paired over the same requests.

    python experiments/2026-12-02-reranker/against_baselines.py 4 experiments/2026-12-02-reranker/{apibank,toolalpaca}-2epochs.json

The baselines' hits per request are those of the shipped policy's judge run on the same requests
(experiments/2026-12-01-three-catalogs/shipped/results.json, per-query); the catalog is the file name's first word.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[2]))

from score import hits

from autotool.metrics import paired_bootstrap

JUDGED = Path(__file__).parents[1] / "2026-12-01-three-catalogs/shipped/results.json"

c = float(sys.argv[1])
judged = json.loads(JUDGED.read_text())["catalogs"]
for path in sys.argv[2:]:
    rows = json.loads(Path(path).read_text())["rows"]
    catalog = Path(path).stem.split("-")[0]
    measure = judged[catalog]["measures"]["per-query"]
    best = measure["best_stock_baseline"]
    baseline = dict(zip(measure["ids"], measure["per_item"][best]))
    reranked = hits(rows, c)
    base = [baseline[r["id"]] for r in rows]
    p = paired_bootstrap(reranked, base, groups=[r["id"] for r in rows])
    print(
        f"{Path(path).stem}: reranked fast (c = {c:g}) {sum(reranked) / len(rows):.3f}, {best} {sum(base) / len(rows):.3f}:"
        f" {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]"
    )
