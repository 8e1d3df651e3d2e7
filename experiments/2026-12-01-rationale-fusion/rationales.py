"""The shipped policy's reason-mode rationale for every validation step, written once so that ways of combining
it with the request can be replayed without the language model (issue #23, lever 2). Validation only: every
request of API-Bank and ToolAlpaca (foreign validation) and the val splits of Seal-Tools and MetaTool.

    python experiments/2026-12-01-rationale-fusion/rationales.py [CATALOGS...]

Writes `rationales-<catalog>.jsonl` here: one line per step, {"step", "rationale", "served"} where `served` is
the served path's first choice (reason mode, no arguments, every tool in the bank, as `python -m eval` runs it).
A rationale does not depend on the bank's embedder, so the file serves replays on either.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, load_benchmark, load_split, select_queries, step_input, steps_of
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY, select_steps

HERE = Path(__file__).parent
CATALOGS = ("apibank", "toolalpaca", "seal_tools", "metatool")


def validation_steps(catalog):
    bench = load_benchmark(catalog)
    if catalog in ("seal_tools", "metatool"):
        queries = select_queries(bench, load_split(bench, 0), "val")
    else:
        queries = bench.queries
    return bench, [s for q in queries for s in steps_of(q)]


@click.command()
@click.argument("catalogs", nargs=-1)
@click.option("--batch", default=16, show_default=True)
def main(catalogs, batch):
    for catalog in catalogs or CATALOGS:
        bench, steps = validation_steps(catalog)
        bank = benchmark_bank(bench)
        policy = Policy.load(SHIPPED_POLICY, bank)
        start, rows = time.time(), []
        for i in range(0, len(steps), batch):
            chunk = steps[i : i + batch]
            selections = select_steps(
                policy, bank, [step_input(bank, s) for s in chunk], k=1, mode="reason", arguments=False, min_cosine=0.0
            )
            for step, sel in zip(chunk, selections):
                rows.append({"step": step.id, "rationale": sel.rationale, "served": sel.candidates[0][0].name})
            print(f"{catalog}: {len(rows)}/{len(steps)} steps, {time.time() - start:.0f} s", file=sys.stderr)
        (HERE / f"rationales-{catalog}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
