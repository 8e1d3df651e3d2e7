"""Reason mode's rationale weight, at the first step and at later steps apart, a per-step replay of the served
path's own functions. Per step of each request of each catalog (`steps_of`, `step_input`: the gold earlier calls
as context, the tools they called excluded), the shipped policy's rationale (`select_steps`, reason mode, without
reranking); then for each b of the grid, the anchor (`Policy.anchors`), the candidates
(`autotool.selection.candidates`) and for each c the reranker (`autotool.rerank.rerank_candidates`) as
`select_steps` runs them. Writes each step's hit (its first choice is the step's gold tool) per (b, c).

    python experiments/2026-12-03-rationale-weight-foreign/replay_steps.py apibank,toolalpaca,seal_tools:val OUT.json
"""
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from autotool.benchmarks import benchmark_bank, catalog_queries, step_input, steps_of
from autotool.policy import Policy
from autotool.rerank import rerank_candidates
from autotool.select import select_steps
from autotool.selection import DEFAULT_TOP_K, candidates, embedded

B = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
C = (1.0, 2.0)
out = {}
for spec in sys.argv[1].split(","):
    bench, queries = catalog_queries(spec)
    bank = benchmark_bank(bench, "tools")
    policy = Policy.load(Path("autotool/default_policy"), bank)
    steps = [s for q in queries for s in steps_of(q)]
    inputs = [step_input(bank, s) for s in steps]
    rationales = []
    for start in tqdm(range(0, len(inputs), 32), desc=f"{spec}: rationales"):
        chosen = select_steps(
            policy, bank, inputs[start : start + 32], mode="reason", arguments=False, min_cosine=0, rerank=False
        )
        rationales += [s.rationale for s in chosen]
    memo = {}
    reranker = policy.reranker

    class Memo:
        def scores(self, query, texts):
            missing = [t for t in texts if (query, t) not in memo]
            if missing:
                memo.update(zip([(query, t) for t in missing], reranker.scores(query, missing)))
            return np.array([memo[(query, t)] for t in texts], dtype=np.float32)

    vectors = embedded(bank.embedder, [s.query for s in inputs])
    shipped = policy.head_values
    gold = [bank.get(s.gold).qualified_name for s in steps]
    hits = {}
    for b in tqdm(B, desc=f"{spec}: grid"):
        policy._saved_values = replace(shipped, b=b)
        anchors = policy.anchors(bank.embedder, [s.query for s in inputs], rationales, None, query_vectors=vectors)
        ranked = candidates(policy.head_values, bank, anchors, inputs, DEFAULT_TOP_K, None, ())
        for c in C:
            setting = replace(policy.rerank, weight=c)
            hits[f"{b:g},{c:g}"] = [
                float(rerank_candidates(Memo(), setting, s.query, r)[0].tool.qualified_name == g)
                for s, r, g in zip(inputs, ranked, gold)
            ]
    policy._saved_values = shipped
    out[spec] = {
        "ids": [s.query.id for s in steps],
        "later": [s.later for s in inputs],
        "rationales": rationales,
        "hits": hits,
    }
    first = [not s.later for s in inputs]
    print(spec, len(steps), "steps", sum(first), "first", flush=True)
    for k, v in hits.items():
        v = np.array(v)
        print(f"  b,c={k}: all {v.mean():.3f} first {v[first].mean():.3f} later {v[~np.array(first)].mean():.3f}")
Path(sys.argv[2]).write_text(json.dumps(out) + "\n")
