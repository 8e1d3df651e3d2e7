"""Which score tells a request no tool fits? The shipped policy in fast mode (no language model while W = 0)
on validation requests that need a tool (MetaTool's val split, every API-Bank and ToolAlpaca request) and on
MetaTool's no-tool requests against each of those catalogs' banks. For each candidate score of the first
choice (its probability, its cosine with the anchor, the margin over the second), the ROC AUC of telling
no-tool from answerable, and hit@1 on the answerable.

    python experiments/2026-12-01-abstention/scores.py --out runs/abstention-scores.json
"""

import json
import sys
from pathlib import Path

import click
import numpy as np

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, load_benchmark, load_no_tool, load_split, select_queries
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY, select_steps
from autotool.selection import StepInput


def first_choice_scores(policy, bank, queries, mode):
    out = []
    for start in range(0, len(queries), 64):
        batch = queries[start : start + 64]
        for q, s in zip(batch, select_steps(policy, bank, [StepInput(q.text) for q in batch], k=2, mode=mode, arguments=False)):
            second = s.candidates[1][1] if len(s.candidates) > 1 else 0.0
            out.append(
                {
                    "id": q.id,
                    "hit": float(s.tool.name in q.gold_tools) if q.gold_tools else None,
                    "probability": s.probability,
                    "cosine": s.cosine,
                    "margin": s.probability - second,
                }
            )
    return out


def auc(negatives, positives):
    """P(score of an answerable request > score of a no-tool one), ties half."""
    neg, pos = np.asarray(negatives)[:, None], np.asarray(positives)[None, :]
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (neg.size * pos.size))


@click.command()
@click.option("--mode", default="fast", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), required=True)
@click.option("--embedder", default="default", show_default=True, help="The banks' embedder.")
@click.option("--catalogs", default="metatool,apibank,toolalpaca", show_default=True)
def main(mode, out, embedder, catalogs):
    no_tool = load_no_tool()
    results = {}
    for name in catalogs.split(","):
        bench = load_benchmark(name)
        queries = (
            select_queries(bench, load_split(bench, 0), "val") if name == "metatool" else list(bench.queries)
        )
        bank = benchmark_bank(bench, embedder)
        policy = Policy.load(SHIPPED_POLICY, bank)
        answerable = first_choice_scores(policy, bank, queries, mode)
        none = first_choice_scores(policy, bank, list(no_tool.queries), mode)
        results[name] = {"answerable": answerable, "no_tool": none}
        row = {key: auc([r[key] for r in none], [r[key] for r in answerable]) for key in ("probability", "cosine", "margin")}
        hit = np.mean([r["hit"] for r in answerable])
        print(f"{name}: {len(answerable)} answerable (hit@1 {hit:.3f}), {len(none)} no-tool; AUC " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()))
    Path(out).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
