"""Fit the head's two later-step weights on held-out catalogs, through fast mode's served path with the policy's
reranker, and write them into the policy's head.

    python -m training.fit_later autotool/default_policy --bench apibank,toolalpaca,seal_tools:val --out FOLDER --write

A later step (one after earlier calls) is weighed apart from a first step in two ways: BM25 reads the request
without the called tools' words at the weight `l_later`, and `explain` of the called tools' directions is taken
out of the anchor (autotool/selection.py). `training.calibrate` fits l_later on the training catalogs' val
splits without the reranker, and leaves explain as the head has it. The two kinds of catalog want different l_later: API-Bank's
later steps lose 18 points at the 0.7 fitted on Seal-Tools' val, and Seal-Tools' lose 20 at 0.1; explain lets it
come down without that loss (experiments/2026-12-06-dense-explain-away).

This fit reads every later step of each catalog (`name[:split[:limit]]`, split `all` by default: every step after
a request's first, reading the earlier gold calls and barred from their tools, as the evaluation steps them).
For each (l_later, explain) of the grid, the candidates and the reranker's reordering (at the manifest's c) run
as `select_steps(..., mode="fast", arguments=False)` runs them, and the first choice is scored. The pair with the
best mean hit@1 over the catalogs wins (each catalog counts once, whatever its number of steps); ties go to the
smaller explain, then the smaller l_later. Run it after `training.fit_rerank`, since it reads c. First steps read
neither weight, so the fits that score first steps (`training.fit_rerank`, `training.fit_rationale`) do not
depend on this one. A policy whose anchor reads the language model's state (W not zero) and whose prompt holds a
shortlist is refused: its shortlist, and so its state, would change with the two weights.

`--write` stores both in `anchor_head.safetensors`, sets the manifest's `format_version` to 3 (a head that holds
explain) and records the fit (`later_fitted`), each replaced atomically. `--out` gets `results.md` (the grid) and
`hits.json` (every later step, `REQUEST#INDEX`, and its hit at every pair).
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import replace
from pathlib import Path

import click
import numpy as np
from tqdm import tqdm

from autotool.benchmarks import Query, Step, benchmark_bank, step_input, steps_of
from autotool.metrics import paired_bootstrap
from autotool.policy import FORMAT_VERSION, Policy
from autotool.prompts import TokenBudget
from autotool.rerank import Remembered, rerank_candidates
from autotool.select import written
from autotool.selection import DEFAULT_TOP_K, candidates, embedded
from toolbank import ToolBank
from training.calibrate import L_GRID
from training.cli import CommandError, doc_help, run
from training.fits import catalogs, embedder_option, load_policy, record
from training.ship import provenance

EXPLAIN_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
GRID = tuple(itertools.product(L_GRID, EXPLAIN_GRID))  # (l_later, explain)


def later(queries: list[Query]) -> list[Step]:
    """Every step after a request's first."""
    return [s for q in queries for s in steps_of(q) if s.index > 0]


def later_steps(bank: ToolBank, queries: list[Query]) -> tuple[list, list[str], list[str]]:
    """Every step after a request's first, as the policy reads it (`step_input`), its gold tool and its request's
    id."""
    steps = later(queries)
    return [step_input(bank, s) for s in steps], [s.gold for s in steps], [s.query.id for s in steps]


def grid_hits(
    policy: Policy, bank: ToolBank, items: list, golds: list[str], grid=GRID, batch: int = 32
) -> dict[tuple[float, float], list[float]]:
    """Each step's hit@1 at each (l_later, explain) of `grid`: its first choice as `select_steps(..., mode="fast",
    arguments=False, min_cosine=0)` makes it with those two head values replaced."""
    vectors = embedded(bank.embedder, [s.query for s in items])
    hidden = None
    if policy.head_values.uses_hidden:  # fast mode reads the language model's state at the anchor token
        states = []
        for start in tqdm(range(0, len(items), batch), desc=f"{bank.path.name}: hidden states", unit="batch"):
            chunk = slice(start, start + batch)
            states.append(written(policy, bank, items[chunk], vectors[chunk], "fast", TokenBudget().rationale)[2])
        hidden = np.concatenate([s.detach().float().cpu().numpy() for s in states])
    anchors = policy.anchors(bank.embedder, [s.query for s in items], [""] * len(items), hidden, query_vectors=vectors)
    reranker = None if policy.rerank is None else Remembered(policy.reranker)
    out = {}
    for later, explain in tqdm(grid, desc=f"{bank.path.name}: the grid", unit="pair"):
        values = replace(policy.head_values, lexical_later=later, explain=explain)
        ranked = candidates(values, bank, anchors, items, DEFAULT_TOP_K, None, ())
        if reranker is not None:
            ranked = [rerank_candidates(reranker, policy.rerank, s.query, r) for s, r in zip(items, ranked)]
        out[(later, explain)] = [float(r[0].tool.name == gold) for r, gold in zip(ranked, golds)]
    return out


