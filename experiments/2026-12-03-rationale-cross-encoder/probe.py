"""The rationale as a second cross-encoder view, a probe. Per request of each catalog: fast and reason mode's
best 5 from the served path without reranking, the rationale, and the shipped reranker's scores of (request,
tool) and (rationale, tool).

    python experiments/2026-12-03-rationale-cross-encoder/probe.py apibank,toolalpaca OUT.json
"""
import json
import sys
from pathlib import Path

from tqdm import tqdm

from autotool.benchmarks import benchmark_bank, catalog_queries
from autotool.policy import Policy
from autotool.rerank import SHIPPED_RERANKER, load_reranker
from autotool.select import select_steps
from autotool.selection import StepInput

rr = load_reranker(SHIPPED_RERANKER)
specs = sys.argv[1].split(",")
out = {}
for spec in specs:
    bench, queries = catalog_queries(spec)
    bank = benchmark_bank(bench, "tools")
    policy = Policy.load(Path("autotool/default_policy"), bank)
    rows = []
    for start in tqdm(range(0, len(queries), 32), desc=spec):
        chunk = queries[start:start + 32]
        steps = [StepInput(q.text) for q in chunk]
        kw = dict(k=5, arguments=False, min_cosine=0, rerank=False)
        fast = select_steps(policy, bank, steps, mode="fast", **kw)
        reason = select_steps(policy, bank, steps, mode="reason", **kw)
        for q, f, r in zip(chunk, fast, reason):
            row = {"id": q.id, "gold": list(q.gold_tools), "rationale": r.rationale}
            for name, s in (("fast", f), ("reason", r)):
                texts = [t.text for t, _ in s.candidates]
                row[name] = {
                    "candidates": [t.name for t, _ in s.candidates],
                    "p": [p for _, p in s.candidates],
                    "s_req": rr.scores(q.text, texts).tolist(),
                    "s_rat": rr.scores(r.rationale, texts).tolist() if r.rationale.strip() else [0.0] * len(texts),
                }
            rows.append(row)
    out[spec] = rows
Path(sys.argv[2]).write_text(json.dumps(out))
