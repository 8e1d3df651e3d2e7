"""Are two runs of the policy recipe the same, tensor for tensor? Compares every policy folder of train.sh's
runs (adapter and anchor head), the shipped policy, and the calibrations' records of two clones.

    python experiments/2026-12-05-train-default-one-go/same_policy.py /tmp/repro-default /tmp/repro-policy
"""

import argparse
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

POLICIES = [
    "runs/default-metatool/policy-sft",
    "runs/default-seal_tools/policy-sft",
    "runs/default-grpo/policy-grpo",
    "runs/default-rank-metatool/policy-rank",
    "runs/default-rank-seal_tools/policy-rank",
    "autotool/default_policy",
]
TENSORS = ["adapter/adapter_model.safetensors", "anchor_head.safetensors"]
RECORDS = [
    "experiments/2026-11-29-calibrate/results.md",
    "experiments/2026-11-30-calibrate-lexical/results.md",
    "experiments/2026-11-30-calibrate-rank/results.md",
]


def compare(a: Path, b: Path) -> str:
    x, y = load_file(a), load_file(b)
    if x.keys() != y.keys():
        return f"different tensors ({len(x)} vs {len(y)})"
    differ = [k for k in x if not np.array_equal(x[k], y[k])]
    if not differ:
        return f"identical ({len(x)} tensors)"
    largest = max(float(np.abs(x[k].astype(np.float64) - y[k]).max()) for k in differ)
    return f"{len(differ)} of {len(x)} tensors differ, largest difference {largest:.3g}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    args = parser.parse_args()
    print("| policy | file | first against second |\n|---|---|---|")
    for policy in POLICIES:
        for tensors in TENSORS:
            print(f"| {policy} | {tensors} | {compare(args.first / policy / tensors, args.second / policy / tensors)} |")
    for record in RECORDS:
        same = (args.first / record).read_bytes() == (args.second / record).read_bytes()
        print(f"| {record} | | {'identical' if same else 'different'} |")
