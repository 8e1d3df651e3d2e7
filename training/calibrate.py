"""Fit the anchor head's rationale weight b, lexical weight l and sharpness g on the val split (tools held out
from training).

    python -m training.calibrate POLICY [--bench metatool,seal_tools] [--limit 400] [--no-lexical] [--out FOLDER] [--write]

The policy writes its own greedy rationale for the first step of each val query, as `select_tool` does in
reason mode. With a and W as trained, b and l are chosen on a grid to maximise val hit@1 of
`e'.e_k + l * bm25_k` (the mean over the benchmarks, the whole catalog as candidates; ties go to the smaller
l, then the smaller b), then g to minimise the mean val negative log-likelihood of the gold tool.
`--no-lexical` keeps l at 0 (the selection distribution of ../shared/DESIGN.md alone). Val tools never reach
training inputs and no test split is read, so the test figures stay held out (../shared/DESIGN.md: model
selection on a validation split of tools).

`--write` stores b, l and g in the policy's `anchor_head.safetensors` and records the fit in its manifest
(`calibrated`). `--out` gets `results.md` (the grid) and `rationales-BENCH.jsonl` (what the policy wrote).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from autotool.policy import Policy, PolicyError
from autotool.rollout import Rollout, StepInput, ToolTable, _decoder_hidden, rollout
from eval.benchmarks import BenchmarkError, Step, load_benchmark, load_split, select_queries, steps_of
from eval.harness import eval_bank

B_GRID = [round(0.05 * i, 2) for i in range(21)]  # 0 .. 1
L_GRID = [0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5]
G_GRID = np.geomspace(1.0, 200.0, 47).tolist()


@dataclass
class ValSteps:
    """First steps of val queries with what the policy wrote for them and the terms of its anchor."""

    bench: str
    table: ToolTable
    steps: list[Step]
    written: list[Rollout]
    query: torch.Tensor  # (n, dim) E(query)
    rationale: torch.Tensor  # (n, dim) E(rationale), zeros where the policy wrote none
    hidden_term: torch.Tensor  # (n, dim) W h (zeros while W is zero)
    lexical: torch.Tensor  # (n, n_tools) BM25 of the query against each tool, over the query's best
    gold: torch.Tensor  # (n,) index of the gold tool in `table`


def write_rationales(policy: Policy, bench_name: str, limit: int, batch_size: int = 16, seed: int = 0) -> ValSteps:
    """The policy's greedy rationales for the first step of (a seeded sample of `limit`) val queries."""
    bench = load_benchmark(bench_name)
    bank = eval_bank(bench, policy.embedder)
    table = ToolTable.from_bank(bank)
    steps = [s for q in select_queries(bench, load_split(bench, seed), "val", limit=limit or None, seed=seed)
             for s in steps_of(q) if s.index == 0]
    written, hidden = [], []
    for start in tqdm(range(0, len(steps), batch_size), desc=f"rationales ({bench_name} val)", unit="batch"):
        batch = [r for (r,) in rollout(policy, table, [StepInput(s.query.text) for s in steps[start:start + batch_size]],
                                        sample=False, call_tokens=1)]
        if policy.head.uses_hidden:
            with torch.inference_mode():
                h, mask = _decoder_hidden(policy, [r.ids[:r.anchor_position + 1] for r in batch])
                hidden.append(h[torch.arange(len(batch)), mask.sum(1) - 1].float())
        written += batch
    with torch.no_grad():
        hidden_term = (policy.head.W(torch.nn.functional.normalize(torch.cat(hidden), dim=-1)) if hidden
                       else torch.zeros(len(written), table.vectors.shape[1]))
    return ValSteps(bench.name, table, steps, written, torch.stack([r.query_vector for r in written]),
                    torch.stack([r.rationale_vector for r in written]), hidden_term,
                    table.lexical([s.query.text for s in steps]),
                    torch.tensor([table.index[s.gold] for s in steps]))


def scores(val: ValSteps, a: float, b: float, lexical: float = 0.0) -> torch.Tensor:
    """(n, n_tools) `e'.e_k + l bm25_k`: cosine of each step's anchor `normalize(a q + W h + b r)` with every
    tool, plus the lexical prior."""
    anchor = torch.nn.functional.normalize(a * val.query + val.hidden_term + b * val.rationale, dim=-1)
    return anchor @ val.table.vectors.T + lexical * val.lexical


def hit_at_1(val: ValSteps, a: float, b: float, lexical: float = 0.0) -> float:
    return float((scores(val, a, b, lexical).argmax(1) == val.gold).float().mean())


def nll(val: ValSteps, a: float, b: float, g: float, lexical: float = 0.0) -> float:
    """Mean -log p(gold | e') under `softmax(2 g (cos + l bm25))` over the whole catalog."""
    logp = torch.log_softmax(2.0 * g * scores(val, a, b, lexical), dim=1)
    return float(-logp[torch.arange(len(val.gold)), val.gold].mean())


def fit(vals: list[ValSteps], a: float, lexical_grid: list[float] = L_GRID
        ) -> tuple[float, float, float, dict[tuple[float, float], list[float]]]:
    """(b, l, g, {(b, l): [val hit@1 per benchmark]}): b and l by mean hit@1 (ties to the smaller l, then
    the smaller b), then g by mean NLL."""
    table = {(b, l): [hit_at_1(v, a, b, l) for v in vals] for b in B_GRID for l in lexical_grid}
    best_b, best_l = max(table, key=lambda bl: (round(float(np.mean(table[bl])), 6), -bl[1], -bl[0]))
    best_g = min(G_GRID, key=lambda g: float(np.mean([nll(v, a, best_b, g, best_l) for v in vals])))
    return best_b, best_l, best_g, table


