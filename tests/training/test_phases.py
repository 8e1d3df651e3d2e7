"""Phase I and Phase II end to end on a tiny benchmark with the tiny test model: files, resume, the masks."""

import csv
import json

import pytest
import torch
from helpers import ASSETS, TINY_TOOLS, tiny_catalog

from autotool import Policy
from autotool.benchmarks import benchmark_bank, load_benchmark
from training import loop, phase1, phase2

TINY = ASSETS / "tiny-llama"


@pytest.fixture(scope="module")
def bench_folder(tmp_path_factory):
    return tiny_catalog(tmp_path_factory.mktemp("bench") / "tiny")


def tiny_args(bench_folder, out, *extra):
    return [
        "--benchmark",
        str(bench_folder),
        "--backbone",
        str(TINY),
        "--embedder",
        "hash:64",
        "--out",
        str(out),
        "--rationale_tokens",
        "4",
        "--call_tokens",
        "6",
        "--eval.limit",
        "3",
        "--eval.splits",
        "[seen-test]",
        "--eval.batch_size",
        "4",
        "--checkpoint_every",
        "1",
        *extra,
    ]


def metrics(out):
    with open(out / "metrics.csv") as f:
        return list(csv.DictReader(f))


def adapter_and_head(path):
    from safetensors.torch import load_file

    return load_file(path / "adapter" / "adapter_model.safetensors"), load_file(path / "anchor_head.safetensors")


