"""Arguments with and without the schema grammar: latency of a `select_tool` call that fills them, and how often
they validate, on real Seal-Tools unseen-test requests, with the shipped policy in fast mode.

    .venv/bin/python bench/bench_arguments.py [--queries 30] [--mode fast]

Run it alone. Each request is timed both ways, one right after the other (the order alternates), so the two
columns share the machine's noise; the ratio is the figure to read. Prints a Markdown table.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click
import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1]))

from autotool.benchmarks import benchmark_bank, load_benchmark, load_split, select_queries
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY, select_steps
from autotool.selection import StepInput
from training.cli import doc_help


@click.command(help=doc_help(__doc__))
@click.option("--queries", type=int, default=30, show_default=True, help="Requests timed (seeded sample).")
@click.option("--mode", type=click.Choice(["fast", "reason"]), default="fast", show_default=True)
def main(queries: int, mode: str) -> None:
    bench = load_benchmark("seal_tools")
    bank = benchmark_bank(bench)
    policy = Policy.load(SHIPPED_POLICY, bank)
    sample = select_queries(bench, load_split(bench, 0), "unseen-test", limit=queries, seed=1)
    policy.warm()
    select_steps(policy, bank, [StepInput(sample[0].text)], mode=mode, min_cosine=0.0)  # first call's set-up
    seconds, valid = {True: [], False: []}, {True: [], False: []}
    for i, query in enumerate(sample):
        order = [True, False] if i % 2 else [False, True]
        for grammar in order:
            started = time.perf_counter()
            (selection,) = select_steps(
                policy, bank, [StepInput(query.text)], mode=mode, grammar=grammar, min_cosine=0.0
            )
            seconds[grammar].append(time.perf_counter() - started)
            valid[grammar].append(selection.arguments is not None)
    print(f"Seal-Tools unseen-test, {len(sample)} requests, {mode} mode, shipped policy, one call at a time\n")
    print("| arguments | p50 s | p95 s | mean s | schema-valid |")
    print("|---|---:|---:|---:|---:|")
    for grammar, label in ((False, "unconstrained (before)"), (True, "schema grammar (after)")):
        s = np.array(seconds[grammar])
        print(
            f"| {label} | {np.percentile(s, 50):.2f} | {np.percentile(s, 95):.2f} | {s.mean():.2f} | "
            f"{np.mean(valid[grammar]):.3f} |"
        )
    ratio = np.median(np.array(seconds[True]) / np.array(seconds[False]))
    print(f"\nmedian per-request ratio, grammar / unconstrained: {ratio:.2f}")


if __name__ == "__main__":
    main()
