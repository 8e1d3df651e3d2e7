"""select_tool latency: fast and reason mode against dense search on the same bank, at 1k and 10k tools.

    .venv/bin/python bench/bench_select.py [--sizes 1000,10000] [--queries 40] [--fast-only [--shipped]]

Run it alone. Banks are built from real tool texts (see bench_toolbank.py; embeddings cached in bench/out/).
Rows: dense search; `fast` with the untrained policy (W = 0: no LM pass is needed, the anchor is the query
embedding); `fast` with a non-zero W (as a trained policy: one LM forward pass); `reason` (a rationale of at
most 32 new tokens, then the anchor); `reason` + arguments (up to 96 more tokens). With --shipped: the shipped
policy in fast mode with its reranker and without (the baseline of the same run), in reason mode, and the same
weights loaded for training (adapters folded in and out at every call, no prompt cache) as the baseline.
Prints a Markdown table.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import click
import torch

sys.path.insert(0, str(Path(__file__).parents[1]))
sys.path.insert(0, str(Path(__file__).parent))
from bench_toolbank import OUT, CachedEmbedder, catalog, percentiles, queries

from autotool import Policy, select_tool
from autotool.select import SHIPPED_POLICY, default_policy
from toolbank import ToolBank, load_embedder
from training.cli import doc_help


def timed(fn, items) -> tuple[float, float]:
    fn(items[0])  # warm
    seconds = []
    for item in items:
        started = time.perf_counter()
        fn(item)
        seconds.append(time.perf_counter() - started)
    return percentiles(seconds)


def with_arguments(query, bank, policy):
    select_tool(query, bank, policy, mode="reason")


@click.command(help=doc_help(__doc__))
@click.option("--sizes", default="1000,10000", show_default=True, help="Bank sizes in tools, comma-separated.")
@click.option("--queries", type=int, default=40, show_default=True, help="Real benchmark queries timed.")
@click.option("--fast-only", is_flag=True, help="Skip the reason rows (seconds a query).")
@click.option("--shipped", is_flag=True, help="With --fast-only: still time the shipped policy.")
@click.pass_context
def main(ctx: click.Context, **_) -> None:
    args = SimpleNamespace(**ctx.params)
    sizes = [int(s) for s in args.sizes.split(",")]
    OUT.mkdir(exist_ok=True)
    tools = catalog(max(sizes))
    embedder = CachedEmbedder(load_embedder(), OUT / "embeddings.npz")  # shared with bench_toolbank.py
    embedder.remember([t.text for t in tools])
    qs = queries(args.queries, seed=1)
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            bank = ToolBank.create(Path(tmp) / "bank", embedder)
            bank.add(tools[:n])
            torch.manual_seed(0)
            untrained = Policy.create(bank)
            shaped = Policy.create(bank)
            torch.nn.init.normal_(shaped.head.W.weight, std=0.01)
            rows.append((n, "dense search (k=5)", *timed(lambda q: bank.search(q, k=5, mode="dense"), qs)))
            rows.append(
                (
                    n,
                    "select_tool fast, untrained (W = 0)",
                    *timed(lambda q: select_tool(q, bank, untrained, mode="fast", arguments=False), qs),
                )
            )
            rows.append(
                (
                    n,
                    "select_tool fast, W != 0 (LM forward)",
                    *timed(lambda q: select_tool(q, bank, shaped, mode="fast", arguments=False), qs),
                )
            )
            shaped.save(Path(tmp) / "shaped")  # loaded, it is frozen: adapters folded once, system prompt cached
            loaded = Policy.load(Path(tmp) / "shaped", bank)
            rows.append(
                (
                    n,
                    "select_tool fast, W != 0, loaded policy (prompt cache)",
                    *timed(lambda q: select_tool(q, bank, loaded, mode="fast", arguments=False), qs),
                )
            )
            if not args.fast_only or args.shipped:
                shipped = default_policy(bank)  # the trained default: it writes its own (short) rationales
                # Its reranker (a cross-encoder over fast mode's best five, autotool/rerank.py), on and off
                for rerank in (False, True):
                    rows.append(
                        (
                            n,
                            f"select_tool fast, shipped policy, {'reranked' if rerank else 'no rerank'}",
                            *timed(
                                lambda q, r=rerank: select_tool(
                                    q, bank, shipped, mode="fast", arguments=False, rerank=r
                                ),
                                qs,
                            ),
                        )
                    )
                rows.append(
                    (
                        n,
                        "select_tool reason, shipped policy, no rerank",
                        *timed(
                            lambda q: select_tool(q, bank, shipped, mode="reason", arguments=False, rerank=False), qs
                        ),
                    )
                )
                rows.append(
                    (
                        n,
                        "select_tool reason, shipped policy",
                        *timed(lambda q: select_tool(q, bank, shipped, mode="reason", arguments=False), qs),
                    )
                )
                rows.append(
                    (
                        n,
                        "select_tool reason + arguments, shipped policy",
                        *timed(lambda q: with_arguments(q, bank, shipped), qs[: max(5, len(qs) // 4)]),
                    )
                )
                # Baseline for the two rows above: the same weights loaded for training fold the adapters in and
                # out at every call and do not reuse the system prompt's KV cache (how every policy ran before).
                unfrozen = Policy.load(SHIPPED_POLICY, bank, trainable=True)
                rows.append(
                    (
                        n,
                        "select_tool reason, shipped policy, adapters folded per call, no prompt cache",
                        *timed(lambda q: select_tool(q, bank, unfrozen, mode="reason", arguments=False), qs),
                    )
                )
                del unfrozen
            if not args.fast_only:
                rows.append(
                    (
                        n,
                        "select_tool reason (<= 32 rationale tokens)",
                        *timed(lambda q: select_tool(q, bank, shaped, mode="reason", arguments=False), qs),
                    )
                )
                rows.append(
                    (
                        n,
                        "select_tool reason + arguments",
                        *timed(lambda q: with_arguments(q, bank, shaped), qs[: max(5, len(qs) // 4)]),
                    )
                )
            print(f"{n:,} tools done", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (OUT / "select.json").write_text(json.dumps({"rows": rows, "peak_rss_mib": peak}, indent=2))
    print("\n| tools | call | p50 ms | p95 ms |\n|---:|---|---:|---:|")
    for n, what, p50, p95 in rows:
        print(f"| {n:,} | {what} | {p50:.1f} | {p95:.1f} |")
    print(f"\npeak RSS {peak:.0f} MiB; torch threads {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
