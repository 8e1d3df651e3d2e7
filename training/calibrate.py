"""Fit the anchor head's rationale weight b, lexical weights l and l_later, and sharpness g on the val split
(tools held out from training).

    python -m training.calibrate POLICY [--bench metatool,seal_tools] [--limit 400] [--no-lexical] [--out FOLDER] [--write]

The policy writes its own greedy rationale for every step of each val query, as the evaluation does: a later
step reads the earlier gold calls and may not choose their tools again. With a and W as trained, b, l (first
steps) and l_later (steps after earlier calls) are chosen on a grid to maximise val hit@1 of
`e'.e_k + l * bm25_k` (over a benchmark's steps, then the mean over the benchmarks; the whole catalog as
candidates; ties go to the smaller l_later, then l, then b), then g to minimise the mean val negative
log-likelihood of the gold tool. Where no val query has a later step, l_later = l. `--no-lexical` keeps
both at 0 (the selection distribution of ../shared/DESIGN.md alone). Val tools never reach training inputs
and no test split is read, so the test figures stay held out (../shared/DESIGN.md: model selection on a
validation split of tools).

`--write` stores b, l, l_later and g in the policy's `anchor_head.safetensors` and records the fit in its
manifest (`calibrated`). `--out` gets `results.md` (the grids) and `rationales-BENCH.jsonl` (what the
policy wrote).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import click
import numpy as np
import torch
from tqdm import tqdm

from autotool.benchmarks import (
    BenchmarkError,
    Step,
    benchmark_bank,
    load_benchmark,
    load_split,
    select_queries,
    step_input,
    steps_of,
)
from autotool.head import ToolTable, explained, tool_scores
from autotool.policy import Policy, PolicyError, embed
from autotool.prompts import TokenBudget
from autotool.rollout import hidden_at_anchor, prompt_ids, think
from autotool.selection import shortlisted
from toolbank import atomic_write
from training.cli import CommandError, doc_help, run

B_GRID = [round(0.05 * i, 2) for i in range(21)]  # 0 .. 1
L_GRID = [0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0]
G_GRID = np.geomspace(1.0, 200.0, 47).tolist()


@dataclass
class ValSteps:
    """Steps of val queries with what the policy wrote for them and the terms of its anchor."""

    bench: str
    table: ToolTable
    steps: list[Step]
    rationales: list[str]  # what the policy wrote for each step
    query: torch.Tensor  # (n, dim) E(query)
    rationale: torch.Tensor  # (n, dim) E(rationale), zeros where the policy wrote none
    hidden_term: torch.Tensor  # (n, dim) W h (zeros while W is zero)
    lexical: torch.Tensor  # (n, n_tools) BM25 of the step's lexical query against each tool, over its best
    gold: torch.Tensor  # (n,) index of the gold tool in `table`
    later: torch.Tensor  # (n,) bool: the step follows earlier calls
    excluded: torch.Tensor  # (n, n_tools) bool: tools earlier steps called, not to be chosen again
    explaining: torch.Tensor | None = None  # (n, n_tools) bool: the called tools a later step's anchor is rid of
    explain: float = 0.0  # the head's `explain`: how much of their directions (autotool.head.explained)

    @property
    def first(self) -> torch.Tensor:
        return ~self.later


def write_rationales(policy: Policy, bench_name: str, limit: int, batch_size: int = 16, seed: int = 0) -> ValSteps:
    """The policy's greedy rationales for every step of (a seeded sample of `limit`) val queries, written as the
    served path writes them (`autotool.rollout.think`), with the terms of each step's anchor."""
    bench = load_benchmark(bench_name)
    bank = benchmark_bank(bench, policy.embedder)
    table = ToolTable.from_bank(bank)
    steps = [
        s
        for q in select_queries(bench, load_split(bench, seed), "val", limit=limit or None, seed=seed)
        for s in steps_of(q)
    ]
    inputs = [step_input(bank, s) for s in steps]
    queries = embed(table.embedder, [s.query.text for s in steps])
    read = shortlisted(policy.head_values, bank, inputs, queries.numpy(), policy.shortlist)  # as served
    rationales, hidden = [], []
    for start in tqdm(range(0, len(steps), batch_size), desc=f"rationales ({bench_name} val)", unit="batch"):
        batch = read[start : start + batch_size]
        _, _, written, heads = think(policy, [prompt_ids(policy, s) for s in batch], "reason", TokenBudget().rationale)
        rationales += written
        if policy.head.uses_hidden:
            hidden.append(hidden_at_anchor(policy, heads))
    with torch.no_grad():
        hidden_term = (
            policy.head.W(torch.nn.functional.normalize(torch.cat(hidden), dim=-1))
            if hidden
            else torch.zeros(len(steps), table.vectors.shape[1])
        )
    return ValSteps(
        bench.name,
        table,
        steps,
        rationales,
        queries,
        embed(table.embedder, rationales),
        hidden_term,
        table.lexical(inputs),
        torch.tensor([table.index[s.gold] for s in steps]),
        torch.tensor([s.index > 0 for s in steps]),
        table.excluded(inputs),
        table.explaining(inputs),
        float(policy.head.explain),
    )


