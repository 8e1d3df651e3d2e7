"""Evaluate tool-selection methods on a benchmark's seen/unseen tool splits, or on a whole catalog.

    python -m eval --bench metatool --methods bm25,dense,hybrid --split seen-test,unseen-test \\
        --limit 2000 --seed 0 --out runs/eval-metatool

A catalog of your own, as users get it (the embedder new banks get, the shipped policy in both modes), against
BM25 and stock dense and hybrid, one call per request:

    python -m eval --bench FOLDER --split all --embedder default --measure per-request \\
        --methods bm25,dense-stock,hybrid-stock,dense,policy,policy-fast

Writes results.json, results.md, results.png and steps.csv into --out.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import click

from autotool.benchmarks import QUERY_SPLITS
from eval.harness import MEASURES


@click.command(help=__doc__)
@click.option("--bench", required=True, help="metatool, seal_tools, or a folder with tools.jsonl and queries.jsonl.")
@click.option(
    "--methods",
    default=None,
    help="Comma-separated methods (see eval/methods.py). Default: BM25 and the stock dense and hybrid baselines "
    "(bm25,dense,hybrid on a stock bank; bm25,dense-stock,hybrid-stock,dense on another embedder's).",
)
@click.option(
    "--measure",
    type=click.Choice(MEASURES),
    default="per-step",
    show_default=True,
    help="per-step: one step per gold call, arguments scored; per-request: one call per request with no context, "
    "a hit when the first choice is any of its gold tools (the choice alone, no arguments).",
)
@click.option(
    "--split",
    "splits",
    default="seen-test,unseen-test",
    show_default=True,
    help=f"Comma-separated query splits: {', '.join(QUERY_SPLITS)}.",
)
@click.option("--limit", type=int, default=None, help="Sample at most this many queries per split (seeded).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the tool split and of sampling.")
@click.option("--single-tool", is_flag=True, help="Only queries with one gold tool.")
@click.option(
    "--exclude-run",
    "exclude_runs",
    multiple=True,
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Leave out the queries that the evaluation written to DIR scored on the same split (listed "
    "in its results.json), then sample: a sample disjoint from an earlier run's. Repeatable.",
)
@click.option(
    "--embedder",
    default="stock",
    show_default=True,
    help="Embedder of the evaluation bank: stock (all-MiniLM-L6-v2, what the baselines and the policy's training "
    "read), tools (the fine-tuned one new banks get; refused on a catalog it trained on), or any toolbank spec.",
)
@click.option(
    "--policy",
    "policies",
    multiple=True,
    metavar="[NAME=]PATH[:MODE]",
    help="Evaluate the policy folder PATH as method NAME (default name `policy`), in MODE (reason or "
    "fast; default --policy-mode); repeatable, to compare policies in one run. Suffixes :unconstrained "
    "(arguments without the schema grammar) and :norerank (without the policy's reranker) may follow. "
    "Without it, method `policy` is the default policy.",
)
@click.option(
    "--policy-mode",
    type=click.Choice(["reason", "fast"]),
    default="reason",
    show_default=True,
    help="reason: the policy writes a rationale first; fast: it does not.",
)
@click.option("--device", default=None, help="Where the LLM methods run (cpu, cuda); default the GPU if there is one.")
@click.option(
    "--batch-size", type=click.IntRange(1), default=16, show_default=True, help="Steps the LLM methods write at once."
)
@click.option(
    "--out", type=click.Path(file_okay=False), default=None, help="Output folder (default runs/eval-BENCH-TIME)."
)
def main(
    bench,
    methods,
    measure,
    splits,
    limit,
    seed,
    single_tool,
    exclude_runs,
    embedder,
    policies,
    policy_mode,
    device,
    batch_size,
    out,
):
    from autotool.benchmarks import BenchmarkError, benchmark_bank, load_benchmark, load_split, policy_trained_on
    from eval import report
    from eval.harness import EvalError, check_methods, evaluate
    from eval.methods import default_methods, register_policy, stock_baselines
    from toolbank import BankError, EmbedderError, load_embedder

    started = time.time()
    try:
        benchmark = load_benchmark(bench)
        split = load_split(benchmark, seed)
        if methods is None:
            methods = default_methods(load_embedder(embedder).id)
        names = [m.strip() for m in methods.split(",") if m.strip()]
        paths = default_policy_paths()
        for spec in policies:
            name, _, path = spec.rpartition("=")
            mode, grammar, rerank = None, True, True
            while path.rpartition(":")[2] in ("fast", "reason", "unconstrained", "norerank"):
                path, _, suffix = path.rpartition(":")
                if suffix == "unconstrained":
                    grammar = False
                elif suffix == "norerank":
                    rerank = False
                else:
                    mode = suffix
            if not Path(path, "manifest.json").is_file():
                raise EvalError(f"--policy {spec}: {path} is not a policy folder (no manifest.json)")
            register_policy(name or "policy", path, mode, grammar, rerank)
            paths[name or "policy"] = Path(path)
            if (name or "policy") not in names:
                names.append(name or "policy")
        split_names = [s.strip() for s in splits.split(",") if s.strip()]
        for name in split_names:
            split.query_ids(name)  # unknown split names fail before any work
        paths = {name: paths[name] for name in names if paths.get(name) is not None}  # the policy methods
        refuse_if_trained_on_every_tool(paths, benchmark)
        if "all" in split_names:
            refuse_foreign_if_trained(paths, benchmark)
        refuse_if_embedder_trained(embedder, benchmark, split_names, seed)
        try:
            excluded = {
                name: set().union(*(report.evaluated_queries(run, benchmark.name, name) for run in exclude_runs))
                for name in split_names
            }
        except ValueError as e:
            raise EvalError(f"--exclude-run: {e}") from None
        check_methods(names)  # before the bank is built
        bank = benchmark_bank(benchmark, embedder)
        results = {
            "bench": benchmark.name,
            "seed": seed,
            "limit": limit,
            "measure": measure,
            "single_tool": single_tool,
            "excluded_runs": list(exclude_runs),
            "excluded_queries": {name: len(ids) for name, ids in excluded.items()},
            "n_tools": len(benchmark.tools),
            "embedder": bank.embedder_id,
            "command": "python -m eval " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
            "policy_mode": policy_mode,
            "policies": {
                name: {"path": str(path), "trained_on": policy_trained_on(path)} for name, path in paths.items()
            },
            "splits": [
                evaluate(
                    benchmark,
                    split,
                    s,
                    names,
                    bank,
                    limit,
                    seed,
                    single_tool,
                    {"policy_mode": policy_mode, "device": device, "batch_size": batch_size},
                    exclude=excluded[s],
                    measure=measure,
                    baselines=stock_baselines(bank.embedder_id),
                )
                for s in split_names
            ],
        }
    except (BenchmarkError, EvalError, BankError, EmbedderError) as e:
        raise click.ClickException(str(e)) from None
    results["drop"] = report.drops(results["splits"])
    results["wall_s"] = round(time.time() - started, 1)
    out = Path(out or f"runs/eval-{benchmark.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    report.write(results, out)
    click.echo(report.markdown(results))
    click.echo(f"wrote {out}/results.json, results.md, results.png, steps.csv ({results['wall_s']} s)")


class TrainedOnCatalog(click.ClickException):
    """`--split all` (the catalog as foreign) for a policy whose manifest says it trained on the catalog."""

    exit_code = 2


def default_policy_paths() -> dict[str, Path | None]:
    """The folder methods `policy` and `policy-fast` read: `$AUTOTOOL_HOME/policy`, else the shipped policy
    (None when neither exists: then they use the untrained anchor)."""
    from autotool.select import SHIPPED_POLICY, default_policy_path

    default = next((p for p in (default_policy_path(), SHIPPED_POLICY) if (p / "manifest.json").is_file()), None)
    return {"policy": default, "policy-fast": default}


def refuse_foreign_if_trained(paths: dict[str, Path], benchmark) -> None:
    """Exit 2 when the manifest of a policy method's folder (`paths`: method -> folder) says it trained on
    `benchmark` (by name or by its tool names): `--split all` would call a training catalog foreign."""
    from autotool.benchmarks import trained_on_bench

    for name, path in paths.items():
        entries = trained_on_bench(path, benchmark)
        if entries:
            runs = ", ".join(f"{e['catalog']} {e.get('split')} split (seed {e.get('seed')})" for e in entries)
            raise TrainedOnCatalog(
                f"--split all evaluates {benchmark.name} as a catalog no policy trained on, but policy {name!r} "
                f"trained on it: {path / 'manifest.json'} records {runs}. Evaluate it on the catalog's held-out "
                "tools (--split seen-test,unseen-test with the same --seed) or on a catalog it never trained on."
            )


def refuse_if_trained_on_every_tool(paths: dict[str, Path], benchmark) -> None:
    """Exit 2 when a policy method trained on every tool of `benchmark` (`all_tools`): none of the
    evaluation's splits of it is held out from that policy."""
    from autotool.benchmarks import trained_on_bench

    for name, path in paths.items():
        # all-tools: a training run on every tool; all: every request (the reranker's MetaTool and BFCL)
        if any(e.get("split") in ("all-tools", "all") for e in trained_on_bench(path, benchmark)):
            raise TrainedOnCatalog(
                f"policy {name!r} (or its reranker) trained on every tool of {benchmark.name} "
                f"({path / 'manifest.json'}): "
                "no split of this evaluation is held out from it. Its held-out queries (the val and seen-test "
                "queries of the all-tools split) are scored in its training run's eval/ folder."
            )


def refuse_if_embedder_trained(embedder: str, benchmark, split_names: list[str], seed: int) -> None:
    """Exit 2 when the bank's embedder was fine-tuned on `benchmark` (by name or digest of its tool names, from
    the adapter's manifest) so that the splits asked for are not held out from it: trained on every tool
    (split `all`), any split; on one seed's train split, `--split all` or `train`, or another seed's split
    (whose held-out tools are not the ones it left out)."""
    from autotool.benchmarks import embedder_saw

    entry = embedder_saw(embedder, benchmark, split_names, seed)
    if entry is not None:
        raise TrainedOnCatalog(
            f"embedder {embedder!r} was fine-tuned on {benchmark.name} ({entry.get('split')} split, seed "
            f"{entry.get('seed')}, {entry.get('queries', '?')} queries), so this evaluation (--split "
            f"{','.join(split_names)}, --seed {seed}) would score it on text it trained on; "
            "evaluate this catalog with --embedder stock, or the embedder on a catalog it never saw."
        )


if __name__ == "__main__":
    main()
