"""The shipped policy's choices on a whole catalog without arguments, scored two ways (issue #23's and the eval's).

    nice -n 19 python experiments/2026-12-01-foreign-as-issue-23/selection_only.py apibank toolalpaca \\
        --out experiments/2026-12-01-foreign-as-issue-23

For every query of each catalog, and every method (BM25, dense, hybrid through `bank.search`; the shipped
policy in fast and reason mode through `select_steps(..., arguments=False)`, the served path `select_tool`
runs), two measures of hit@1:

- `per-query` (issue #23's table, "as a user would"): one call per query with no context; a hit when the
  first choice is any of the query's gold tools.
- `per-step` (`python -m eval`'s protocol): one step per gold call; step i reads the earlier gold calls and may
  not choose their tools again; a hit when the first choice is that call's tool.

Ties count as their expected value (`autotool.metrics.selection_metrics`), as in the eval. Paired 95% bootstrap
intervals (2,000 resamples over queries) of each policy mode minus the best baseline of that measure. The choice
does not depend on the arguments, which the eval's policy methods write after choosing; writing none is what
makes reason mode on every query affordable on a CPU. Writes `results.json` and `results.md` into --out.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, load_benchmark, step_input, steps_of
from autotool.metrics import paired_bootstrap, selection_metrics
from autotool.policy import Policy
from autotool.rollout import StepInput
from autotool.select import SHIPPED_POLICY, select_steps

BASELINES = ("bm25", "dense", "hybrid")
DEPTH = 10


def score(bench, policy, bank, modes, batch_size) -> dict:
    queries = bench.queries
    steps = [s for q in queries for s in steps_of(q)]
    inputs = {"per-query": [StepInput(q.text, "", ()) for q in queries],
              "per-step": [step_input(bank, s) for s in steps]}
    golds = {"per-query": [set(q.gold_tools) for q in queries], "per-step": [s.gold for s in steps]}
    groups = {"per-query": [q.id for q in queries], "per-step": [s.query.id for s in steps]}
    hits: dict[str, dict[str, list[float]]] = {m: {} for m in inputs}
    seconds: dict[str, float] = {}
    for measure, items in inputs.items():
        for method in BASELINES:
            row = []
            for item, gold in zip(items, golds[measure]):
                found = bank.search(item.query, k=DEPTH + len(item.exclude), mode=method)
                found = [h for h in found if h.name not in item.exclude][:DEPTH]
                row.append(selection_metrics([h.name for h in found], gold, [h.score for h in found])["hit@1"])
            hits[measure][method] = row
        for mode in modes:
            began, row = time.perf_counter(), []
            for start in range(0, len(items), batch_size):
                batch = items[start:start + batch_size]
                for selection, gold in zip(select_steps(policy, bank, batch, k=DEPTH, mode=mode, arguments=False),
                                           golds[measure][start:start + batch_size]):
                    row.append(selection_metrics([t.name for t, _ in selection.candidates], gold,
                                                 [p for _, p in selection.candidates])["hit@1"])
            hits[measure][f"shipped-{mode}"] = row
            seconds[f"{measure} shipped-{mode}"] = round(time.perf_counter() - began, 1)
            print(f"{bench.name} {measure} {mode}: {sum(row) / len(row):.3f} ({seconds[f'{measure} shipped-{mode}']} s)",
                  flush=True)
    out = {"n_queries": len(queries), "n_steps": len(steps), "seconds": seconds, "measures": {}}
    for measure, by_method in hits.items():
        means = {m: sum(v) / len(v) for m, v in by_method.items()}
        best = max(BASELINES, key=lambda m: means[m])
        out["measures"][measure] = {
            "n": len(groups[measure]), "hit@1": means, "best_baseline": best,
            "paired": {m: paired_bootstrap(by_method[m], by_method[best], groups=groups[measure])
                       for m in by_method if m.startswith("shipped-")},
            "per_item": by_method, "ids": groups[measure]}
    return out


def markdown(results: dict) -> str:
    lines = [f"Command: `{results['command']}`", ""]
    for name, r in results["catalogs"].items():
        for measure, m in r["measures"].items():
            methods = list(m["hit@1"])
            lines += [f"## {name}, {measure}: {m['n']} {'queries' if measure == 'per-query' else 'steps'}", "",
                      "| " + " | ".join(methods) + " |", "|" + "---:|" * len(methods),
                      "| " + " | ".join(f"{m['hit@1'][x]:.3f}" for x in methods) + " |", ""]
            for policy, p in m["paired"].items():
                lines.append(f"- {policy} minus {m['best_baseline']}: {p['mean']:+.3f} "
                             f"[{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]")
            lines.append("")
    return "\n".join(lines)


@click.command(help=__doc__)
@click.argument("benches", nargs=-1, required=True)
@click.option("--modes", default="fast,reason", show_default=True)
@click.option("--batch-size", default=16, show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
def main(benches, modes, batch_size, out):
    started = time.time()
    results = {"command": "python " + " ".join(sys.argv), "policy": str(SHIPPED_POLICY.relative_to(Path.cwd())),
               "catalogs": {}}
    for name in benches:
        bench = load_benchmark(name)
        bank = benchmark_bank(bench)
        policy = Policy.load(SHIPPED_POLICY, bank)
        results["catalogs"][bench.name] = score(bench, policy, bank, modes.split(","), batch_size)
    results["wall_s"] = round(time.time() - started, 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "results.md").write_text(markdown(results))
    print(markdown(results))
    print(f"wrote {out}/results.json, results.md ({results['wall_s']} s)")


if __name__ == "__main__":
    main()