def label(pair: tuple[float, float]) -> str:
    return f"{pair[0]:g},{pair[1]:g}"


@click.command(help=doc_help(__doc__), context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("policy_path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--bench",
    default="apibank,toolalpaca,seal_tools:val",
    show_default=True,
    help="Comma-separated catalog specs, each one the policy and the embedder never trained on (or a held-out split).",
)
@embedder_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None, help="Folder for the grid.")
@click.option("--write", is_flag=True, help="Store the fitted pair in the policy's head and record the fit.")
def main(policy_path, bench, embedder, out, write):
    embedder_id, benches = catalogs(policy_path, bench, embedder)
    specs = list(benches)
    for spec, (_, queries) in benches.items():
        if not later(queries):
            raise CommandError(f"--bench {spec}: no request has more than one call, so there is no later step")
    began = time.perf_counter()
    policy, hits, ids, names = None, {}, {}, {}
    for spec, (benchmark, queries) in benches.items():
        bank = benchmark_bank(benchmark, embedder)
        policy = load_policy(policy_path, bank, embedder)
        if policy.shortlist and policy.head_values.uses_hidden:
            raise CommandError(
                f"{policy_path}: its anchor reads the language model's state after a shortlist that the two weights "
                "change; this fit replays neither"
            )
        items, golds, ids[spec] = later_steps(bank, queries)
        names[spec] = [s.id for s in later(queries)]
        hits[spec] = grid_hits(policy, bank, items, golds)
    seconds = time.perf_counter() - began
    means = {pair: {spec: float(np.mean(hits[spec][pair])) for spec in specs} for pair in GRID}
    was = (round(policy.head_values.lexical_later, 6), round(policy.head_values.explain, 6))  # float32 in the head
    fitted = max(GRID, key=lambda p: (round(float(np.mean(list(means[p].values()))), 9), -p[1], -p[0]))
    nearest = min(GRID, key=lambda p: abs(p[0] - was[0]) + abs(p[1] - was[1]))  # the head as it was
    lines = [
        f"# Later-step weights for {policy_path}",
        "",
        f"Fast mode's first choice at every later step (hit@1), embedder `{embedder}`, "
        + (f"reranker at c = {policy.rerank.weight:g}" if policy.rerank else "no reranker")
        + f"; fitted (l_later, explain) = ({label(fitted)}) (was ({was[0]:g},{was[1]:g})). {seconds:.0f} s for "
        + ", ".join(f"{len(ids[s])} later steps of {s}" for s in specs)
        + ".",
        "",
        "| l_later, explain | " + " | ".join(specs) + " | mean |",
        "|---|" + "---:|" * (len(specs) + 1),
    ]
    for pair in GRID:
        cells = " | ".join(f"{means[pair][s]:.3f}" for s in specs)
        name = f"**{label(pair)}**" if pair == fitted else label(pair)
        lines.append(f"| {name} | {cells} | {np.mean(list(means[pair].values())):.3f} |")
    lines.append("")
    for spec in specs:
        p = paired_bootstrap(hits[spec][fitted], hits[spec][nearest], groups=ids[spec])
        lines.append(
            f"- {spec}: ({label(fitted)}) minus ({label(nearest)}): {p['mean']:+.3f} "
            f"[{p['ci_low']:+.3f}, {p['ci_high']:+.3f}] over its later steps"
        )
    report = "\n".join(lines) + "\n"
    click.echo(report)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.md").write_text(report)
        kept = {spec: {"steps": names[spec], "hits": {label(p): hits[spec][p] for p in GRID}} for spec in specs}
        (out / "hits.json").write_text(json.dumps(kept) + "\n")
    if write:
        import torch

        with torch.no_grad():
            policy.head.lexical_later.fill_(fitted[0])
            policy.head.explain.fill_(fitted[1])
        policy.save_head(policy_path)
        record(
            policy_path,
            format_version=FORMAT_VERSION,  # the head now holds every value, explain among them
            later_fitted={
                "lexical_later": fitted[0],
                "explain": fitted[1],
                "was": {"lexical_later": was[0], "explain": was[1]},
                "on": specs,
                "embedder": embedder_id,
                "rerank_weight": None if policy.rerank is None else policy.rerank.weight,
                "hit@1": means[fitted],
                "later_steps": {spec: len(ids[spec]) for spec in specs},
                "grid": {"lexical_later": list(L_GRID), "explain": list(EXPLAIN_GRID)},
                **provenance(),
            },
        )
        click.echo(
            f"wrote l_later = {fitted[0]:g} and explain = {fitted[1]:g} into {policy_path / 'anchor_head.safetensors'}",
            err=True,
        )


if __name__ == "__main__":
    raise SystemExit(run(main))
