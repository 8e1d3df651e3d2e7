"""Stock against fine-tuned embedder, per step, on whole catalogs: retrieval and the shipped policy's fast mode.

    nice -n 19 python experiments/2026-12-01-embedder-finetune/compare.py \\
        --embedder runs/embedder-tools/adapter apibank toolalpaca seal_tools:unseen-test:300 \\
        --out runs/embedder-compare

Each CATALOG is `name[:split[:limit]]` (default split `all`: every query). For each, two banks hold the whole
catalog, one per embedder, and every method is scored per step (`python -m eval`'s protocol: one step per gold
call, the earlier gold calls as context, their tools excluded): BM25; dense and hybrid `bank.search` with each
embedder; the shipped policy in fast mode through `select_steps(..., arguments=False)` (the served path of
`select_tool`; the choice comes before any argument) on each bank (on the tuned one, the same policy
with its manifest pointed at the tuned embedder, not retrained). Ties count as their expected value. Paired
95% bootstrap intervals (2,000 resamples over queries) against the best stock baseline, and fine-tuned minus
stock for each method. Writes results.json (every step's hit) and results.md into --out.
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
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY, select_steps

DEPTH = 10


def hits_of(
    bank, policy, steps, inputs, batch_size, modes=("fast",)
) -> tuple[dict[str, list[float]], dict[str, float]]:
    hits, seconds = {}, {}
    for method in ("bm25", "dense", "hybrid"):
        row = []
        for item, step in zip(inputs, steps):
            found = bank.search(item.query, k=DEPTH + len(item.exclude), mode=method)
            found = [h for h in found if h.name not in item.exclude][:DEPTH]
            row.append(selection_metrics([h.name for h in found], step.gold, [h.score for h in found])["hit@1"])
        hits[method] = row
    for mode in modes:
        began, row = time.perf_counter(), []
        for start in range(0, len(inputs), batch_size):
            chosen = select_steps(policy, bank, inputs[start : start + batch_size], k=DEPTH, mode=mode, arguments=False)
            for selection, step in zip(chosen, steps[start : start + batch_size]):
                ranking = [t.name for t, _ in selection.candidates]
                row.append(selection_metrics(ranking, step.gold, [p for _, p in selection.candidates])["hit@1"])
        hits[mode], seconds[mode] = row, round(time.perf_counter() - began, 1)
    return hits, seconds


def repointed_policy(bank) -> Path:
    """A copy of the shipped policy whose manifest names `bank`'s embedder: the same weights, not retrained (its
    anchor, E(query) plus a BM25 prior in fast mode, is then computed in the fine-tuned space)."""
    folder = Path(tempfile.mkdtemp(prefix="repointed-policy-"))
    shutil.copytree(SHIPPED_POLICY, folder, dirs_exist_ok=True)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["embedder"] = bank.embedder_id
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return folder


def compare(spec: str, embedder: str, batch_size: int, modes=("fast",)) -> dict:
    bench, queries = catalog_queries(spec)
    steps = [s for q in queries for s in steps_of(q)]
    groups = [s.query.id for s in steps]
    hits, seconds = {}, {}
    for label, spec_embedder in (("stock", "stock"), ("tuned", embedder)):
        began = time.perf_counter()
        bank = benchmark_bank(bench, spec_embedder)
        seconds[f"{label} bank"] = round(time.perf_counter() - began, 1)
        inputs = [step_input(bank, s) for s in steps]
        policy = Policy.load(SHIPPED_POLICY if label == "stock" else repointed_policy(bank), bank)
        by_method, policy_seconds = hits_of(bank, policy, steps, inputs, batch_size, modes)
        hits |= {
            f"{m}-{label}" if m != "bm25" else m: v for m, v in by_method.items() if m != "bm25" or label == "stock"
        }
        seconds |= {f"{label} {mode}": policy_seconds[mode] for mode in modes}
    means = {m: sum(v) / len(v) for m, v in hits.items()}
    best = max(("bm25", "dense-stock", "hybrid-stock"), key=means.get)
    paired = {f"{m} minus {best}": paired_bootstrap(hits[m], hits[best], groups=groups) for m in hits if m != best}
    for method in ("dense", "hybrid", *modes):
        paired[f"{method}-tuned minus {method}-stock"] = paired_bootstrap(
            hits[f"{method}-tuned"], hits[f"{method}-stock"], groups=groups
        )
    print(f"{spec}: " + ", ".join(f"{m} {v:.3f}" for m, v in means.items()), flush=True)
    return {
        "queries": len(queries),
        "steps": len(steps),
        "hit@1": means,
        "best_stock_baseline": best,
        "paired": paired,
        "seconds": seconds,
        "per_step": hits,
        "query_ids": groups,
    }


def markdown(results: dict) -> str:
    lines = [f"Command: `{results['command']}`", ""]
    for spec, r in results["catalogs"].items():
        methods = list(r["hit@1"])
        lines += [
            f"## {spec}: {r['queries']} queries, {r['steps']} steps",
            "",
            "| " + " | ".join(methods) + " |",
            "|" + "---:|" * len(methods),
            "| " + " | ".join(f"{r['hit@1'][m]:.3f}" for m in methods) + " |",
            "",
        ]
        lines += [f"- {k}: {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]" for k, p in r["paired"].items()]
        lines.append("")
    return "\n".join(lines)


@click.command(help=__doc__)
@click.argument("catalogs", nargs=-1, required=True)
@click.option("--embedder", required=True, help="The fine-tuned embedder (an adapter folder).")
@click.option("--batch-size", default=16, show_default=True)
@click.option("--modes", default="fast", show_default=True, help="Policy modes: fast, reason or fast,reason.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
def main(catalogs, embedder, batch_size, modes, out):
    started = time.time()
    results = {"command": "python " + " ".join(sys.argv), "embedder": embedder, "catalogs": {}}
    out.mkdir(parents=True, exist_ok=True)
    for spec in catalogs:
        results["catalogs"][spec] = compare(spec, embedder, batch_size, tuple(modes.split(",")))
        results["wall_s"] = round(time.time() - started, 1)
        (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
        (out / "results.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