def scores(val: ValSteps, a: float, b: float, lexical: float = 0.0, lexical_later: float | None = None) -> torch.Tensor:
    """(n, n_tools) `e'.e_k + l bm25_k`: cosine of each step's anchor `normalize(a q + W h + b r)` (at a later
    step rid of the head's `explain` of the called tools' directions, as served) with every tool, plus the lexical
    prior (weighed by `lexical_later` at later steps; default `lexical`); tools that earlier steps called at
    -inf."""
    anchor = torch.nn.functional.normalize(a * val.query + val.hidden_term + b * val.rationale, dim=-1)
    if val.explaining is not None:
        anchor = explained(val.explain, anchor, val.table.vectors, val.explaining)
    return tool_scores(
        anchor @ val.table.vectors.T,
        val.lexical,
        lexical,
        lexical if lexical_later is None else lexical_later,
        val.later,
    ).masked_fill(val.excluded, -math.inf)


def hits(val: ValSteps, a: float, b: float, lexical: float = 0.0, lexical_later: float | None = None) -> torch.Tensor:
    """(n,) 1.0 where the best scored tool is the gold one."""
    return (scores(val, a, b, lexical, lexical_later).argmax(1) == val.gold).float()


def hit_at_1(val: ValSteps, a: float, b: float, lexical: float = 0.0, lexical_later: float | None = None) -> float:
    return float(hits(val, a, b, lexical, lexical_later).mean())


def nll(val: ValSteps, a: float, b: float, g: float, lexical: float = 0.0, lexical_later: float | None = None) -> float:
    """Mean -log p(gold | e') under `softmax(2 g (cos + l bm25))` over the whole catalog, over the steps whose
    gold tool can be chosen: a step repeating a tool an earlier step called has p(gold) = 0 under any g."""
    logp = torch.log_softmax(2.0 * g * scores(val, a, b, lexical, lexical_later), dim=1)
    steps = torch.arange(len(val.gold))
    choosable = ~val.excluded[steps, val.gold]
    return float(-logp[steps, val.gold][choosable].mean()) if choosable.any() else 0.0


Fit = tuple[float, float, float]  # (b, l, l_later)
GridHits = dict[tuple[float, float], list[torch.Tensor]]  # (b, l): per benchmark, (n,) hits with l at every step


def grid_hits(vals: list[ValSteps], a: float, lexical_grid: list[float] = L_GRID) -> GridHits:
    """Every step's hit for each b of B_GRID and each l of `lexical_grid`, one lexical weight at every step."""
    return {(b, l): [hits(v, a, b, l, l) for v in vals] for b in B_GRID for l in lexical_grid}


def fit(vals: list[ValSteps], a: float, cells: GridHits) -> tuple[float, float, float, float, dict[Fit, list[float]]]:
    """(b, l, l_later, g, {(b, l, l_later): [val hit@1 per benchmark]}) from `grid_hits`: b, l and l_later by mean
    hit@1 (ties to the smaller l_later, then l, then b; l_later = l where no step follows earlier calls), then g
    by mean NLL."""
    has_later = any(bool(v.later.any()) for v in vals)
    lexical_grid = sorted({l for _, l in cells})
    table = {}
    for b, l in cells:
        for l2 in lexical_grid if has_later else [l]:  # rows are scored alone: first rows from l, later from l2
            table[b, l, l2] = [
                float(torch.where(v.later, cells[b, l2][i], cells[b, l][i]).mean()) for i, v in enumerate(vals)
            ]
    best = max(table, key=lambda k: (round(float(np.mean(table[k])), 6), -k[2], -k[1], -k[0]))
    b, l, l2 = best
    g = min(G_GRID, key=lambda g: float(np.mean([nll(v, a, b, g, l, l2) for v in vals])))
    return b, l, l2, g, table


