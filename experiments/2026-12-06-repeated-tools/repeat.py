"""Later steps that call a tool an earlier step called: how many there are, and what letting the served path
choose a called tool again does to fast mode and the stock baselines (issue #23; README.md says why).

    python experiments/2026-12-06-repeated-tools/repeat.py apibank toolalpaca seal_tools:val bfcl --out DIR

For every later step of each catalog (a step after the request's first call, reading the earlier gold calls), two
rules, on the same steps:
- `no-repeat`, as served today: the tools earlier steps called may not be chosen (`StepInput.exclude`);
- `repeat`: nothing is excluded; the called tools still shape the step as before (`StepInput.called`: their words
  leave BM25's query, their directions leave the anchor by the head's `explain`).
Fast mode through `select_steps(..., arguments=False)` with the shipped policy and its reranker; BM25, dense and
hybrid through `bank.search` on the stock embedder's bank, as the judge of 2026-12-01-three-catalogs does. Hit@1
per later step, split by whether the gold tool repeats an earlier call. Writes results.json and results.md.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).parents[2]))
sys.path.insert(0, str(Path(__file__).parents[1] / "2026-12-01-three-catalogs"))

from judge import BASELINES, policy_for, searched, selected

from autotool.benchmarks import benchmark_bank, catalog_queries, step_input, steps_of
from autotool.metrics import paired_bootstrap
from autotool.select import SHIPPED_POLICY

METHODS = (*BASELINES, "fast")


def judged(spec: str, policy_folder: Path) -> dict:
    bench, queries = catalog_queries(spec)
    steps = [s for q in queries for s in steps_of(q) if s.index > 0]
    golds = [s.gold for s in steps]
    repeats = [s.repeats_a_call for s in steps]
    stock, tuned = benchmark_bank(bench, "stock"), benchmark_bank(bench, "tools")
    policy = policy_for(policy_folder, tuned)
    hits = {}
    for rule in ("no-repeat", "repeat"):
        for label, bank in (("stock", stock), ("tools", tuned)):
            items = [step_input(bank, s) for s in steps]  # exclude = the called tools, as served
            if rule == "repeat":
                items = [replace(i, exclude=(), called=i.exclude) for i in items]
            if label == "stock":
                for method in BASELINES:
                    hits[rule, method] = searched(bank, items, golds, method.removesuffix("-stock"))
            else:
                hits[rule, "fast"] = selected(policy, bank, items, golds, "fast", 16)
    ids = [s.query.id for s in steps]
    out = {"later_steps": len(steps), "repeating": sum(repeats), "hit@1": {}, "repeat minus no-repeat": {}}
    for rule in ("no-repeat", "repeat"):
        for method in METHODS:
            row = hits[rule, method]
            out["hit@1"][f"{rule} {method}"] = {
                "all": sum(row) / len(row),
                "gold repeats": sum(h for h, r in zip(row, repeats) if r) / max(1, sum(repeats)),
                "gold new": sum(h for h, r in zip(row, repeats) if not r) / max(1, len(row) - sum(repeats)),
            }
    for method in METHODS:
        out["repeat minus no-repeat"][method] = paired_bootstrap(
            hits["repeat", method], hits["no-repeat", method], groups=ids
        )
    out["per_item"] = {f"{rule} {method}": row for (rule, method), row in hits.items()}
    out["ids"] = [s.id for s in steps]
    out["repeats"] = repeats
    return out


def markdown(results: dict) -> str:
    lines = [f"Command: `{results['command']}`", ""]
    for spec, r in results["catalogs"].items():
        lines += [
            f"## {spec}: {r['later_steps']} later steps, {r['repeating']} whose gold tool an earlier step called",
            "",
            "| rule | method | all later steps | gold repeats a call | gold is new |",
            "|---|---|---:|---:|---:|",
        ]
        for key, h in r["hit@1"].items():
            rule, method = key.split(" ")
            lines.append(f"| {rule} | {method} | {h['all']:.3f} | {h['gold repeats']:.3f} | {h['gold new']:.3f} |")
        lines += (
            [""]
            + [
                f"- {m}, repeat minus no-repeat: {100 * p['mean']:+.1f} [{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}]"
                for m, p in r["repeat minus no-repeat"].items()
            ]
            + [""]
        )
    return "\n".join(lines)


@click.command(help=__doc__)
@click.argument("catalogs", nargs=-1, required=True)
@click.option(
    "--policy",
    "policy_folder",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=SHIPPED_POLICY,
    help="The policy folder (default: the shipped policy).",
)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
def main(catalogs, policy_folder, out):
    results = {"command": "python " + " ".join(sys.argv), "policy": str(policy_folder), "catalogs": {}}
    out.mkdir(parents=True, exist_ok=True)
    for spec in catalogs:
        results["catalogs"][spec] = judged(spec, policy_folder)
        (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
        (out / "results.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
