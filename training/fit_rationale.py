"""Fit reason mode's rationale weight b on foreign validation catalogs, through the served path with the policy's
reranker, and write it into the policy's head.

    python -m training.fit_rationale autotool/default_policy --bench apibank,toolalpaca --out FOLDER --write

`training.calibrate` fits b on the training catalogs' val splits, per step, over the whole catalog and without the
reranker. On catalogs no policy trained on, the shipped policy's rationale pulls the anchor away from the request
more often than towards its tool (experiments/2026-12-03-rationale-weight-foreign). This fit reads catalogs like
the ones users bring: for each request of each catalog (`name[:split[:limit]]`, split `all` by default), the
policy writes its greedy rationale once, as reason mode does (`autotool.select.written`). Then, for each b of the
grid, the anchor, the candidates and the reranker's reordering (at the manifest's weight) run as `select_steps`
runs them, and the first choice is scored (any gold tool counts as a hit). b is the grid value with the best mean
hit@1 over the catalogs; ties go to the smaller b. The grid is coarse on purpose: a few hundred requests cannot
tell finer steps apart. Run it after `training.fit_rerank`, since it reads the fitted c.

`--write` stores b in `anchor_head.safetensors` and records the fit in the manifest (`rationale_fitted`), each
replaced atomically. `--out` gets `results.md` (the grid) and `rationales.json` (what the policy wrote, and each
request's hit at each b).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import click
import numpy as np
from tqdm import tqdm

from autotool.benchmarks import Query, benchmark_bank
from autotool.metrics import paired_bootstrap
from autotool.policy import Policy
from autotool.prompts import TokenBudget
from autotool.rerank import Remembered, rerank_candidates
from autotool.select import written
from autotool.selection import DEFAULT_TOP_K, StepInput, candidates, embedded
from toolbank import ToolBank
from training.cli import doc_help, run
from training.fits import catalogs, embedder_option, load_policy, record
from training.ship import provenance

GRID = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def grid_hits(
    policy: Policy, bank: ToolBank, queries: list[Query], grid=GRID, batch: int = 32
) -> tuple[list[str], dict[float, list[float]]]:
    """The policy's rationale for each request, and each request's hit@1 at each b of `grid`: its first choice
    as `select_steps(..., mode="reason", arguments=False, min_cosine=0)` makes it with the head's b replaced."""
    steps = [StepInput(q.text) for q in queries]
    vectors = embedded(bank.embedder, [q.text for q in queries])
    rationales, hidden = [], []
    for start in tqdm(range(0, len(steps), batch), desc=f"{bank.path.name}: rationales", unit="batch"):
        chunk = slice(start, start + batch)
        text, _, states = written(policy, bank, steps[chunk], vectors[chunk], "reason", TokenBudget().rationale)
        rationales += text
        hidden.append(None if states is None else states.detach().float().cpu().numpy())
    states = None if hidden[0] is None else np.concatenate(hidden)
    reasons = embedded(bank.embedder, rationales)
    reranker = None if policy.rerank is None else Remembered(policy.reranker)
    out = {}
    for b in grid:
        values = replace(policy.head_values, b=b)
        ranked = candidates(values, bank, values.anchors(states, vectors, reasons), steps, DEFAULT_TOP_K, None, ())
        if reranker is not None:
            ranked = [rerank_candidates(reranker, policy.rerank, q.text, r) for q, r in zip(queries, ranked)]
        out[b] = [float(r[0].tool.name in q.gold_tools) for q, r in zip(queries, ranked)]
    return rationales, out


@click.command(help=doc_help(__doc__), context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("policy_path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--bench", default="apibank,toolalpaca", show_default=True, help="Comma-separated catalog specs.")
@embedder_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Folder for the grid.")
@click.option("--write", is_flag=True, help="Store the fitted b in the policy's head and record the fit.")
def main(policy_path, bench, embedder, out, write):
    embedder_id, benches = catalogs(policy_path, bench, embedder)
    specs = list(benches)
    began = time.perf_counter()
    policy, rationales, hits = None, {}, {}
    for spec, (benchmark, queries) in benches.items():
        bank = benchmark_bank(benchmark, embedder)
        policy = load_policy(policy_path, bank, embedder)
        rationales[spec], hits[spec] = grid_hits(policy, bank, queries)
    seconds = time.perf_counter() - began
    means = {b: {spec: float(np.mean(hits[spec][b])) for spec in specs} for b in GRID}
    was = round(policy.head_values.b, 6)  # float32 in the head
    b = max(GRID, key=lambda x: (round(float(np.mean(list(means[x].values()))), 9), -x))
    rerank = policy.rerank
    lines = [
        f"# Rationale weight for {policy_path}",
        "",
        f"Reason mode's first choice per request (hit@1, any gold tool a hit), embedder `{embedder}`, "
        + (f"reranker at c = {rerank.weight:g}" if rerank else "no reranker")
        + f"; fitted b = {b:g} (was {was:g}). {seconds:.0f} s for {sum(len(q) for _, q in benches.values())} "
        "requests.",
        "",
        "| b | " + " | ".join(specs) + " | mean |",
        "|---:|" + "---:|" * (len(specs) + 1),
    ]
    for x in GRID:
        cells = " | ".join(f"{means[x][s]:.3f}" for s in specs)
        lines.append(
            f"| {'**' + format(x, 'g') + '**' if x == b else format(x, 'g')} | {cells} | "
            f"{np.mean(list(means[x].values())):.3f} |"
        )
    lines.append("")
    nearest = min(GRID, key=lambda x: abs(x - was))  # the grid's value of the head as it was
    for spec in specs:
        ids = [q.id for q in benches[spec][1]]
        p = paired_bootstrap(hits[spec][b], hits[spec][nearest], groups=ids)
        lines.append(
            f"- {spec}: b = {b:g} minus b = {nearest:g}: {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]"
        )
    report = "\n".join(lines) + "\n"
    click.echo(report)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.md").write_text(report)
        kept = {
            spec: [
                {"id": q.id, "rationale": r, "hit": {format(x, "g"): hits[spec][x][i] for x in GRID}}
                for i, (q, r) in enumerate(zip(benches[spec][1], rationales[spec]))
            ]
            for spec in specs
        }
        (out / "rationales.json").write_text(json.dumps(kept, ensure_ascii=False) + "\n")
    if write:
        import torch

        with torch.no_grad():
            policy.head.b.fill_(b)
        policy.save_head(policy_path)
        record(
            policy_path,
            rationale_fitted={
                "b": b,
                "was": was,
                "on": specs,
                "embedder": embedder_id,
                "rerank_weight": None if rerank is None else rerank.weight,
                "hit@1": means[b],
                "grid": list(GRID),
                **provenance(),
            },
        )
        click.echo(f"wrote b = {b:g} into {policy_path / 'anchor_head.safetensors'}", err=True)


if __name__ == "__main__":
    raise SystemExit(run(main))