def write_head(
    policy_path: Path,
    policy: Policy,
    b: float,
    g: float,
    record: dict,
    lexical: float = 0.0,
    lexical_later: float | None = None,
) -> None:
    """Store b, g, l and l_later (default l) in the policy folder's head file and the fit in its manifest (each
    replaced atomically)."""
    with torch.no_grad():
        policy.head.b.fill_(b)
        policy.head.log_g.fill_(math.log(g))
        policy.head.lexical.fill_(lexical)
        policy.head.lexical_later.fill_(lexical if lexical_later is None else lexical_later)
    policy.save_head(policy_path)
    manifest_file = policy_path / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["calibrated"] = record
    atomic_write(manifest_file, json.dumps(manifest, indent=2) + "\n")


@click.command(help=doc_help(__doc__) + "\n\nPOLICY: a policy folder.")
@click.argument("policy", type=click.Path(path_type=Path))
@click.option(
    "--bench",
    default="metatool,seal_tools",
    show_default=True,
    help="Benchmarks whose val splits to fit on, comma-separated.",
)
@click.option(
    "--limit", type=int, default=400, show_default=True, help="Val queries per benchmark (seeded sample; 0: all)."
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Split seed (the one the policy was trained with)."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for results.md and the rationales.",
)
@click.option(
    "--lexical/--no-lexical",
    default=True,
    show_default=True,
    help="Fit the lexical prior's weights l and l_later; --no-lexical keeps them at 0 (fits b and g only).",
)
@click.option("--write", is_flag=True, help="Store the fitted b, l, l_later and g in the policy folder.")
def cli(**params) -> int:
    args = SimpleNamespace(**params)
    benches = [b.strip() for b in args.bench.split(",") if b.strip()]
    try:  # every argument checked before the minutes of writing rationales
        if not benches or args.limit < 0:
            raise ValueError(
                f"--bench names no benchmark ({args.bench!r})"
                if not benches
                else f"--limit must be 0 (all) or more, not {args.limit}"
            )
        for name in benches:
            load_benchmark(name)
        policy = Policy.load(args.policy)
        if policy.head.anchor != "residual":
            raise PolicyError(
                f"{args.policy} has a {policy.head.anchor} anchor; only the residual anchor mixes in E(rationale)"
            )
    except (BenchmarkError, PolicyError, ValueError) as e:
        raise CommandError(str(e)) from None
    vals = [write_rationales(policy, name, args.limit, seed=args.seed) for name in benches]
    a = policy.head.a.item()
    grid = L_GRID if args.lexical else [0.0]
    cells = grid_hits(vals, a, grid)
    b, lexical, lexical_later, g, table = fit(vals, a, cells)
    head = policy.head
    before = (head.b.item(), head.lexical.item(), head.lexical_later.item(), head.log_g.exp().item())
    report = "\n".join(_report(args, vals, a, cells, table, (b, lexical, lexical_later), g, before)) + "\n"
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.md").write_text(report)
        for v in vals:
            with open(args.out / f"rationales-{v.bench}.jsonl", "w") as f:
                f.writelines(
                    json.dumps(
                        {"query": s.query.text, "index": s.index, "gold": s.gold, "rationale": r}, ensure_ascii=False
                    )
                    + "\n"
                    for s, r in zip(v.steps, v.rationales)
                )
    if args.write:
        chosen = (b, lexical, lexical_later)
        write_head(
            args.policy,
            policy,
            b,
            g,
            {
                "b": b,
                "lexical": lexical,
                "lexical_later": lexical_later,
                "g": round(g, 4),
                "split_seed": args.seed,
                "benchmarks": benches,
                "val_queries": {v.bench: len({s.query.id for s in v.steps}) for v in vals},
                "val_steps": {v.bench: len(v.gold) for v in vals},
                "val_hit@1": {v.bench: table[chosen][i] for i, v in enumerate(vals)},
                "val_hit@1_b0": {v.bench: table[0.0, 0.0, 0.0][i] for i, v in enumerate(vals)},
                "command": f"python -m training.calibrate {args.policy} --bench {args.bench} --limit {args.limit}"
                f"{'' if args.lexical else ' --no-lexical'} --write",
            },
            lexical,
            lexical_later,
        )
        print(f"wrote b, l, l_later and g to {args.policy / 'anchor_head.safetensors'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m training.calibrate ARGS`, returning the exit code (default `sys.argv[1:]`)."""
    return run(cli, argv)


def _report(
    args,
    vals: list[ValSteps],
    a: float,
    cells: GridHits,
    table: dict[Fit, list[float]],
    chosen: Fit,
    g: float,
    before: tuple[float, float, float, float],
) -> list[str]:
    """results.md: the first-step grid of b and l, the later-step grid of l_later, and the anchors compared."""
    b, lexical, lexical_later = chosen
    grid = sorted({l for _, l in cells})

    def mean(key: Fit) -> float:
        return float(np.mean(table[key]))

    def best(keys) -> Fit:
        return max(keys, key=lambda k: (round(mean(k), 6), -k[2], -k[1], -k[0]))

    flag = "" if args.lexical else " --no-lexical"
    described = ", ".join(
        f"{v.bench} ({len({s.query.id for s in v.steps})} queries, {len(v.gold)} steps, "
        f"{int(v.later.sum())} after earlier calls)"
        for v in vals
    )
    lines = [
        f"# Calibration of {args.policy} on the val split (seed {args.seed})",
        "",
        f"`python -m training.calibrate {args.policy} --bench {args.bench} --limit {args.limit}{flag}`",
        "",
        (
            "Val hit@1 (whole catalog as candidates, less the tools earlier steps called) of `e'.e_k + l bm25_k`, "
            f"the anchor `e' = normalize(a E(query) + W h + b E(rationale))`, a = {a:.3f}, bm25_k the query's BM25 "
            "score against tool k over its best, and l_later in place of l at steps after earlier calls; the "
            f"policy wrote its own greedy rationale for each step. Val: {described}."
        ),
        "",
        "First steps, mean over the benchmarks:",
        "",
        "| b \\ l | " + " | ".join(f"{v:g}" for v in grid) + " |",
        "|---:|" + "---:|" * len(grid),
    ]
    for value in B_GRID:
        row = []
        for l in grid:
            cell = f"{np.mean([float(h[v.first].mean()) for h, v in zip(cells[value, l], vals)]):.3f}"
            row.append(f"**{cell}**" if (value, l) == (b, lexical) else cell)
        lines.append(f"| {value:g} | " + " | ".join(row) + " |")
    with_later = [v for v in vals if v.later.any()]
    if with_later and args.lexical:
        lines += [
            "",
            f"Steps after earlier calls, b = {b:g}:",
            "",
            "| l_later | " + " | ".join(v.bench for v in with_later) + " |",
            "|---:|" + "---:|" * len(with_later),
        ]
        for l2 in grid:
            row = [f"{float(h[v.later].mean()):.3f}" for h, v in zip(cells[b, l2], vals) if v.later.any()]
            lines.append(
                f"| {'**' + format(l2, 'g') + '**' if l2 == lexical_later else format(l2, 'g')} | "
                + " | ".join(row)
                + " |"
            )
    plain_b = best([k for k in table if k[1:] == (0.0, 0.0)])[0]
    one_l = best([k for k in table if k[1] == k[2]])
    rows = [
        ("E(query) (dense retrieval)", (0.0, 0.0, 0.0)),
        (
            f"E(query) + the prior, l = {lexical:g}, l_later = {lexical_later:g} (fast mode)",
            (0.0, lexical, lexical_later),
        ),
        (f"rationale, b = {plain_b:g}, no lexical prior", (plain_b, 0.0, 0.0)),
        (f"rationale, b = {one_l[0]:g}, one l = {one_l[1]:g} at every step", one_l),
        (f"rationale, b = {b:g}, l = {lexical:g}, l_later = {lexical_later:g} (chosen)", chosen),
    ]
    lines += [
        "",
        "All steps:",
        "",
        "| anchor | " + " | ".join(v.bench for v in vals) + " | mean |",
        "|---|" + "---:|" * (len(vals) + 1),
    ]
    for label, key in rows:
        lines.append(f"| {label} | " + " | ".join(f"{h:.3f}" for h in table[key]) + f" | {mean(key):.3f} |")
    old_nll = np.mean([nll(v, a, before[0], before[3], before[1], before[2]) for v in vals])
    lines += [
        "",
        (
            f"b = {b:g}, l = {lexical:g}, l_later = {lexical_later:g} (were {before[0]:g}, {before[1]:g}, "
            f"{before[2]:g}); g = {g:.2f} by val NLL (was {before[3]:.2f}): mean NLL "
            f"{np.mean([nll(v, a, b, g, lexical, lexical_later) for v in vals]):.3f} vs {old_nll:.3f}."
        ),
    ]
    return lines


if __name__ == "__main__":
    sys.exit(main())
