"""Replay score.py's outputs: hit@1 per c of `log p_fast + c * score`, with paired intervals against fast mode.

    python experiments/2026-12-02-reranker/replay.py experiments/2026-12-02-reranker/apibank.json ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from score import report

for path in sys.argv[1:]:
    rows = json.loads(Path(path).read_text())["rows"]
    print(f"{Path(path).stem} ({len(rows)} requests)\n  {report(rows)}")