@pytest.fixture(scope="module")
def phase1_run(bench_folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "p1"
    rc = phase1.main(
        tiny_args(
            bench_folder,
            out,
            "--sft.steps",
            "3",
            "--sft.batch_size",
            "4",
            "--grpo.steps",
            "2",
            "--grpo.batch_size",
            "2",
            "--grpo.group",
            "3",
        )
    )
    assert rc == 0
    return out


def test_phase1_writes_policies_metrics_curves_and_evaluations(phase1_run):
    out = phase1_run
    for name in [
        "config.yaml",
        "trajectories.jsonl",
        "curves.png",
        "policy-initial/manifest.json",
        "policy-sft/manifest.json",
        "policy-grpo/manifest.json",
        "eval/initial.json",
        "eval/after-sft.json",
        "eval/after-grpo.json",
    ]:
        assert (out / name).is_file(), name
    assert list((out / "tensorboard").iterdir())
    logged = {(r["stage"], r["metric"]) for r in metrics(out)}
    for term in ["loss", "lm_loss", "select_loss", "p_gold"]:
        assert ("sft", term) in logged
    for term in ["loss", "reward", "r_format", "r_correct", "r_select", "kl", "clipped", "equal_groups"]:
        assert ("grpo", term) in logged
    evaluation = json.loads((out / "eval" / "after-grpo.json").read_text())
    assert {"seen-test/hit@1", "seen-test/format_error", "seen-test/reward"} <= set(evaluation["metrics"])
    manifest = json.loads((out / "policy-grpo" / "manifest.json").read_text())
    assert manifest["trained"] == "phase 1 on tiny: grpo" and manifest["split_seed"] == 0
    # Every saved policy folder (stage ends and checkpoints) records the catalog and split it trained on.
    record = [
        {"catalog": "tiny", "split": "train", "seed": 0, "tools_digest": manifest["trained_on"][0]["tools_digest"]}
    ]
    assert manifest["trained_on"] == record and len(record[0]["tools_digest"]) == 16
    saved = [out / "policy-sft", *(out / "checkpoints").glob("*/policy")]
    assert len(saved) > 1 and all(json.loads((p / "manifest.json").read_text())["trained_on"] == record for p in saved)
    assert "trained_on" not in json.loads((out / "policy-initial" / "manifest.json").read_text())


def test_all_tools_trains_on_every_tool_with_a_val_split_of_queries(bench_folder, tmp_path):
    from autotool.benchmarks import make_split

    bench = load_benchmark(bench_folder)
    split = make_split(bench, 0, all_tools=True)
    assert split.tools == {"train": sorted(TINY_TOOLS), "val": [], "unseen": []}
    assert len(split.queries["val"]) == round(0.2 * 48) and not split.queries["unseen-test"]
    every = split.queries["train"] + split.queries["val"] + split.queries["seen-test"]
    assert sorted(every) == sorted(q.id for q in bench.queries)  # each query in exactly one split
    out = tmp_path / "all"
    args = tiny_args(bench_folder, out, "--all_tools", "true", "--sft.steps", "1", "--sft.batch_size", "2")
    assert phase1.main([*args, "--grpo.steps", "0", "--eval.splits", "[val]"]) == 0
    trained = {step["tool"] for t in map(json.loads, (out / "trajectories.jsonl").open()) for step in t["steps"]}
    assert trained == set(TINY_TOOLS)  # the standard split would hold most of them out
    manifest = json.loads((out / "policy-sft" / "manifest.json").read_text())
    assert [(e["catalog"], e["split"]) for e in manifest["trained_on"]] == [("tiny", "all-tools")]
    assert json.loads((out / "eval" / "after-sft.json").read_text())["metrics"]["val/hit@1"] >= 0


def test_a_shortlist_run_records_it_and_a_run_from_its_policy_keeps_it(bench_folder, tmp_path, monkeypatch):
    from training import trainer

    seen = []
    original = trainer.with_shortlists
    monkeypatch.setattr(trainer, "with_shortlists", lambda *a: seen.extend(original(*a)) or seen[-len(a[0]) :])
    listed = tmp_path / "listed"
    args = tiny_args(bench_folder, listed, "--sft.steps", "2", "--sft.batch_size", "2", "--grpo.steps", "0")
    assert phase1.main([*args, "--shortlist", "2"]) == 0  # both train tools
    assert json.loads((listed / "policy-sft" / "manifest.json").read_text())["shortlist"] == 2
    assert seen and all(len(e.input.shortlist) == 2 and e.rationale in e.input.shortlist for e in seen)
    follow = tiny_args(
        bench_folder, tmp_path / "follow", "--sft.steps", "1", "--sft.batch_size", "2", "--grpo.steps", "0"
    )
    assert phase1.main([*follow, "--init", str(listed / "policy-sft")]) == 0  # shortlist -1: the start policy's
    assert json.loads((tmp_path / "follow" / "policy-sft" / "manifest.json").read_text())["shortlist"] == 2
    assert phase1.main([*tiny_args(bench_folder, tmp_path / "off", "--sft.steps", "1", "--grpo.steps", "0")]) == 0
    assert json.loads((tmp_path / "off" / "policy-sft" / "manifest.json").read_text())["shortlist"] == 0


def test_phase1_trains_the_adapters_and_the_anchor_head(phase1_run, bench_folder):
    (initial, initial_head), (sft, sft_head) = (
        adapter_and_head(phase1_run / p) for p in ("policy-initial", "policy-sft")
    )
    assert any(not torch.equal(initial[k], sft[k]) for k in initial if "lora_B" in k)
    assert any(not torch.equal(initial[k], sft[k]) for k in initial if "trainable_tokens" in k)
    assert initial_head["W.weight"].abs().sum() == 0 < sft_head["W.weight"].abs().sum()
    bank = benchmark_bank(load_benchmark(bench_folder), "hash:64")
    policy = Policy.load(phase1_run / "policy-grpo", bank)  # what select_tool and the harness load
    assert policy.trained and policy.head.uses_hidden


def test_no_held_out_tool_in_the_training_data(phase1_run, bench_folder):
    from autotool.benchmarks import load_split

    split = load_split(load_benchmark(bench_folder), 0)
    assert not (bench_folder / "splits").exists()  # training wrote nothing into the catalog's folder
    used = {
        s["tool"]
        for line in (phase1_run / "trajectories.jsonl").read_text().splitlines()
        for s in json.loads(line)["steps"]
    }
    assert used and used <= set(split.tools["train"]) and len(split.tools["train"]) < len(TINY_TOOLS)


def test_phase1_resumes_from_its_last_checkpoint(phase1_run, bench_folder, capsys):
    # as if the run had stopped after GRPO step 1 of 2, and is now asked for 3
    import shutil

    out = phase1_run.parent / "p1-resumed"
    shutil.copytree(phase1_run, out)
    shutil.rmtree(out / "policy-grpo")
    assert [p.name for p in (out / "checkpoints").iterdir() if p.name.startswith("grpo")] == ["grpo-000001"]
    rc = phase1.main(
        tiny_args(
            bench_folder,
            out,
            "--sft.steps",
            "3",
            "--sft.batch_size",
            "4",
            "--grpo.steps",
            "3",
            "--grpo.batch_size",
            "2",
            "--grpo.group",
            "3",
            "--eval.limit",
            "0",
        )
    )
    assert rc == 0
    printed = capsys.readouterr()
    assert "sft: already finished" in printed.err + printed.out
    assert "grpo: resuming at step 1" in printed.err + printed.out
    steps = sorted({int(r["step"]) for r in metrics(out) if r["stage"] == "grpo"})
    assert steps == [1, 2, 3] and (out / "policy-grpo" / "manifest.json").exists()


def test_config_errors_exit_nonzero_with_the_key(bench_folder, tmp_path, capsys):
    assert phase1.main(tiny_args(bench_folder, tmp_path / "x", "--grpo.grup", "3")) == 2
    assert "unknown key 'grpo.grup'" in capsys.readouterr().err
    assert phase1.main(tiny_args(bench_folder, tmp_path / "x", "--stages", "[sft, dpo]")) == 2
    assert phase2.main(tiny_args(bench_folder, tmp_path / "y")) == 2
    assert "key 'init'" in capsys.readouterr().err


def test_phase2_ranks_rollouts_and_trains_the_selection(phase1_run, bench_folder, tmp_path):
    import math
    import shutil

    from safetensors.torch import load_file, save_file

    # The SFT policy picks the gold tool of these queries every time (each group one tie, nothing to rank); with
    # a flat selection (sharpness g = 0.5) the tools drawn in a group differ, and so do their rewards.
    start = tmp_path / "policy-flat"
    shutil.copytree(phase1_run / "policy-sft", start)
    head = load_file(start / "anchor_head.safetensors")
    save_file({**head, "log_g": torch.tensor(math.log(0.5))}, start / "anchor_head.safetensors")
    out = tmp_path / "p2"
    rc = phase2.main(
        tiny_args(
            bench_folder,
            out,
            "--init",
            str(start),
            "--rank.steps",
            "2",
            "--rank.batch_size",
            "2",
            "--rank.candidates",
            "4",
            "--rank.beta",
            "1.0",
            "--rank.head_weight_decay",
            "0",
        )
    )  # W moves by the gradient alone
    assert rc == 0
    logged = {(r["stage"], r["metric"]) for r in metrics(out)}
    assert {("rank", "loss"), ("rank", "tied_groups"), ("rank", "reward")} <= logged
    (before, before_head), (after, after_head) = (adapter_and_head(p) for p in (start, out / "policy-rank"))
    tied = [float(r["value"]) for r in metrics(out) if r["metric"] == "tied_groups"]
    assert len(tied) == 2 and min(tied) < 1.0, "every group was one tie: no ranking to learn"
    assert any(not torch.equal(before[k], after[k]) for k in before if "lora_B" in k)  # the rationale tokens
    assert not torch.equal(before_head["W.weight"], after_head["W.weight"])  # the tool choice
    assert (out / "eval" / "after-rank.json").exists() and "after-rank" in (out / "summary.md").read_text()


def test_phase2_gradients_reach_only_the_selection_segments(bank):
    from autotool.prompts import TokenBudget
    from autotool.rollout import StepInput, ToolTable, rollout

    torch.manual_seed(0)
    policy = Policy.create(bank, backbone=TINY)
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.05)
    table = ToolTable.from_bank(bank)
    rollouts = [
        r for g in rollout(policy, table, [StepInput("weather in Paris")], group=3, budget=TokenBudget(4, 5)) for r in g
    ]
    reference = Policy.create(bank, backbone=TINY)
    policy.model.train()
    scores, token_logp = phase2.selection_scores(policy, reference, table, rollouts, beta=1.0)
    grads = {}
    token_logp.register_hook(lambda g: grads.setdefault("tokens", g))
    scores.sum().backward()
    g = grads["tokens"]
    for row, r in enumerate(rollouts):
        rationale = [i for i, s in enumerate(r.selection_mask) if s]
        call = [i for i, a in enumerate(r.action_mask) if a and not r.selection_mask[i]]
        assert call and torch.all(g[row, call] == 0)  # call tokens: masked
        assert torch.all(g[row, rationale] == 1.0)  # rationale tokens: d score / d log p = beta
        assert torch.all(g[row, : len(r.prompt_ids)] == 0)
    assert policy.head.W.weight.grad.abs().sum() > 0  # the tool choice reaches the anchor head


