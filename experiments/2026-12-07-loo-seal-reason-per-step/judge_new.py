"""Judge a policy per step on the Seal-Tools requests no record had judged before 2026-12-06-dense-explain-away
(904 of 2,054; its new_requests.py), fast and reason mode with stock BM25, dense and hybrid in the same run.

    OMP_NUM_THREADS=2 python experiments/2026-12-07-loo-seal-reason-per-step/judge_new.py \\
        --policy runs/loo-seal-reason-step-policy --out experiments/2026-12-07-loo-seal-reason-per-step/judge-904

It is the three-catalogs judge (judge.py) with that record's requests in place of a catalog spec, so every figure
comes from the served path, `select_steps(..., arguments=False)`. Where both modes are judged it adds reason mode
minus fast mode, paired over requests. 2026-12-07-loo-seal-lexical-bfcl runs it with --modes fast and both measures.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import click

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from autotool.metrics import paired_bootstrap  # noqa: E402


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


judge = load("judge", ROOT / "experiments/2026-12-01-three-catalogs/judge.py")
new_requests = load("new_requests", ROOT / "experiments/2026-12-06-dense-explain-away/new_requests.py")


@click.command(help=__doc__)
@click.option("--policy", "policy_folder", type=click.Path(path_type=Path, exists=True), required=True)
@click.option("--embedder", default="tools", show_default=True)
@click.option("--modes", default="fast,reason", show_default=True, help="Policy modes, as judge.py's --modes.")
@click.option("--measures", default="per-step", show_default=True, help="per-query, per-step or both.")
@click.option("--batch-size", default=32, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(policy_folder: Path, embedder: str, modes: str, measures: str, batch_size: int, out: Path) -> None:
    started = time.time()
    out.mkdir(parents=True, exist_ok=True)
    judge.catalog_queries = lambda spec: new_requests.new_seal_requests()  # the 904 requests, not a catalog spec
    modes, measures = modes.split(","), tuple(measures.split(","))
    judged = judge.judge(new_requests.LABEL, embedder, policy_folder, modes, batch_size, measures)
    results = {"command": "python " + " ".join(sys.argv), "embedder": embedder, "policy": str(policy_folder)}
    results |= {"catalogs": {new_requests.LABEL: judged}, "wall_s": round(time.time() - started, 1)}
    text = judge.markdown(results)
    if {"fast", "reason"} <= set(modes):
        judged["reason_minus_fast"] = {}
        for measure, m in judged["measures"].items():
            reason, fast = m["per_item"]["reason"], m["per_item"]["fast"]
            d = judged["reason_minus_fast"][measure] = paired_bootstrap(reason, fast, groups=m["ids"])
            gained, lost = sum(r > f for r, f in zip(reason, fast)), sum(r < f for r, f in zip(reason, fast))
            text += (
                f"- {measure}, reason minus fast: {d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] "
                f"({gained} items gained, {lost} lost)\n"
            )
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
