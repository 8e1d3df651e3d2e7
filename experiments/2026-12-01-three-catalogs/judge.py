"""Judge an embedder and a policy on whole catalogs, against the stock baselines, both ways issue #23 counts.

    OMP_NUM_THREADS=2 python experiments/2026-12-01-three-catalogs/judge.py apibank toolalpaca \\
        --embedder runs/embedder-mt-bfcl/adapter --modes fast --out runs/judge-mt-bfcl

Each CATALOG is `name[:split[:limit]]` (default split `all`: every query; a limit samples queries with seed 0).
Two banks hold the whole catalog: one with stock all-MiniLM-L6-v2 (the baselines: BM25, dense, hybrid through
`bank.search`) and one with --embedder (dense through `bank.search`, and the policy through `select_steps(...,
arguments=False)`, the served path of `select_tool`: the choice comes before any argument). A policy that does
not read --embedder's space is repointed to it: the same weights, its manifest naming the bank's embedder.

Two measures of hit@1, ties at their expected value:
- `per-query` (issue #23's table, "as a user would"): one call per query with no context; a hit when the first
  choice is any of the query's gold tools.
- `per-step` (`python -m eval`'s protocol): one step per gold call; step i reads the earlier gold calls and may
  not choose their tools again.
Paired 95% bootstrap intervals (2,000 resamples over queries) of every method minus the best stock baseline of
that measure. Writes results.json (every item's hit) and results.md into --out, after each catalog.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, catalog_queries, step_input, steps_of
from autotool.metrics import paired_bootstrap, selection_metrics
from autotool.policy import Policy, reads_embeddings_of
from autotool.select import SHIPPED_POLICY, select_steps
from autotool.selection import StepInput

BASELINES = ("bm25", "dense-stock", "hybrid-stock")
DEPTH = 10


def policy_for(folder: Path, bank) -> Policy:
    manifest = json.loads((folder / "manifest.json").read_text())
    if not reads_embeddings_of(manifest, bank):
        copy = Path(tempfile.mkdtemp(prefix="repointed-policy-"))
        shutil.copytree(folder, copy, dirs_exist_ok=True)
        manifest["embedder"] = bank.embedder_id
        (copy / "manifest.json").write_text(json.dumps(manifest, indent=2))
        folder = copy
    return Policy.load(folder, bank)


def searched(bank, items, golds, mode) -> list[float]:
    row = []
    for item, gold in zip(items, golds):
        found = bank.search(item.query, k=DEPTH + len(item.exclude), mode=mode)
        found = [h for h in found if h.name not in item.exclude][:DEPTH]
        ranking = [h.tool.name for h in found]  # the catalog's names (a hit's `name` is qualified: ns/name)
        row.append(selection_metrics(ranking, gold, [h.score for h in found])["hit@1"])
    return row


def selected(policy, bank, items, golds, mode, batch_size) -> list[float]:
    row = []
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        base, _, suffix = mode.partition(":")  # `fast:norerank`: without the policy's reranker
        chosen = select_steps(policy, bank, batch, k=DEPTH, mode=base, arguments=False, rerank=suffix != "norerank")
        for selection, gold in zip(chosen, golds[start : start + batch_size]):
            ranking = [t.name for t, _ in selection.candidates]
            row.append(selection_metrics(ranking, gold, [p for _, p in selection.candidates])["hit@1"])
    return row


def judge(
    spec: str, embedder: str, policy_folder: Path, modes: list[str], batch_size: int, measures: tuple[str, ...]
) -> dict:
    bench, queries = catalog_queries(spec)
    steps = [s for q in queries for s in steps_of(q)]
    golds = {"per-query": [set(q.gold_tools) for q in queries], "per-step": [s.gold for s in steps]}
    golds = {m: g for m, g in golds.items() if m in measures}
    groups = {"per-query": [q.id for q in queries], "per-step": [s.query.id for s in steps]}
    hits = {measure: {} for measure in golds}
    seconds = {}
    stock, tuned = benchmark_bank(bench, "stock"), benchmark_bank(bench, embedder)
    policy = policy_for(policy_folder, tuned) if modes else None
    for measure in golds:
        for label, bank in (("stock", stock), ("tuned", tuned)):
            items = (
                [StepInput(q.text, "", ()) for q in queries]
                if measure == "per-query"
                else [step_input(bank, s) for s in steps]
            )
            if label == "stock":
                hits[measure]["bm25"] = searched(bank, items, golds[measure], "bm25")
                for mode in ("dense", "hybrid"):
                    hits[measure][f"{mode}-stock"] = searched(bank, items, golds[measure], mode)
                continue
            hits[measure]["dense-tuned"] = searched(bank, items, golds[measure], "dense")
            for mode in modes:
                began = time.perf_counter()
                hits[measure][mode] = selected(policy, bank, items, golds[measure], mode, batch_size)
                seconds[f"{measure} {mode}"] = round(time.perf_counter() - began, 1)
    out = {"queries": len(queries), "steps": len(steps), "seconds": seconds, "measures": {}}
    for measure, by_method in hits.items():
        means = {m: sum(v) / len(v) for m, v in by_method.items()}
        best = max(BASELINES, key=means.get)
        out["measures"][measure] = {
            "hit@1": means,
            "best_stock_baseline": best,
            "paired": {
                m: paired_bootstrap(by_method[m], by_method[best], groups=groups[measure])
                for m in by_method
                if m not in BASELINES
            },
            "per_item": by_method,
            "ids": groups[measure],
        }
        print(f"{spec} {measure}: " + ", ".join(f"{m} {v:.3f}" for m, v in means.items()), flush=True)
    return out


def markdown(results: dict) -> str:
    lines = [f"Command: `{results['command']}`", ""]
    for spec, r in results["catalogs"].items():
        for measure, m in r["measures"].items():
            methods = list(m["hit@1"])
            n = r["queries"] if measure == "per-query" else r["steps"]
            lines += [
                f"## {spec}, {measure} ({n})",
                "",
                "| " + " | ".join(methods) + " |",
                "|" + "---:|" * len(methods),
                "| " + " | ".join(f"{m['hit@1'][x]:.3f}" for x in methods) + " |",
                "",
            ]
            lines += [
                f"- {x} minus {m['best_stock_baseline']}: {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]"
                for x, p in m["paired"].items()
            ]
            lines.append("")
    return "\n".join(lines)


@click.command(help=__doc__)
@click.argument("catalogs", nargs=-1, required=True)
@click.option("--embedder", default="tools", show_default=True, help="The embedder judged (an alias or a folder).")
@click.option(
    "--policy",
    "policy_folder",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=SHIPPED_POLICY,
    help="The policy folder (default: the shipped policy).",
)
@click.option(
    "--modes",
    default="fast",
    show_default=True,
    help="Policy modes (fast, reason, fast,reason; '' none); MODE:norerank leaves out the policy's reranker.",
)
@click.option("--batch-size", default=16, show_default=True)
@click.option("--measures", default="per-query,per-step", show_default=True, help="Which of the two measures.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
def main(catalogs, embedder, policy_folder, modes, batch_size, measures, out):
    started = time.time()
    results = {"command": "python " + " ".join(sys.argv), "embedder": embedder, "policy": str(policy_folder)}
    results["catalogs"] = {}
    out.mkdir(parents=True, exist_ok=True)
    for spec in catalogs:
        chosen = [m for m in modes.split(",") if m]
        results["catalogs"][spec] = judge(spec, embedder, policy_folder, chosen, batch_size, tuple(measures.split(",")))
        results["wall_s"] = round(time.time() - started, 1)
        (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
        (out / "results.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
