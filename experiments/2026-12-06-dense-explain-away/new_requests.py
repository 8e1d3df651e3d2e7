"""The Seal-Tools requests no record had judged before this one: every request outside the seed-0 samples of 300,
600 and 1,000 that earlier records judged (904 of 2,054). joint.py, served.py, per_request.py and
product_check.py judge these."""

from __future__ import annotations

from autotool.benchmarks import load_benchmark, load_split, select_queries

LABEL = "seal_tools, 904 new requests"


def new_seal_requests():
    bench = load_benchmark("seal_tools")
    split = load_split(bench)
    judged = {q.id for n in (300, 600, 1000) for q in select_queries(bench, split, "all", n)}
    return bench, select_queries(bench, split, "all", exclude=judged)
