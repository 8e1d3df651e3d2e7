"""Fast mode's BM25 weight l, fitted on the foreign validation catalogs, judged in both leave-one-out directions.

    OMP_NUM_THREADS=2 python experiments/2026-12-04-lexical-weight-loo/sweep.py --out experiments/2026-12-04-lexical-weight-loo

Fast mode without the reranker chooses by `e'.e_k + l bm25_k` with e' = E(request) (a = 1, W = 0; fast mode writes
no rationale): only the embedder and l move its choice. For each direction, the served path
(`select_steps(..., mode="fast", arguments=False, rerank=False)`) runs once per l of the grid on every request of
API-Bank and ToolAlpaca (validation) and on the judged catalog's 300 requests (seed 0, the requests of the
leave-one-out records), one call per request, any gold tool a hit. The fitted l is the one with the best mean over
the two validation catalogs (ties go to the smaller l); the judged catalog's curve is reported beside it and is
not used to choose anything.

Directions (the policy is the shipped one, its head's l replaced; its language model is never loaded):
- without Seal-Tools: the `tools` embedder (fine-tuned on MetaTool only), judged on seal_tools:all:300;
- without MetaTool: the stock embedder (the one fine-tuned on Seal-Tools and BFCL in
  2026-12-03-loo-metatool-full was lost with its machine; it was level with stock on MetaTool), judged on
  metatool:all:300.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
import time
from pathlib import Path

import click

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from autotool.benchmarks import benchmark_bank, catalog_queries  # noqa: E402
from autotool.metrics import paired_bootstrap  # noqa: E402
from autotool.select import SHIPPED_POLICY  # noqa: E402
from autotool.selection import StepInput  # noqa: E402

_spec = importlib.util.spec_from_file_location("judge", ROOT / "experiments/2026-12-01-three-catalogs/judge.py")
judge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(judge)

GRID = (0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0)
VALIDATION = ("apibank", "toolalpaca")
DIRECTIONS = {"without seal_tools": ("tools", "seal_tools:all:300"), "without metatool": ("stock", "metatool:all:300")}


def curve(spec: str, embedder: str) -> dict:
    """hit@1 per request of `spec` for every l of GRID, and the stock baselines on the same requests."""
    bench, queries = catalog_queries(spec)
    items = [StepInput(q.text, "", ()) for q in queries]
    golds = [set(q.gold_tools) for q in queries]
    stock, bank = benchmark_bank(bench, "stock"), benchmark_bank(bench, embedder)
    hits = {m: judge.searched(stock, items, golds, m) for m in ("bm25", "dense", "hybrid")}
    policy = judge.policy_for(SHIPPED_POLICY, bank)
    head = policy.head_values
    for lexical in GRID:
        policy._saved_values = dataclasses.replace(head, lexical=lexical, lexical_later=lexical)
        hits[f"l={lexical:g}"] = judge.selected(policy, bank, items, golds, "fast:norerank", 32)
    return {"ids": [q.id for q in queries], "per_item": hits}


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


@click.command(help=__doc__)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    results, lines = {}, ["# fast mode's BM25 weight l, without the reranker, per request", ""]
    for direction, (embedder, judged) in DIRECTIONS.items():
        began = time.perf_counter()
        curves = {spec: curve(spec, embedder) for spec in (*VALIDATION, judged)}
        fitted = max(GRID, key=lambda x: (mean([mean(curves[v]["per_item"][f"l={x:g}"]) for v in VALIDATION]), -x))
        hits = curves[judged]["per_item"]
        best = max(("bm25", "dense", "hybrid"), key=lambda m: mean(hits[m]))
        paired = paired_bootstrap(hits[f"l={fitted:g}"], hits[best])
        results[direction] = {"embedder": embedder, "judged": judged, "fitted_l": fitted, "best_baseline": best,
                              "fitted_minus_best": paired, "seconds": round(time.perf_counter() - began, 1),
                              "curves": curves}
        specs = [*VALIDATION, judged]
        lines += [f"## {direction}: embedder `{embedder}`, judged on {judged}", "",
                  "| l | " + " | ".join(specs) + " | validation mean |", "|---:|" + "---:|" * (len(specs) + 1)]
        for x in GRID:
            row = [mean(curves[s]["per_item"][f"l={x:g}"]) for s in specs]
            mark = "**" if x == fitted else ""
            lines.append(f"| {mark}{x:g}{mark} | " + " | ".join(f"{v:.3f}" for v in row)
                         + f" | {mean(row[:2]):.3f} |")
        lines += ["", "Stock baselines: " + "; ".join(
            f"{s}: " + ", ".join(f"{m} {mean(curves[s]['per_item'][m]):.3f}" for m in ("bm25", "dense", "hybrid"))
            for s in specs), "",
            f"Fitted l = {fitted:g} on the validation catalogs; on {judged} it scores "
            f"{mean(hits[f'l={fitted:g}']):.3f}, minus {best} ({mean(hits[best]):.3f}): "
            f"{paired['mean']:+.3f} [{paired['ci_low']:+.3f}, {paired['ci_high']:+.3f}]. "
            f"{results[direction]['seconds']:.0f} s.", ""]
        print("\n".join(lines[-len(GRID) - 8:]), flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "results.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