class TwoQueries:
    """A tiny policy with non-zero adapters and map W, its frozen start as reference, and 3 rollouts for each of
    two queries; `take_gradients()` returns the accumulated gradients of every trainable tensor and clears them."""

    def __init__(self, bank):
        from autotool.prompts import TokenBudget
        from autotool.rollout import StepInput, ToolTable, rollout

        torch.manual_seed(0)
        self.policy = Policy.create(bank, backbone=TINY)
        with torch.no_grad():
            for name, p in self.policy.model.named_parameters():
                if "lora_B" in name:
                    p.normal_(std=0.05)
            self.policy.head.W.weight.normal_(std=0.05)
        self.table = ToolTable.from_bank(bank)
        steps = [StepInput("weather in Paris"), StepInput("convert my pdf to text please")]
        self.rollouts = [
            r for g in rollout(self.policy, self.table, steps, group=3, budget=TokenBudget(4, 5)) for r in g
        ]
        self.reference = Policy.create(bank, backbone=TINY)
        self.policy.model.train()
        self.params = [p for p in [*self.policy.model.parameters(), *self.policy.head.parameters()] if p.requires_grad]

    def take_gradients(self) -> list[torch.Tensor]:
        grads = [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in self.params]
        for p in self.params:
            p.grad = None
        return grads


