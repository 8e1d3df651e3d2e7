"""The steps the three head fits share (`training.fit_rerank`, `training.fit_rationale`, `training.fit_later`):
reading the held-out catalogs they fit on, with every refusal before any work; loading the policy on a bank built
with `--embedder`; and recording a fit in the policy's manifest."""

from __future__ import annotations

import json
from pathlib import Path

import click

from autotool.benchmarks import Benchmark, BenchmarkError, Query, catalog_queries, embedder_saw, trained_on_bench
from autotool.policy import Policy, PolicyError
from toolbank import ToolBank, atomic_write
from toolbank.embed import EmbedderError, load_embedder
from training.cli import CommandError


def catalog(policy_path: Path, spec: str, embedder: str) -> tuple[Benchmark, list[Query]]:
    """The benchmark and requests `spec` names; a CommandError naming `--bench` when it is not one, or when the
    policy or the embedder trained on what it names."""
    try:
        bench, queries = catalog_queries(spec)
    except BenchmarkError as error:
        raise CommandError(f"--bench {spec}: {error}") from None
    split = spec.partition(":")[2].partition(":")[0] or "all"
    if split == "all" and trained_on_bench(policy_path, bench):
        raise CommandError(f"--bench {spec}: the policy trained on {bench.name}; name one of its held-out splits")
    entry = embedder_saw(embedder, bench, [split], seed=0)  # catalog_queries reads split seed 0
    if entry is not None:
        raise CommandError(
            f"--bench {spec}: embedder {embedder!r} was fine-tuned on {bench.name} ({entry.get('split')} split); "
            "fit on a catalog it never saw, or pass --embedder stock"
        )
    return bench, queries


def catalogs(policy_path: Path, bench: str, embedder: str) -> tuple[str, dict[str, tuple[Benchmark, list[Query]]]]:
    """The id of the embedder `--embedder` names, and the benchmark and requests of each spec of `--bench`
    (comma-separated; a spec named twice is read once), as the three fits read them. The refusals of `--embedder`
    and `--bench` all come here, before any work: an embedder that does not load, a `--bench` that names no
    catalog, and each of `catalog`'s."""
    try:
        embedder_id = load_embedder(embedder).id
    except EmbedderError as error:
        raise CommandError(f"--embedder: {error}") from None
    specs = [s for s in bench.split(",") if s]
    if not specs:
        raise CommandError("--bench names no catalog")
    return embedder_id, {spec: catalog(policy_path, spec, embedder) for spec in specs}


def load_policy(policy_path: Path, bank: ToolBank, embedder: str) -> Policy:
    """`Policy.load` on a bank built with `embedder`; its refusal as a CommandError that names both."""
    try:
        return Policy.load(policy_path, bank)
    except PolicyError as error:
        raise CommandError(f"{policy_path} with --embedder {embedder}: {error}") from None


def record(policy_path: Path, **entries) -> None:
    """Set `entries` at the top of the policy's manifest, replaced atomically."""
    manifest_file = policy_path / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest.update(entries)
    atomic_write(manifest_file, json.dumps(manifest, indent=2) + "\n")


embedder_option = click.option(
    "--embedder",
    default="tools",
    show_default=True,
    help="The embedder the policy is served with: 'tools' (the shipped one), 'stock', or a folder.",
)
