"""Cold start of the command line: wall time of one `toolbank search` / `autotool select` process, and of the
first MCP `select_tool` call after `autotool serve --preload`.

    .venv/bin/python bench/bench_cli.py [--bank /tmp/b4k] [--repeat 5]

Every row starts a fresh Python process (`python -m toolbank ...`, `python -m autotool ...`) and times it from
spawn to exit, so imports, opening the bank, loading the indexes and the query embedding are all included; the
table gives the median, min and max of `--repeat` runs and the median peak RSS. The bank is `--bank`; when the
folder is missing it is built from the bundled Seal-Tools catalog (4,076 tools, the default embedder; minutes).
Run it alone (two jobs on 2 cores slow everything here several-fold). `--code DIR` runs the commands with the
packages in DIR instead (`git archive OLD toolbank autotool | tar -x -C DIR`), to time an older version in the
same sitting (without the serve rows: older versions have no `--preload`). The caches it relies on (the ONNX export of
the embedder, the converted language model, `bm25.npz` in the bank) are made by a first, untimed run of each
command. Prints a Markdown table.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import click

ROOT = Path(__file__).parents[1]
QUERY = "convert a pdf to text"
CODE = ROOT  # where the commands import toolbank and autotool from (--code)


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one run of `argv`, which must succeed."""
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=CODE, env=os.environ | {"PYTHONPATH": str(CODE)}
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    stderr = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise click.ClickException(f"{' '.join(argv)} failed:\n{stderr[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def row(label: str, command: str, runs: list[tuple[float, float]]) -> str:
    walls = [w for w, _ in runs]
    return (
        f"| {label} | `{command}` | {statistics.median(walls):.2f} | {min(walls):.2f} | {max(walls):.2f} | "
        f"{statistics.median(r for _, r in runs):.0f} |"
    )


class Server:
    """`autotool serve` over stdio, spoken to in raw JSON-RPC (one request at a time); `ready` is the time from
    spawn to its start line (`ready: ...` with --preload, `serving ...` without)."""

    def __init__(self, argv: list[str]):
        self.start = time.perf_counter()
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
        )
        self.stderr: list[str] = []
        line = self.process.stderr.readline()
        while line and not line.startswith(("ready:", "serving ")):
            self.stderr.append(line)
            line = self.process.stderr.readline()
        if not line:
            raise click.ClickException("the server exited before it was ready:\n" + "".join(self.stderr)[-2000:])
        self.stderr.append(line)
        self.ready = time.perf_counter() - self.start
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()
        self.next_id = 0
        self.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench_cli", "version": "0"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        for line in self.process.stdout:
            message = json.loads(line)
            if message.get("id") == self.next_id:
                if "error" in message or message["result"].get("isError"):
                    raise click.ClickException(f"{method} failed: {message}")
                return message["result"]
        raise click.ClickException("the server closed its output:\n" + "".join(self.stderr)[-2000:])

    def call(self, name: str, arguments: dict) -> tuple[float, dict]:
        start = time.perf_counter()
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        return time.perf_counter() - start, result

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def ensure_bank(path: Path) -> None:
    if (path / "manifest.json").exists():
        return
    click.echo(f"building {path} from the Seal-Tools catalog (minutes)...", err=True)
    sys.path.insert(0, str(ROOT))
    from toolbank import ToolBank, load_file

    ToolBank.open(path).add(load_file(ROOT / "autotool" / "data" / "seal_tools" / "tools.jsonl")[0], progress=True)


@click.command(help=__doc__)
@click.option(
    "--bank",
    "bank_path",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("/tmp/b4k"),
    show_default=True,
    help="The bank (built from Seal-Tools when missing).",
)
@click.option("--repeat", default=5, show_default=True, type=click.IntRange(min=1), help="Runs of each command.")
@click.option("--skip-serve", is_flag=True, help="Leave out the `autotool serve --preload` rows.")
@click.option(
    "--code",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Run the commands with the toolbank and autotool packages in this folder (an older version).",
)
def main(bank_path: Path, repeat: int, skip_serve: bool, code: Path | None) -> None:
    global CODE
    ensure_bank(bank_path)
    if code is not None:
        CODE, skip_serve = code.resolve(), True
    py = sys.executable
    commands = [
        (f"toolbank search, {mode}", [py, "-m", "toolbank", "--bank", str(bank_path), "search", QUERY, "--mode", mode])
        for mode in ("bm25", "dense", "hybrid")
    ]
    commands += [
        (
            "autotool select --mode fast (no arguments)",
            [py, "-m", "autotool", "select", QUERY, "--mode", "fast", "--bank", str(bank_path)],
        ),
        ("python -c 'import torch' (for scale)", [py, "-c", "import torch"]),
        ("python -c 'import numpy, faiss' (for scale)", [py, "-c", "import numpy, faiss"]),
    ]
    lines = ["| what | command | median s | min s | max s | peak RSS MiB |", "|---|---|---:|---:|---:|---:|"]
    for label, argv in commands:
        timed(argv)  # untimed: makes the caches a first run makes (ONNX export, bm25.npz)
        runs = [timed(argv) for _ in range(repeat)]
        shown = " ".join(["python" if a == py else (a if " " not in a else f'"{a}"') for a in argv])
        lines.append(row(label, shown.replace(str(bank_path), "BANK"), runs))
        click.echo(lines[-1], err=True)
    if not skip_serve:
        argv = [py, "-m", "autotool", "serve", "--bank", str(bank_path), "--preload"]
        ready, first, second, fast, noisy = [], [], [], [], []
        for _ in range(repeat):
            server = Server(argv)
            try:
                ready.append(server.ready)
                first.append(server.call("select_tool", {"query": QUERY})[0])  # reason mode, with arguments
                second.append(server.call("select_tool", {"query": QUERY})[0])  # the same work again
                fast.append(
                    server.call("select_tool", {"query": "book a flight to Rome", "mode": "fast", "arguments": False})[
                        0
                    ]
                )
            finally:
                server.close()
            noisy += [line for line in server.stderr if "DEBUG" in line or "it/s]" in line or "%|" in line]
        command = "python -m autotool serve --bank BANK --preload"
        for label, values in [
            ("serve --preload: spawn to `ready:` line", ready),
            ("first MCP select_tool (reason, arguments)", first),
            ("the same select_tool again", second),
            ("then select_tool fast, no arguments", fast),
        ]:
            lines.append(
                f"| {label} | `{command}` | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} | |"
            )
        cold = []
        for _ in range(repeat):
            server = Server(argv[:-1])  # without --preload: the first call loads the policy
            try:
                cold.append(server.call("select_tool", {"query": QUERY})[0])
            finally:
                server.close()
        lines.append(
            f"| first MCP select_tool without --preload (loads the policy) | `{command.removesuffix(' --preload')}` "
            f"| {statistics.median(cold):.2f} | {min(cold):.2f} | {max(cold):.2f} | |"
        )
        lines.append(f"\nserver stderr lines with DEBUG or a progress bar: {len(noisy)}")
    click.echo("\n".join(lines))


if __name__ == "__main__":
    main()
