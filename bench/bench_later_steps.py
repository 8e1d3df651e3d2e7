"""`select_tool` latency at later steps (a request's second call onwards), for two policies in one run.

    .venv/bin/python bench/bench_later_steps.py --before DIR [--after autotool/default_policy]
        [--catalog apibank] [--steps 40] [--reason 10]

A later step reads the earlier calls of its request (`context`). What a head does there differs from policy to
policy (its BM25 weight `l_later`, and `explain`, which takes the called tools' directions out of the anchor), so
this times exactly those steps. Builds a bank of the catalog's tools with the embedder the shipped policy reads
(in a temporary folder), loads both policies on it, warms them, then times `select_tool(..., context=...)` one
call at a time, without arguments, in fast mode on the first `--steps` later steps of the catalog's requests and
in reason mode on the first `--reason` of them, alternating the two policies step by step so that both see the
same machine load. Prints a Markdown table: p50 and p95 per policy and mode, and the ratio of the p50s. Run it
alone.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).parents[1]))
sys.path.insert(0, str(Path(__file__).parent))
from bench_embedders import p

from autotool import Policy, select_tool
from autotool.benchmarks import load_benchmark, steps_of
from autotool.prompts import StepRecord
from autotool.select import SHIPPED_POLICY
from toolbank import ToolBank


def later_head(policy: Policy) -> str:
    """The head's later-step weights, for the table."""
    return f"l_later {policy.head.lexical_later.item():.2f}, explain {policy.head.explain.item():.2f}"


@click.command(help=__doc__)
@click.option(
    "--before",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="The policy to compare against (a policy folder).",
)
@click.option(
    "--after",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=SHIPPED_POLICY,
    show_default=True,
    help="The policy being measured.",
)
@click.option("--catalog", default="apibank", show_default=True, help="A vendored catalog with multi-call requests.")
@click.option("--steps", default=40, show_default=True, help="Later steps timed in fast mode.")
@click.option("--reason", default=10, show_default=True, help="Of them, the first N timed in reason mode too.")
def main(before: Path, after: Path, catalog: str, steps: int, reason: int) -> None:
    bench = load_benchmark(catalog)
    later = [s for q in bench.queries for s in steps_of(q) if s.index > 0][:steps]
    if not later:
        raise click.UsageError(f"{catalog} has no request with more than one call")
    policies = {"before": before, "after": after}
    with tempfile.TemporaryDirectory() as tmp:
        bank = ToolBank.create(Path(tmp) / "bank", "tools")  # the embedder new banks get
        bank.add(bench.tools)
        bank.warm()
        loaded = {who: Policy.load(folder, bank) for who, folder in policies.items()}
        items = []
        for step in later:
            context = [
                StepRecord("", bank.get(c["tool"]).qualified_name, c.get("args") or {})
                for c in step.query.calls[: step.index]
            ]
            items.append((step.query.text, context))
        for policy in loaded.values():
            policy.warm()
            select_tool(items[0][0], bank, policy, mode="reason", context=items[0][1], arguments=False)
        times = {(who, mode): [] for who in policies for mode in ("fast", "reason")}
        for i, (request, context) in enumerate(items):
            for mode in ("fast", "reason") if i < reason else ("fast",):
                for who, policy in loaded.items():
                    started = time.perf_counter()
                    select_tool(request, bank, policy, mode=mode, context=context, arguments=False)
                    times[who, mode].append(time.perf_counter() - started)
    print(
        f"`select_tool` at {catalog}'s later steps, no arguments ({len(items)} fast, {min(reason, len(items))} "
        "reason), one call at a time, the two policies alternating:\n"
    )
    print("| policy | later-step head | mode | p50 ms | p95 ms |")
    print("|---|---|---|---:|---:|")
    for mode in ("fast", "reason"):
        for who, folder in policies.items():
            ms = [1000 * s for s in times[who, mode]]
            head = later_head(loaded[who])
            print(f"| {who} ({os.path.relpath(folder)}) | {head} | {mode} | {p(ms, 0.5):.1f} | {p(ms, 0.95):.1f} |")
    for mode in ("fast", "reason"):
        ratio = p(times["after", mode], 0.5) / p(times["before", mode], 0.5)
        print(f"\np50 ratio after / before, {mode}: {ratio:.2f}")


if __name__ == "__main__":
    main()
