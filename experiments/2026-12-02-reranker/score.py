"""Rerank fast mode's best candidates with a cross-encoder (train.py) and replay `log p_fast + c * ce` per c.

    python experiments/2026-12-02-reranker/score.py apibank toolalpaca --model runs/reranker/model --out runs/rr

For each request (one call per request, as issue #23 counts), fast mode's `--depth` best candidates through the
served path (`select_steps(..., mode="fast", arguments=False)`, the shipped policy, the default tuned embedder);
the cross-encoder scores (request, tool text) for each (its raw logit). Writes every candidate's fast
probability and score, and prints hit@1 for each c with the paired 95% interval against fast mode (c = 0).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
import numpy as np

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, catalog_queries
from autotool.metrics import paired_bootstrap
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY, select_steps
from autotool.selection import StepInput

GRID = (0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 8.0, 16.0, 1000.0)


def hits(rows, c: float) -> list[float]:
    out = []
    for r in rows:
        score = np.log(np.maximum(r["p_fast"], 1e-12)) + c * np.array(r["ce"])
        out.append(float(r["candidates"][int(np.argmax(score))] in r["gold"]))
    return out


def report(rows) -> str:
    fast = hits(rows, 0.0)
    lines = [f"fast {np.mean(fast):.3f}"]
    for c in GRID:
        reranked = hits(rows, c)
        p = paired_bootstrap(reranked, fast, groups=[r["id"] for r in rows])
        lines.append(f"c={c:g}: {np.mean(reranked):.3f} ({p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}])")
    return "\n  ".join(lines)


@click.command(help=__doc__)
@click.argument("catalogs", nargs=-1, required=True)
@click.option("--model", "model_folder", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--depth", default=5, show_default=True)
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path))
def main(catalogs, model_folder, depth, out):
    from sentence_transformers.cross_encoder import CrossEncoder

    out.mkdir(parents=True, exist_ok=True)
    model = CrossEncoder(model_folder, device="cpu")
    for spec in catalogs:
        bench, queries = catalog_queries(spec)
        bank = benchmark_bank(bench, "tools")
        policy = Policy.load(SHIPPED_POLICY, bank)
        began = time.perf_counter()
        chosen = select_steps(
            policy, bank, [StepInput(q.text) for q in queries], k=depth, mode="fast", arguments=False, min_cosine=0
        )
        pairs = [(q.text, t.text) for q, s in zip(queries, chosen) for t, _ in s.candidates]
        scores = iter(model.predict(pairs, batch_size=32, activation_fn=None, show_progress_bar=False).tolist())
        rows = [
            {
                "id": q.id,
                "gold": list(q.gold_tools),
                "candidates": [t.name for t, _ in s.candidates],
                "p_fast": [p for _, p in s.candidates],
                "ce": [next(scores) for _ in s.candidates],
            }
            for q, s in zip(queries, chosen)
        ]
        seconds = time.perf_counter() - began
        (out / f"{spec.replace(':', '_')}.json").write_text(json.dumps({"seconds": seconds, "rows": rows}))
        print(f"{spec} ({len(rows)} requests, {seconds:.0f} s)\n  {report(rows)}", flush=True)


if __name__ == "__main__":
    main()
