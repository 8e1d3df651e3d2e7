"""MCP server load: concurrent clients calling `search_tools` over streamable HTTP on loopback.

    .venv/bin/python bench/bench_mcp.py [--tools 10000] [--clients 8] [--calls 500] [--mode hybrid]

Builds a bank of real tool texts (the bundled catalogs, replicated as in bench_toolbank.py, embeddings cached
in bench/out/), starts `toolbank serve --transport http` on a free 127.0.0.1 port, and measures, in the same
run: in-process `bank.search` (the floor), one client calling in sequence (the protocol's overhead), and
N concurrent clients (queueing on 2 cores). Queries are real benchmark queries. Run it alone.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import anyio
import click
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_toolbank import OUT, CachedEmbedder, catalog, percentiles, queries

from toolbank import ToolBank, load_embedder
from training.cli import doc_help


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(bank_path: Path, port: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolbank",
            "--bank",
            str(bank_path),
            "serve",
            "--transport",
            "http",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            if process.poll() is not None:
                raise SystemExit(
                    "the server exited; run `toolbank serve --transport http` by hand to see why"
                ) from None
            time.sleep(0.1)
    raise SystemExit("the server did not start in 60 s")


async def client_run(url: str, qs: list[str], k: int, mode: str, times: list[float], errors: list[str]) -> None:
    from mcp import Client

    async with Client(url, read_timeout_seconds=120) as client:
        for q in qs:
            started = time.perf_counter()
            try:
                result = await client.call_tool("search_tools", {"query": q, "k": k, "mode": mode})
                if result.is_error or not result.structured_content["tools"]:
                    errors.append(str(result.content)[:200])
            except Exception as e:  # counted and reported
                errors.append(f"{type(e).__name__}: {e}"[:200])
            times.append(time.perf_counter() - started)


async def load(url: str, per_client: list[list[str]], k: int, mode: str) -> tuple[list[float], list[str], float]:
    times, errors = [], []
    started = time.perf_counter()
    with anyio.fail_after(1800):
        async with anyio.create_task_group() as group:
            for qs in per_client:
                group.start_soon(client_run, url, qs, k, mode, times, errors)
    return times, errors, time.perf_counter() - started


@click.command(help=doc_help(__doc__))
@click.option("--tools", type=int, default=10_000, show_default=True, help="Tools in the bank.")
@click.option("--clients", type=int, default=8, show_default=True, help="Concurrent MCP clients.")
@click.option("--calls", type=int, default=500, show_default=True, help="Calls per client.")
@click.option("--mode", default="hybrid", show_default=True, help="search_tools mode: dense, bm25 or hybrid.")
@click.option("-k", type=int, default=5, show_default=True, help="Tools a search returns.")
@click.pass_context
def main(ctx: click.Context, **_) -> None:
    args = SimpleNamespace(**ctx.params)
    OUT.mkdir(exist_ok=True)
    pool = queries(1000)
    rng = np.random.default_rng(0)
    per_client = [[pool[i] for i in rng.integers(0, len(pool), args.calls)] for _ in range(args.clients)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tools = catalog(args.tools)
        embedder = CachedEmbedder(load_embedder(), OUT / "embeddings.npz")
        embedder.remember([t.text for t in tools])
        bank = ToolBank.create(Path(tmp) / "bank", embedder)
        bank.add(tools)

        floor = []
        bank.search(pool[0], k=args.k, mode=args.mode)
        for q in pool[:200]:
            started = time.perf_counter()
            bank.search(q, k=args.k, mode=args.mode)
            floor.append(time.perf_counter() - started)
        rows.append(("in-process bank.search (no server)", 1, len(floor), *percentiles(floor), 0, None))
        bank.close()

        port = free_port()
        server = start_server(Path(tmp) / "bank", port)
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            anyio.run(load, url, [pool[:20]], args.k, args.mode)  # warm: index, BM25, model
            times, errors, wall = anyio.run(load, url, [pool[:200]], args.k, args.mode)
            rows.append(
                ("MCP, 1 client in sequence", 1, len(times), *percentiles(times), len(errors), len(times) / wall)
            )
            times, errors, wall = anyio.run(load, url, per_client, args.k, args.mode)
            rows.append(
                (
                    f"MCP, {args.clients} concurrent clients",
                    args.clients,
                    len(times),
                    *percentiles(times),
                    len(errors),
                    len(times) / wall,
                )
            )
            if errors:
                print("first errors:", *errors[:3], sep="\n  ")
        finally:
            server.terminate()
            server.wait(timeout=30)

    print(f"\n{args.tools:,} tools, search_tools mode={args.mode} k={args.k}, real queries\n")
    print("| setting | clients | calls | p50 ms | p95 ms | errors | calls/s |\n|---|---:|---:|---:|---:|---:|---:|")
    for name, clients, n, p50, p95, n_errors, rate in rows:
        print(
            f"| {name} | {clients} | {n} | {p50:.1f} | {p95:.1f} | {n_errors} | {'' if rate is None else f'{rate:.1f}'} |"
        )
    (OUT / "mcp.json").write_text(json.dumps({"args": ctx.params, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
