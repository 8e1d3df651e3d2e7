"""The judge of 2026-12-01-three-catalogs on 1,000 MetaTool requests no earlier record judged: every request outside
the seed-0 samples of 300 and 1,000 (`metatool:all:300`, `metatool:all:1000`, the only MetaTool samples of split
`all` the records judged), sampled down to 1,000 with seed 1. The catalog argument is fixed; every other option is
judge.py's:

    python experiments/2026-12-07-loo-metatool-cfb-rerank/fresh.py --policy P --embedder E --modes fast,reason \\
        --measures per-query --out DIR
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from autotool.benchmarks import load_benchmark, load_split, select_queries  # noqa: E402

LABEL = "metatool, 1,000 fresh requests"

_spec = importlib.util.spec_from_file_location("judge", ROOT / "experiments/2026-12-01-three-catalogs/judge.py")
judge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(judge)


def fresh_metatool_requests():
    bench = load_benchmark("metatool")
    split = load_split(bench)
    judged = {q.id for n in (300, 1000) for q in select_queries(bench, split, "all", n)}
    return bench, select_queries(bench, split, "all", 1000, seed=1, exclude=judged)


def catalog_queries(spec: str):
    assert spec == LABEL, spec
    return fresh_metatool_requests()


if __name__ == "__main__":
    judge.catalog_queries = catalog_queries
    sys.argv.insert(1, LABEL)
    judge.main()
