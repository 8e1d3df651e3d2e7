"""Compare the policies of a two-process and a one-process run (run.sh): how far each moved from its start,
how far apart they end, and the cosine between their updates. `--make-catalog DIR` writes the tiny catalog
(the one tests/training/test_phases.py uses).

    python experiments/2026-12-01-two-processes/compare.py TWO_RUN ONE_RUN
"""

import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

if sys.argv[1] == "--make-catalog":  # the tiny catalog of tests/training/test_phases.py
    root = Path(__file__).parents[2]
    sys.path[:0] = [str(root), str(root / "tests")]  # the packages first: tests/toolbank must not shadow toolbank
    from helpers import tiny_catalog

    tiny_catalog(Path(sys.argv[2]))
    sys.exit(0)

two, one = Path(sys.argv[1]), Path(sys.argv[2])
for part in ("adapter/adapter_model.safetensors", "anchor_head.safetensors"):
    start = load_file(one / "policy-initial" / part)
    assert all(torch.equal(start[k], load_file(two / "policy-initial" / part)[k]) for k in start)
    a, b = load_file(two / "policy-sft" / part), load_file(one / "policy-sft" / part)
    da = torch.cat([(a[k] - start[k]).flatten() for k in start])
    db = torch.cat([(b[k] - start[k]).flatten() for k in start])
    print(
        f"{part}: moved max |two| {da.abs().max():.2e}, |one| {db.abs().max():.2e}; "
        f"max |two - one| {(da - db).abs().max():.2e}; cosine of the updates {float(da @ db / (da.norm() * db.norm())):.3f}"
    )
