"""Reason mode with several sampled rationales a request, a replay of the served path (issue #23, lever 2).

For each request the policy writes its greedy rationale (what reason mode writes today) and `--k` rationales
sampled at `--temperature` (seeded per batch, so a rerun writes the same). Three rationale vectors are scored:

- `greedy`: E(greedy rationale), reason mode as served;
- `sampled`: the unit mean of the k sampled rationales' embeddings;
- `both`: the unit mean of all k + 1.

For each vector and each b of `training.fit_rationale`'s grid, the anchor, the candidates and the reranker's
reordering run as `training.fit_rationale.grid_hits` runs them (the served path's functions), and the first choice
is scored per request (any gold tool a hit). Catalog specs are `autotool.benchmarks.catalog_queries`'s, plus
`metatool-fresh` (fresh.py's 1,000 requests of 2026-12-07-loo-metatool-cfb-rerank).

    python experiments/2026-12-07-sampled-rationales/probe.py --policy P --embedder E --out DIR apibank toolalpaca

`DIR/results.md` has each catalog's hit@1 for each vector and b; `DIR/results.json` every request's rationales
and hits.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import click
import numpy as np
import torch
from tqdm import tqdm

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from autotool.benchmarks import benchmark_bank, catalog_queries  # noqa: E402
from autotool.policy import Policy  # noqa: E402
from autotool.prompts import TokenBudget  # noqa: E402
from autotool.rerank import Remembered, rerank_candidates  # noqa: E402
from autotool.rollout import prompt_ids, think  # noqa: E402
from autotool.selection import DEFAULT_TOP_K, StepInput, candidates, embedded  # noqa: E402
from training.fit_rationale import GRID  # noqa: E402

VECTORS = ("greedy", "sampled", "both")


def _fresh():
    path = ROOT / "experiments/2026-12-07-loo-metatool-cfb-rerank/fresh.py"
    spec = importlib.util.spec_from_file_location("fresh", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fresh_metatool_requests()


def unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


def rationales(policy: Policy, steps, k: int, temperature: float, seed: int, batch: int, label: str):
    """Each step's greedy rationale and its k sampled ones."""
    budget = TokenBudget().rationale
    greedy, sampled = [], []
    for start in tqdm(range(0, len(steps), batch), desc=f"{label}: rationales", unit="batch"):
        prompts = [prompt_ids(policy, s) for s in steps[start : start + batch]]
        greedy += think(policy, prompts, "reason", budget)[2]
        torch.manual_seed(seed + start)
        text = think(policy, [p for p in prompts for _ in range(k)], "reason", budget, True, temperature)[2]
        sampled += [text[i * k : (i + 1) * k] for i in range(len(prompts))]
    return greedy, sampled


def judge(policy: Policy, bank, queries, greedy, sampled):
    """Each vector's hits at each b, as `training.fit_rationale.grid_hits` scores them."""
    steps = [StepInput(q.text) for q in queries]
    vectors = embedded(bank.embedder, [q.text for q in queries])
    k = len(sampled[0])
    e_greedy = embedded(bank.embedder, greedy)
    e_sampled = embedded(bank.embedder, [t for texts in sampled for t in texts]).reshape(len(queries), k, -1)
    reasons = {
        "greedy": e_greedy,
        "sampled": unit(e_sampled.mean(1)),
        "both": unit((e_sampled.sum(1) + e_greedy) / (k + 1)),
    }
    reranker = None if policy.rerank is None else Remembered(policy.reranker)
    hits = {}
    for name in VECTORS:
        for b in GRID:
            values = replace(policy.head_values, b=b)
            anchors = values.anchors(None, vectors, reasons[name])
            ranked = candidates(values, bank, anchors, steps, DEFAULT_TOP_K, None, ())
            if reranker is not None:
                ranked = [rerank_candidates(reranker, policy.rerank, q.text, r) for q, r in zip(queries, ranked)]
            hits[f"{name}@{b:g}"] = [float(r[0].tool.name in q.gold_tools) for q, r in zip(queries, ranked)]
    return hits


@click.command()
@click.argument("specs", nargs=-1, required=True)
@click.option("--policy", "policy_path", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--embedder", required=True)
@click.option("--k", type=int, default=4, show_default=True)
@click.option("--temperature", type=float, default=0.7, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--batch", type=int, default=16, show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
def main(specs, policy_path, embedder, k, temperature, seed, batch, out):
    out.mkdir(parents=True, exist_ok=True)
    kept, means, seconds = {}, {}, {}
    for spec in specs:
        began = time.perf_counter()
        bench, queries = _fresh() if spec == "metatool-fresh" else catalog_queries(spec)
        bank = benchmark_bank(bench, embedder)
        policy = Policy.load(policy_path, bank)
        if policy.head_values.uses_hidden or policy.shortlist:
            raise SystemExit(f"{policy_path}: the probe replays heads with W = 0 and no shortlist")
        steps = [StepInput(q.text) for q in queries]
        greedy, sampled = rationales(policy, steps, k, temperature, seed, batch, spec)
        hits = judge(policy, bank, queries, greedy, sampled)
        seconds[spec] = time.perf_counter() - began
        means[spec] = {key: float(np.mean(v)) for key, v in hits.items()}
        kept[spec] = [
            {"id": q.id, "greedy": g, "sampled": s, "hit": {key: v[i] for key, v in hits.items()}}
            for i, (q, g, s) in enumerate(zip(queries, greedy, sampled))
        ]
        (out / "results.json").write_text(json.dumps(kept, ensure_ascii=False) + "\n")
        click.echo(f"{spec}: {len(queries)} requests in {seconds[spec]:.0f} s", err=True)
    lines = [
        f"# Sampled rationales: {policy_path}, embedder `{embedder}`",
        "",
        f"k = {k} sampled at temperature {temperature:g} (seed {seed}), the greedy one beside them; reranker at "
        f"c = {policy.rerank.weight:g}; hit@1 per request. Seconds: "
        + ", ".join(f"{s} {t:.0f}" for s, t in seconds.items())
        + ".",
        "",
    ]
    for spec in specs:
        lines += [f"## {spec} ({len(kept[spec])} requests)", "", "| b | " + " | ".join(VECTORS) + " |"]
        lines.append("|---:|" + "---:|" * len(VECTORS))
        lines += [f"| {b:g} | " + " | ".join(f"{means[spec][f'{n}@{b:g}']:.3f}" for n in VECTORS) + " |" for b in GRID]
        lines.append("")
    report = "\n".join(lines)
    (out / "results.md").write_text(report)
    click.echo(report)


if __name__ == "__main__":
    main()
