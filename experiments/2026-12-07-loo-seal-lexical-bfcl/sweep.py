"""Fast mode's BM25 weight l without Seal-Tools, fitted on API-Bank, ToolAlpaca and BFCL, per request.

    OMP_NUM_THREADS=2 python experiments/2026-12-07-loo-seal-lexical-bfcl/sweep.py --out experiments/2026-12-07-loo-seal-lexical-bfcl/sweep

2026-12-04-lexical-weight-loo's sweep (its `curve`: the served path, `select_steps(..., mode="fast",
arguments=False, rerank=False)`, the shipped head with l replaced, one call per request, any gold tool a hit) on
every request of API-Bank, ToolAlpaca and BFCL, with the `tools` embedder (fine-tuned on MetaTool only, so nothing
in this first stage read BFCL or Seal-Tools). The fitted l has the best mean of the three catalogs' hit@1 (each
catalog counts once), ties to the smaller l. The 1,000 Seal-Tools requests (seed 0) are reported beside it and
choose nothing.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import click

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

_spec = importlib.util.spec_from_file_location("sweep", ROOT / "experiments/2026-12-04-lexical-weight-loo/sweep.py")
lexical_weight_loo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lexical_weight_loo)
GRID, curve, mean = lexical_weight_loo.GRID, lexical_weight_loo.curve, lexical_weight_loo.mean

FIT = ("apibank", "toolalpaca", "bfcl:all")
BESIDE = "seal_tools:all:1000"
BASELINES = ("bm25", "dense", "hybrid")


@click.command(help=__doc__)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    curves = {}
    for spec in (*FIT, BESIDE):
        curves[spec] = curve(spec, "tools")
        print(f"{spec}: {time.perf_counter() - began:.0f} s", flush=True)
    score = {x: [mean(curves[s]["per_item"][f"l={x:g}"]) for s in (*FIT, BESIDE)] for x in GRID}
    fitted = max(GRID, key=lambda x: (mean(score[x][: len(FIT)]), -x))
    old = max(GRID, key=lambda x: (mean(score[x][:2]), -x))  # API-Bank and ToolAlpaca alone, as before
    seconds = round(time.perf_counter() - began, 1)
    results = {"fitted_l": fitted, "fitted_l_without_bfcl": old, "seconds": seconds, "curves": curves}
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    specs = (*FIT, BESIDE)
    lines = [
        "# Fast mode's BM25 weight l without the reranker, per request, `tools` embedder",
        "",
        "| l | " + " | ".join(specs) + " | fit mean (first three) | API-Bank and ToolAlpaca mean |",
        "|---:|" + "---:|" * (len(specs) + 2),
    ]
    for x in GRID:
        mark = "**" if x == fitted else ""
        row = score[x]
        lines.append(
            f"| {mark}{x:g}{mark} | " + " | ".join(f"{v:.3f}" for v in row)
            + f" | {mean(row[: len(FIT)]):.3f} | {mean(row[:2]):.3f} |"
        )
    for m in BASELINES:
        lines.append(f"| {m} (stock) | " + " | ".join(f"{mean(curves[s]['per_item'][m]):.3f}" for s in specs) + " | | |")
    lines += ["", f"Fitted l = {fitted:g} (API-Bank and ToolAlpaca alone: {old:g}). {seconds:.0f} s.", ""]
    (out / "results.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
