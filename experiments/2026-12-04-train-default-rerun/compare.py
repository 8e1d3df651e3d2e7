"""Shipped models against a rerun of `make train-embedder` + `make train-reranker` (run.sh): validation hit@1
per request on API-Bank and ToolAlpaca, paired rerun minus shipped; with --rerun-root, the adapters' weights.

    python experiments/2026-12-04-train-default-rerun/compare.py [--rerun-root /tmp/repro]
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
ADAPTERS = {
    "embedder": "toolbank/embedders/all-MiniLM-L6-v2-tools/adapter_model.safetensors",
    "reranker": "autotool/rerankers/all-MiniLM-L6-v2-rerank/adapter_model.safetensors",
}


def fmt(d: dict) -> str:
    return f"{d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"


def quality() -> list[str]:
    shipped, rerun = json.loads(SHIPPED_FIT.read_text()), json.loads((HERE / "rerun/rerank-scores.json").read_text())
    reason = {
        "shipped": (json.loads(SHIPPED_RATIONALES.read_text()), "0.2"),  # each run's fitted b
        "rerun": (json.loads((HERE / "rerun/rationales.json").read_text()), "0"),
    }
    lines = [
        "| catalog (requests) | measure | shipped | rerun | rerun minus shipped |",
        "|---|---|---:|---:|---|",
    ]
    for catalog in shipped:
        assert [r["id"] for r in shipped[catalog]] == [r["id"] for r in rerun[catalog]]
        for label, c in (("fast, no reranker (c = 0)", 0.0), ("fast (c = 1, fitted in both)", 1.0)):
            a, b = hits(rerun[catalog], c), hits(shipped[catalog], c)
            lines.append(
                f"| {catalog} ({len(a)}) | {label} | {np.mean(b):.3f} | {np.mean(a):.3f} | {fmt(paired_bootstrap(a, b))} |"
            )
        (s_rows, s_b), (r_rows, r_b) = reason["shipped"], reason["rerun"]
        b = [r["hit"][s_b] for r in s_rows[catalog]]
        a = [r["hit"][r_b] for r in r_rows[catalog]]
        lines.append(
            f"| {catalog} ({len(a)}) | reason (b fitted: shipped 0.2, rerun 0) | {np.mean(b):.3f} | {np.mean(a):.3f} "
            f"| {fmt(paired_bootstrap(a, b))} |"
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
                if np.linalg.norm(da) and np.linalg.norm(db):  # a layer outside the gradient's path stays at zero
                    cosines.append(float((da * db).sum() / (np.linalg.norm(da) * np.linalg.norm(db))))
        lines.append(f"| {name} | {len(a)} | {'yes' if same else 'no'} | {len(cosines)} | {np.median(cosines):.3f} |")
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rerun-root", type=Path, help="The clone run.sh trained in, to compare the weights.")
    args = parser.parse_args()
    print("\n".join(quality() + (weights(args.rerun_root) if args.rerun_root else [])))
