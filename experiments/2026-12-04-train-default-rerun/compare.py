"""Shipped models against a rerun of `make train-embedder` + `make train-reranker` (run.sh): validation hit@1
per request on API-Bank and ToolAlpaca, paired rerun minus shipped; with --rerun-root, the adapters' weights.

    python experiments/2026-12-04-train-default-rerun/compare.py [--rerun-root /tmp/repro] [--rerun DIR]

--rerun reads another rerun's fit outputs (default: rerun/ here); 2026-12-05-train-policy-rerun uses it.
"""

import argparse
import json
from pathlib import Path

import numpy as np

from autotool.metrics import paired_bootstrap
from training.fit_rerank import hits

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
SHIPPED_FIT = ROOT / "experiments/2026-12-02-rerank-served/fit/scores.json"
SHIPPED_RATIONALES = ROOT / "experiments/2026-12-03-rationale-weight-foreign/fit/rationales.json"
RERUN_FILES = ("rerank-scores.json", "rationales.json", "policy-manifest.json")
ADAPTERS = {
    "embedder": "toolbank/embedders/all-MiniLM-L6-v2-tools/adapter_model.safetensors",
    "reranker": "autotool/rerankers/all-MiniLM-L6-v2-rerank/adapter_model.safetensors",
}


def fmt(d: dict) -> str:
    return f"{d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"


def run_of(scores: Path, rationales: Path, manifest: Path) -> tuple[dict, dict, float, float]:
    """One run's per-request fast-mode scores, per-request reason hits by b, and its fitted c and b."""
    m = json.loads(manifest.read_text())
    fitted = m["rerank"]["weight"], m["rationale_fitted"]["b"]
    return json.loads(scores.read_text()), json.loads(rationales.read_text()), *fitted


def quality(rerun_dir: Path) -> list[str]:
    shipped, s_reason, s_c, s_b = run_of(
        SHIPPED_FIT, SHIPPED_RATIONALES, ROOT / "autotool/default_policy/manifest.json"
    )
    rerun, r_reason, r_c, r_b = run_of(*(rerun_dir / f for f in RERUN_FILES))
    lines = [
        "| catalog (requests) | measure | shipped | rerun | rerun minus shipped |",
        "|---|---|---:|---:|---|",
    ]
    measures = [("fast, no reranker (c = 0)", 0.0, 0.0), (f"fast (fitted c: shipped {s_c:g}, rerun {r_c:g})", s_c, r_c)]
    for catalog in shipped:
        assert [r["id"] for r in shipped[catalog]] == [r["id"] for r in rerun[catalog]]
        for label, c_shipped, c_rerun in measures:
            a, b = hits(rerun[catalog], c_rerun), hits(shipped[catalog], c_shipped)
            lines.append(
                f"| {catalog} ({len(a)}) | {label} | {np.mean(b):.3f} | {np.mean(a):.3f} | {fmt(paired_bootstrap(a, b))} |"
            )
        b = [r["hit"][f"{s_b:g}"] for r in s_reason[catalog]]
        a = [r["hit"][f"{r_b:g}"] for r in r_reason[catalog]]
        lines.append(
            f"| {catalog} ({len(a)}) | reason (fitted b: shipped {s_b:g}, rerun {r_b:g}) | {np.mean(b):.3f} "
            f"| {np.mean(a):.3f} | {fmt(paired_bootstrap(a, b))} |"
        )
    return lines


def weights(rerun_root: Path) -> list[str]:
    from safetensors.numpy import load_file

    lines = [
        "",
        "| adapter | tensors | identical | LoRA layers updated | median cosine of their update B A, shipped against rerun |",
    ]
    lines.append("|---|---:|---|---:|---:|")
    for name, path in ADAPTERS.items():
        a, b = load_file(ROOT / path), load_file(rerun_root / path)
        same = a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
        cosines = []
        for k in a:
            if "lora_A" in k:
                da, db = a[k.replace("lora_A", "lora_B")] @ a[k], b[k.replace("lora_A", "lora_B")] @ b[k]
                norms = np.linalg.norm(da) * np.linalg.norm(db)
                if norms:  # a layer outside the gradient's path stays at zero
                    cosines.append(float((da * db).sum() / norms))
        lines.append(f"| {name} | {len(a)} | {'yes' if same else 'no'} | {len(cosines)} | {np.median(cosines):.3f} |")
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rerun-root", type=Path, help="The clone run.sh trained in, to compare the weights.")
    parser.add_argument("--rerun", type=Path, default=HERE / "rerun", help="The rerun's fit outputs (RERUN_FILES).")
    args = parser.parse_args()
    print("\n".join(quality(args.rerun) + (weights(args.rerun_root) if args.rerun_root else [])))