def write_head(policy_path: Path, policy: Policy, b: float, g: float, record: dict, lexical: float = 0.0) -> None:
    """Store b, g and l in the policy folder's head file and the fit in its manifest (each replaced atomically)."""
    with torch.no_grad():
        policy.head.b.fill_(b)
        policy.head.log_g.fill_(math.log(g))
        policy.head.lexical.fill_(lexical)
    policy.save_head(policy_path)
    manifest_file = policy_path / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["calibrated"] = record
    tmp = manifest_file.with_name(f".{manifest_file.name}.{os.getpid()}")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(tmp, manifest_file)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("policy", type=Path, help="a policy folder")
    parser.add_argument("--bench", default="metatool,seal_tools", help="benchmarks whose val splits to fit on")
    parser.add_argument("--limit", type=int, default=400, help="val queries per benchmark (seeded sample; 0: all)")
    parser.add_argument("--seed", type=int, default=0, help="split seed (the one the policy was trained with)")
    parser.add_argument("--out", type=Path, default=None, help="folder for results.md and the rationales")
    parser.add_argument("--no-lexical", dest="lexical", action="store_false",
                        help="keep the lexical prior's weight l at 0 (fit b and g only)")
    parser.add_argument("--write", action="store_true", help="store the fitted b, l and g in the policy folder")
    args = parser.parse_args(argv)
    benches = [b.strip() for b in args.bench.split(",") if b.strip()]
    try:  # every argument checked before the minutes of writing rationales
        if not benches or args.limit < 0:
            raise ValueError(f"--bench names no benchmark ({args.bench!r})" if not benches
                             else f"--limit must be 0 (all) or more, not {args.limit}")
        for name in benches:
            load_benchmark(name)
        policy = Policy.load(args.policy)
        if policy.head.anchor != "residual":
            raise PolicyError(f"{args.policy} has a {policy.head.anchor} anchor; only the residual anchor mixes "
                              "in E(rationale)")
    except (BenchmarkError, PolicyError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    vals = [write_rationales(policy, name, args.limit, seed=args.seed) for name in benches]
    a = policy.head.a.item()
    grid = L_GRID if args.lexical else [0.0]
    b, lexical, g, table = fit(vals, a, grid)
    before = (policy.head.b.item(), policy.head.lexical.item(), policy.head.log_g.exp().item())
    plain_b = max(B_GRID, key=lambda v: (round(float(np.mean(table[v, 0.0])), 6), -v))  # the best b without l
    flag = "" if args.lexical else " --no-lexical"
    lines = [f"# Calibration of {args.policy} on the val split (seed {args.seed})", "",
             f"`python -m training.calibrate {args.policy} --bench {args.bench} --limit {args.limit}{flag}`", "",
             ("Val hit@1 (whole catalog as candidates) of `e'.e_k + l bm25_k`, the anchor "
              f"`e' = normalize(a E(query) + W h + b E(rationale))`, a = {a:.3f}, and bm25_k the query's BM25 score "
              "against tool k over its best; the policy wrote its own greedy rationale for each query's first "
              f"step. Mean over {', '.join(f'{v.bench} ({len(v.gold)} queries)' for v in vals)}:"), "",
             "| b \\ l | " + " | ".join(f"{v:g}" for v in grid) + " |", "|---:|" + "---:|" * len(grid)]
    for value in B_GRID:
        lines.append(f"| {value:g} | " + " | ".join(
            f"**{np.mean(table[value, v]):.3f}**" if (value, v) == (b, lexical) else f"{np.mean(table[value, v]):.3f}"
            for v in grid) + " |")
    lines += ["", "| anchor | " + " | ".join(v.bench for v in vals) + " | mean |", "|---|" + "---:|" * (len(vals) + 1)]
    for label, key in [("E(query) (dense retrieval)", (0.0, 0.0)), ("E(query) + l bm25 (fast mode)", (0.0, lexical)),
                       (f"rationale, b = {plain_b:g}, no lexical prior", (plain_b, 0.0)),
                       (f"rationale, b = {b:g}, l = {lexical:g} (chosen)", (b, lexical))]:
        lines.append(f"| {label} | " + " | ".join(f"{h:.3f}" for h in table[key]) + f" | {np.mean(table[key]):.3f} |")
    lines += ["", (f"b = {b:g}, l = {lexical:g} (were {before[0]:g}, {before[1]:g}); g = {g:.2f} by val NLL (was "
                   f"{before[2]:.2f}): mean NLL {np.mean([nll(v, a, b, g, lexical) for v in vals]):.3f} vs "
                   f"{np.mean([nll(v, a, before[0], before[2], before[1]) for v in vals]):.3f}.")]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.md").write_text(report)
        for v in vals:
            with open(args.out / f"rationales-{v.bench}.jsonl", "w") as f:
                f.writelines(json.dumps({"query": s.query.text, "gold": s.gold, "rationale": r.rationale},
                                       ensure_ascii=False) + "\n" for s, r in zip(v.steps, v.written))
    if args.write:
        write_head(args.policy, policy, b, g, {
            "b": b, "lexical": lexical, "g": round(g, 4), "split_seed": args.seed, "benchmarks": benches,
            "val_queries": {v.bench: len(v.gold) for v in vals},
            "val_hit@1": {v.bench: table[b, lexical][i] for i, v in enumerate(vals)},
            "val_hit@1_b0": {v.bench: table[0.0, 0.0][i] for i, v in enumerate(vals)},
            "command": (f"python -m training.calibrate {args.policy} --bench {args.bench} --limit {args.limit}"
                        f"{flag} --write")}, lexical)
        print(f"wrote b, l and g to {args.policy / 'anchor_head.safetensors'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
