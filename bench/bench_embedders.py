"""`select_tool` latency with the stock and the tuned (`tools`) embedder, in one run, on one catalog.

    .venv/bin/python bench/bench_embedders.py [--catalog toolalpaca] [--queries 20] [--reason 8]

Builds a bank of the catalog's tools with each embedder (in a temporary folder; the tools' embedding time is
reported too), warms each (indexes, the ONNX export, the language model), then times `select_tool` one call
at a time, without arguments, in fast mode on `--queries` of the catalog's requests and in reason mode on
the first `--reason` of them, alternating the two banks request by request so that both see the same
machine load. Prints a Markdown table: p50 and p95 per embedder and mode, and the ratio of the p50s. Run it
alone.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).parents[1]))

from autotool import select_tool
from autotool.benchmarks import load_benchmark
from autotool.select import default_policy
from toolbank import ToolBank

EMBEDDERS = ("stock", "tools")


def p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


@click.command(help=__doc__)
@click.option("--catalog", default="toolalpaca", show_default=True)
@click.option("--queries", default=20, show_default=True, help="Requests timed in fast mode.")
@click.option("--reason", default=8, show_default=True, help="Of them, the first N timed in reason mode too.")
def main(catalog, queries, reason):
    bench = load_benchmark(catalog)
    requests = [q.text for q in bench.queries[:queries]]
    with tempfile.TemporaryDirectory() as tmp:
        banks, embed_s = {}, {}
        for spec in EMBEDDERS:
            started = time.perf_counter()
            banks[spec] = ToolBank.create(Path(tmp) / spec, spec)
            banks[spec].add(bench.tools)
            embed_s[spec] = time.perf_counter() - started
            banks[spec].warm()
            default_policy(banks[spec]).warm()
            select_tool(requests[0], bank=banks[spec], mode="reason", arguments=False)  # the first call's set-up
        times = {(spec, mode): [] for spec in EMBEDDERS for mode in ("fast", "reason")}
        for i, request in enumerate(requests):
            for mode in ("fast", "reason") if i < reason else ("fast",):
                for spec in EMBEDDERS:
                    started = time.perf_counter()
                    select_tool(request, bank=banks[spec], mode=mode, arguments=False)
                    times[spec, mode].append(time.perf_counter() - started)
    print(f"{catalog}: {len(bench.tools)} tools; {queries} requests in fast mode, {reason} in reason mode\n")
    print("| embedder | bank built (s) | fast p50 ms | fast p95 ms | reason p50 ms | reason p95 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for spec in EMBEDDERS:
        fast, slow = times[spec, "fast"], times[spec, "reason"]
        print(
            f"| {spec} | {embed_s[spec]:.1f} | {1000 * p(fast, 0.5):.0f} | {1000 * p(fast, 0.95):.0f} "
            f"| {1000 * p(slow, 0.5):.0f} | {1000 * p(slow, 0.95):.0f} |"
        )
    for mode in ("fast", "reason"):
        ratio = statistics.median(times["tools", mode]) / statistics.median(times["default", mode])
        print(f"\np50 ratio tools / default, {mode} mode: {ratio:.2f}")


if __name__ == "__main__":
    main()
