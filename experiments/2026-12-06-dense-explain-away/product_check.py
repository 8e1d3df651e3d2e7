"""The explained anchor in the product: a policy head that holds `explain` (policy format 3), judged through the
served path as it is (no wrapper), against served.py's wrapped figures.

    OMP_NUM_THREADS=2 python experiments/2026-12-06-dense-explain-away/product_check.py --policy runs/refit-policy \\
        --out experiments/2026-12-06-dense-explain-away/product

--policy is refit.sh's folder made with ALPHA=0.5 (its head's `explain` 0.5). Fast mode as served, per step, on
ToolAlpaca and the 904 new Seal-Tools requests. The product takes each called tool out once; the scripts above
counted a tool called twice twice, so the two may differ only at steps after a repeated call.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import click

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))

from autotool.benchmarks import benchmark_bank, catalog_queries, step_input, steps_of  # noqa: E402
from autotool.metrics import paired_bootstrap  # noqa: E402

_spec = importlib.util.spec_from_file_location("judge", HERE.parents[1] / "experiments/2026-12-01-three-catalogs/judge.py")
judge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(judge)  # not sweep.py (nor joint.py, which loads it): the served path is not wrapped here
_spec = importlib.util.spec_from_file_location("new_requests", HERE / "new_requests.py")
new_requests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(new_requests)
NEW = new_requests.LABEL


@click.command(help=__doc__)
@click.option("--policy", "policy_folder", type=click.Path(path_type=Path, exists=True), required=True)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(policy_folder: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    wrapped = json.loads((HERE / "served" / "results.json").read_text())["curves"]
    lines, results = ["# The explained anchor in the product against served.py's wrapper (fast, per step)", ""], {}
    for name in ("toolalpaca", NEW):
        bench, queries = new_requests.new_seal_requests() if name == NEW else catalog_queries(name)
        steps = [s for q in queries for s in steps_of(q)]
        golds, ids = [s.gold for s in steps], [s.query.id for s in steps]
        bank = benchmark_bank(bench, "tools")
        policy = judge.policy_for(policy_folder, bank)
        assert policy.head_values.explain == 0.5, policy.head_values.explain
        hits = judge.selected(policy, bank, [step_input(bank, s) for s in steps], golds, "fast", 32)
        before = wrapped[name]["per_item"]
        assert wrapped[name]["ids"] == ids
        repeated = [len(set(s.context)) < len(s.context) for s in steps]
        differ = [i for i, (a, b) in enumerate(zip(hits, before["fast alpha=0.5"])) if a != b]
        d = paired_bootstrap(hits, before["bm25"], groups=ids)
        lines += [
            f"- {name}: product {sum(hits) / len(hits):.3f}, wrapper {sum(before['fast alpha=0.5']) / len(hits):.3f}, "
            f"{len(differ)} of {len(steps)} steps differ ({sum(repeated[i] for i in differ)} of them after a repeated "
            f"call; {sum(repeated)} steps follow one); product minus BM25 {d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"
        ]
        results[name] = {"ids": ids, "hits": hits, "differ": differ, "minus_bm25": d}
    (out / "results.json").write_text(json.dumps(results) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
