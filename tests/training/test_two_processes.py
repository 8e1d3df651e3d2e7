"""Training in two CPU processes (`accelerate launch`, gloo): the processes end with the same parameters, and
Phase I's SFT matches one process at the same global batch (slow: it starts five training processes)."""

import json
import os
import subprocess
import sys

import pytest
import torch
from helpers import ASSETS, tiny_catalog
from safetensors.torch import load_file

pytestmark = pytest.mark.slow
PARTS = ("adapter/adapter_model.safetensors", "anchor_head.safetensors")
# `--multi_gpu` is accelerate's flag for "several local processes"; with no GPU they run on the CPU with gloo
# (`--cpu` would start one process whatever --num_processes says)
LAUNCH = ["-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1"]
LAUNCH += ["--mixed_precision", "no", "--dynamo_backend", "no"]


def train(tmp_path, module, out, processes, *extra):
    args = ["--benchmark", str(tmp_path / "tiny"), "--backbone", str(ASSETS / "tiny-llama"), "--embedder", "hash:64"]
    args += ["--rationale_tokens", "4", "--call_tokens", "6", "--eval.limit", "0", "--threads", "1", "--out", str(out)]
    command = [sys.executable, *(LAUNCH if processes == 2 else []), "-m", module, *args, *extra]
    env = {**os.environ, "AUTOTOOL_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def manifest(folder):
    return json.loads((folder / "manifest.json").read_text())


def moved(start, end):
    """The update of each part from `start` to `end`, flattened."""
    return {
        part: torch.cat([(load_file(end / part)[k] - v).flatten() for k, v in load_file(start / part).items()])
        for part in PARTS
    }


def test_two_processes_agree_and_match_one_process(tmp_path):
    tiny_catalog(tmp_path / "tiny")
    two, one, ranked = tmp_path / "two", tmp_path / "one", tmp_path / "ranked"
    grpo = ["--grpo.steps", "1", "--grpo.batch_size", "1", "--grpo.group", "2"]
    train(tmp_path, "training.phase1", two, 2, "--sft.steps", "3", "--sft.batch_size", "4", *grpo)
    train(tmp_path, "training.phase1", one, 1, "--sft.steps", "3", "--sft.batch_size", "8", "--grpo.steps", "0")
    ranking = ["--rank.steps", "1", "--rank.batch_size", "1", "--rank.candidates", "2"]
    train(tmp_path, "training.phase2", ranked, 2, "--init", str(two / "policy-sft"), *ranking)

    for folder in (two / "policy-sft", two / "policy-grpo", ranked / "policy-rank"):
        info = manifest(folder)
        assert (info["processes"], info["rank_spread"]) == (2, 0.0), folder  # every process holds the same policy
    assert manifest(one / "policy-sft")["processes"] == 1

    for part in PARTS:  # the same start (rank 0's seed), hence the same update
        assert all(
            torch.equal(v, load_file(one / "policy-initial" / part)[k])
            for k, v in load_file(two / "policy-initial" / part).items()
        )
    two_moved, one_moved = (
        moved(two / "policy-initial", two / "policy-sft"),
        moved(one / "policy-initial", one / "policy-sft"),
    )
    for part in PARTS:
        assert one_moved[part].abs().max() > 1e-4, part  # the runs trained: the match below says something
        assert (two_moved[part] - one_moved[part]).abs().max() < 1e-5, part  # measured: 1.5e-8 adapter, 1.1e-6 head
    grpo_moved = moved(two / "policy-sft", two / "policy-grpo")
    assert grpo_moved["adapter/adapter_model.safetensors"].abs().max() > 0  # the GRPO step in two processes trained