def test_phase2_backward_in_chunks_gives_the_gradient_of_one_backward(bank):
    t = TwoQueries(bank)
    values = torch.tensor([[2.0, 1.0, 0.0], [1.0, 1.0, 3.0]])  # distinct ranks, and a tie group
    scores, _ = phase2.selection_scores(t.policy, t.reference, t.table, t.rollouts, beta=0.5)
    one = torch.stack([phase2.plackett_luce_loss(s, v) for s, v in zip(scores.view(2, 3), values)]).mean()
    one.backward()
    expected = t.take_gradients()
    assert min(g.abs().max() for g in expected) > 1e-3  # every trainable tensor: far above the tolerance below
    for chunk in (2, 4, 6):
        loss, chunked_scores = phase2.ranking_backward(t.policy, t.reference, t.table, t.rollouts, values, 0.5, chunk)
        assert loss.item() == pytest.approx(one.item(), abs=1e-5)
        assert torch.allclose(chunked_scores.flatten(), scores.detach(), atol=1e-5)
        for got, want in zip(t.take_gradients(), expected):
            assert torch.allclose(got, want, atol=1e-5, rtol=1e-4)


def test_grpo_backward_in_chunks_gives_the_gradient_of_one_backward(bank):
    from autotool.rollout import logprobs
    from training.losses import grpo_loss

    t = TwoQueries(bank)
    advantages = torch.tensor([1.0, -0.5, -0.5, 0.0, 1.2, -1.2])
    config = phase1.GRPOConfig(beta=0.04)
    token_logp, mask, tool_logp = logprobs(t.policy, t.table, t.rollouts)
    with torch.no_grad():
        ref_token, _, ref_tool = logprobs(t.reference, t.table, t.rollouts)
    one = grpo_loss(
        token_logp,
        mask,
        tool_logp,
        advantages,
        token_logp.detach(),
        tool_logp.detach(),
        ref_token,
        ref_tool,
        config.epsilon,
        config.beta,
        config.tool_weight,
    )
    one["loss"].backward()
    expected = t.take_gradients()
    assert min(g.abs().max() for g in expected) > 1e-3  # every trainable tensor: far above the tolerance below
    for chunk in (2, 4, 6):
        chunks = loop.chunked(t.rollouts, chunk)
        with torch.no_grad():
            refs = [logprobs(t.reference, t.table, p) for p in chunks]
        out = phase1.grpo_backward(t.policy, t.table, chunks, advantages, refs, [None] * len(chunks), config)
        assert out["loss"] == pytest.approx(one["loss"].item(), abs=1e-5)
        assert out["kl"] == pytest.approx(one["kl"].item(), abs=1e-6)
        for got, want in zip(t.take_gradients(), expected):
            assert torch.allclose(got, want, atol=1e-5, rtol=1e-4)
