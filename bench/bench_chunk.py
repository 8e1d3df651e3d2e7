"""Peak memory and time of one training backward: every rollout at once against a chunk of rollouts at a time.

    python bench/bench_chunk.py [--bench seal_tools] [--policy autotool/default_policy] [--chunks 16,4,2]

One step's rollouts (4 queries x 4 of the benchmark's train split, as in the default GRPO config and Phase II's
2 x 8) are written once by the policy and cached in `bench/out/`; then each (loss, chunk) pair runs in a
process of its own, since a process's peak resident memory (VmHWM) only grows: it loads the policy and the
rollouts, notes its peak, runs the GRPO backward (`training.phase1.grpo_backward`) or the Phase II one
(`training.phase2.ranking_backward`) at that chunk size, and reports the peak again and the seconds. A chunk
of 16 is the code before chunking (one forward-backward over all rollouts). Run alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from training.cli import doc_help  # noqa: E402

OUT = ROOT / "bench" / "out"


def peak_gib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 2**20
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def trainer(bench: str, policy: str, tmp: Path):
    from training.phase2 import Phase2, Phase2Config

    config = Phase2Config(benchmark=bench, init=policy, out=str(tmp), call_tokens=64)
    run = Phase2(config)
    run.policy = run._load(Path(policy))
    return run


def write_rollouts(bench: str, policy: str, cache: Path) -> None:
    import torch

    run = trainer(bench, policy, cache.with_suffix(".run"))
    torch.manual_seed(0)
    groups, terms = run.rewarded_rollouts(run.batch(0, 4), 4, 1.0, run.config.rank.reward)
    torch.save({"groups": groups, "terms": terms}, cache)


def measure(bench: str, policy: str, cache: Path, loss: str, chunk: int) -> dict:
    import torch

    from training import loop, phase1, phase2

    run = trainer(bench, policy, cache.with_suffix(".run"))
    saved = torch.load(cache, weights_only=False)
    groups, terms = saved["groups"], saved["terms"]
    flat = [r for g in groups for r in g]
    reference = run.frozen_copy()
    run.policy.model.train()
    before = peak_gib()
    started = time.perf_counter()
    if loss == "grpo":
        rewards = torch.tensor([[t["reward"] for t in g] for g in terms])
        advantages = phase1.group_advantages(rewards).flatten()
        chunks = loop.chunked(flat, chunk)
        with torch.no_grad():
            refs = [phase1.logprobs(reference, run.table, p) for p in chunks]
        phase1.grpo_backward(run.policy, run.table, chunks, advantages, refs, [None] * len(chunks), phase1.GRPOConfig())
    else:
        values = torch.tensor([[phase2.rank_value(t) for t in g] for g in terms])
        phase2.ranking_backward(run.policy, reference, run.table, flat, values, 0.1, chunk)
    seconds = time.perf_counter() - started
    tokens = sum(len(r.ids) for r in flat)
    return {
        "loss": loss,
        "chunk": chunk,
        "rollouts": len(flat),
        "tokens": tokens,
        "peak_before_gib": before,
        "peak_gib": peak_gib(),
        "seconds": seconds,
    }


@click.command(help=doc_help(__doc__))
@click.option("--bench", default="seal_tools", show_default=True, help="The benchmark whose train queries to roll out.")
@click.option(
    "--policy", default=str(ROOT / "autotool" / "default_policy"), show_default=True, help="The policy folder."
)
@click.option(
    "--chunks", default="16,4,2", show_default=True, help="Chunk sizes, comma-separated (16: all rollouts at once)."
)
@click.option("--one", nargs=2, type=(str, int), default=None, hidden=True)  # a child process: LOSS CHUNK
def main(bench: str, policy: str, chunks: str, one: tuple[str, int] | None) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    OUT.mkdir(parents=True, exist_ok=True)
    cache = OUT / f"chunk-rollouts-{bench}.pt"
    if one:
        print(json.dumps(measure(bench, policy, cache, one[0], one[1])))
        return
    if not cache.exists():
        print(f"writing one step's rollouts on {bench} (cached in {cache})", file=sys.stderr)
        write_rollouts(bench, policy, cache)
    rows = []
    for loss in ("grpo", "rank"):
        for chunk in (int(c) for c in chunks.split(",")):
            print(f"{loss}, chunk {chunk} ...", file=sys.stderr)
            done = subprocess.run(
                [sys.executable, __file__, "--bench", bench, "--policy", policy, "--one", loss, str(chunk)],
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            if done.returncode != 0:
                print(done.stderr, file=sys.stderr)
                sys.exit(done.returncode)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first = {r["loss"]: r for r in reversed(rows)}  # per loss, the first chunk size listed is the baseline
    print(
        f"\n{bench}: {rows[0]['rollouts']} rollouts, {rows[0]['tokens']} tokens; peak resident memory "
        f"of the process (VmHWM) before and after the backward\n"
    )
    print("| loss | chunk | peak before GiB | peak after GiB | seconds | seconds / first row's |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['loss']} | {r['chunk']} | {r['peak_before_gib']:.2f} | {r['peak_gib']:.2f} | {r['seconds']:.1f} "
            f"| {r['seconds'] / first[r['loss']]['seconds']:.2f} |"
        )


if __name__ == "__main__":
    main()
