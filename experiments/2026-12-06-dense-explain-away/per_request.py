"""The 904 new Seal-Tools requests of joint.py judged per request (issue #23's measure: one call, a hit when the
first choice is any gold tool), the leave-out-Seal-Tools models as served; alpha moves no first step.

    OMP_NUM_THREADS=2 python experiments/2026-12-06-dense-explain-away/per_request.py --policy runs/refit-policy \\
        --out experiments/2026-12-06-dense-explain-away/per-request
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import click

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("joint", HERE / "joint.py")
joint = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(joint)
judge = joint.judge
sys.path.insert(0, str(HERE.parents[1]))

from autotool.benchmarks import benchmark_bank  # noqa: E402
from autotool.metrics import paired_bootstrap  # noqa: E402
from autotool.selection import StepInput  # noqa: E402


@click.command(help=__doc__)
@click.option("--policy", "policy_folder", type=click.Path(path_type=Path, exists=True), required=True)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(policy_folder: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    bench, queries = joint.new_seal_requests()
    golds, ids = [set(q.gold_tools) for q in queries], [q.id for q in queries]
    items = [StepInput(q.text, "", ()) for q in queries]
    stock, bank = benchmark_bank(bench, "stock"), benchmark_bank(bench, joint.EMBEDDER)
    hits = {m: judge.searched(stock, items, golds, m) for m in ("bm25", "dense", "hybrid")}
    policy = judge.policy_for(policy_folder, bank)
    for mode in ("fast", "fast:norerank"):
        hits[mode] = judge.selected(policy, bank, items, golds, mode, 32)
    means = {m: sum(v) / len(v) for m, v in hits.items()}
    best = max(("bm25", "dense", "hybrid"), key=means.get)
    paired = {m: paired_bootstrap(hits[m], hits[best], groups=ids) for m in ("fast", "fast:norerank")}
    lines = [
        f"# {joint.JUDGED}, per request ({len(queries)}), the leave-out-Seal-Tools models as served",
        "",
        "| " + " | ".join(means) + " |",
        "|" + "---:|" * len(means),
        "| " + " | ".join(f"{v:.3f}" for v in means.values()) + " |",
        "",
    ]
    lines += [f"- {m} minus {best}: {p['mean']:+.3f} [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}]" for m, p in paired.items()]
    (out / "results.json").write_text(json.dumps({"hit@1": means, "paired": paired, "ids": ids, "per_item": hits}) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
