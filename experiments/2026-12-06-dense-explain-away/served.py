"""Without Seal-Tools, as served: the leave-out-Seal-Tools models with joint.py's fitted alpha, with the reranker.

    OMP_NUM_THREADS=2 python experiments/2026-12-06-dense-explain-away/served.py --policy runs/refit-policy \\
        --alpha 0.5 --out experiments/2026-12-06-dense-explain-away/served

--policy is the folder ../2026-12-04-loo-metatool-rerank-refit/refit.sh writes (the shipped policy with l = 0.05,
l_later = 0.1, the leave-out-Seal-Tools g and the reranker trained on MetaTool and BFCL, c fitted on API-Bank and
ToolAlpaca), reading the `tools` embedder. Fast mode with and without its reranker, at alpha = 0 (the recipe as it
was) and at --alpha, through the served path with sweep.py's anchor, per step on API-Bank, ToolAlpaca and the
904 new Seal-Tools requests of joint.py, against the stock baselines. Nothing here is fitted.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import click

HERE = Path(__file__).parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


joint = _load("joint")
sweep, judge = joint.sweep, joint.judge
sys.path.insert(0, str(HERE.parents[1]))

from autotool.benchmarks import benchmark_bank, catalog_queries, step_input, steps_of  # noqa: E402
from autotool.metrics import paired_bootstrap  # noqa: E402

CATALOGS = ("apibank", "toolalpaca", joint.JUDGED)
MODES = ("fast", "fast:norerank")


def curve(bench, queries, policy_folder: Path, alpha: float) -> dict:
    steps = [s for q in queries for s in steps_of(q)]
    golds = [s.gold for s in steps]
    stock, bank = benchmark_bank(bench, "stock"), benchmark_bank(bench, joint.EMBEDDER)
    stock_items = [step_input(stock, s) for s in steps]
    hits = {m: judge.searched(stock, stock_items, golds, m) for m in ("bm25", "dense", "hybrid")}
    items = [step_input(bank, s) for s in steps]
    policy = judge.policy_for(policy_folder, bank)
    for mode in MODES:
        for a in (0.0, alpha):
            sweep.ALPHA = a
            hits[f"{mode} alpha={a:g}"] = judge.selected(policy, bank, items, golds, mode, 32)
    sweep.ALPHA = 0.0
    return {"ids": [s.query.id for s in steps], "step_index": [s.index for s in steps], "per_item": hits}


@click.command(help=__doc__)
@click.option("--policy", "policy_folder", type=click.Path(path_type=Path, exists=True), required=True)
@click.option("--alpha", type=float, required=True, help="The explain-away weight joint.py fitted.")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(policy_folder: Path, alpha: float, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    curves = {}
    for name in CATALOGS:
        bench, queries = joint.new_seal_requests() if name == joint.JUDGED else catalog_queries(name)
        curves[name] = curve(bench, queries, policy_folder, alpha)
        print(f"{name}: {time.perf_counter() - began:.0f} s", flush=True)
    manifest = json.loads((policy_folder / "manifest.json").read_text())
    lines = [
        f"# Without Seal-Tools, served (rerank {manifest.get('rerank')}), per step: alpha = 0 and {alpha:g}",
        "",
        "hit@1, all steps (later steps in brackets)",
        "",
        "| method | " + " | ".join(CATALOGS) + " |",
        "|---|" + "---:|" * len(CATALOGS),
    ]
    methods = [f"{m} alpha={a:g}" for m in MODES for a in (0.0, alpha)] + ["bm25", "dense", "hybrid"]
    for m in methods:
        cells = [f"{sweep.mean(curves[n]['per_item'][m]):.3f} ({sweep.later_mean(curves[n], m):.3f})" for n in CATALOGS]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    paired = {}
    for name, c in curves.items():
        hits, groups = c["per_item"], c["ids"]
        best = max(("bm25", "dense", "hybrid"), key=lambda m: sweep.mean(hits[m]))
        for mode in MODES:
            key = f"{mode} alpha={alpha:g}"
            paired[f"{name}, {key}"] = {
                f"minus {best}": paired_bootstrap(hits[key], hits[best], groups=groups),
                "minus alpha=0": paired_bootstrap(hits[key], hits[f"{mode} alpha=0"], groups=groups),
                f"alpha=0 minus {best}": paired_bootstrap(hits[f"{mode} alpha=0"], hits[best], groups=groups),
            }
    lines += ["", "Paired 95% intervals over requests, all steps:"]
    for where, by in paired.items():
        for what, p in by.items():
            lines.append(f"- {where}, {what}: {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]")
    seconds = round(time.perf_counter() - began, 1)
    lines += ["", f"{seconds:.0f} s."]
    results = {"policy_manifest": manifest, "alpha": alpha, "paired": paired, "seconds": seconds, "curves": curves}
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
