"""Slow: a few real SFT, GRPO and Phase II steps on the shipped backbone (SmolLM2-135M) and embedder (MiniLM)."""

import pytest
import torch

from training import loop
from training.config import load
from training.phase1 import Phase1, Phase1Config
from training.phase2 import Phase2, Phase2Config

pytestmark = pytest.mark.slow


def snapshot(policy):
    trained = [p for p in policy.model.parameters() if p.requires_grad]
    return [p.detach().clone() for p in trained], policy.head.W.weight.detach().clone()


def changed(before, policy):
    lora, w = before
    now, now_w = snapshot(policy)
    return any(not torch.equal(a, b) for a, b in zip(lora, now)), not torch.equal(w, now_w)


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    out = tmp_path_factory.mktemp("phase1")
    config = load(Phase1Config(), None, ["--out", str(out), "--max_examples", "8", "--eval.limit", "0",
                                         "--sft.batch_size", "8", "--grpo.batch_size", "4", "--grpo.group", "4",
                                         "--rationale_tokens", "24", "--call_tokens", "24"])
    trainer = Phase1(config)
    trainer.policy = trainer._initial_policy()
    return trainer


def test_sft_steps_reduce_the_loss_on_a_fixed_set_and_train_lora_and_head(trainer):
    fixed = trainer.examples[:8]  # batch size 8 over 8 examples: every step sees this set
    with torch.no_grad():
        before_loss = trainer.sft_loss(fixed)[0].item()
    before = snapshot(trainer.policy)
    trainer.optimizer = loop.make_optimizer(trainer.policy, 2e-4, 1e-3, 0.01)
    for step in range(4):
        trainer.sft_step(step)
    with torch.no_grad():
        after_loss = trainer.sft_loss(fixed)[0].item()
    assert after_loss < before_loss - 0.2, (before_loss, after_loss)
    assert changed(before, trainer.policy) == (True, True)


def test_grpo_steps_train_lora_and_head_from_the_reward(trainer):
    trainer.start_grpo()  # the reference: the policy as SFT left it
    trainer.optimizer = loop.make_optimizer(trainer.policy, 1e-4, 1e-3, 0.01)
    before = snapshot(trainer.policy)
    metrics = [trainer.grpo_step(step) for step in range(2)]
    assert all(-4.0 <= m["reward"] <= 5.0 for m in metrics)
    assert min(m["equal_groups"] for m in metrics) < 1.0, "every group had equal rewards: no learning signal"
    assert changed(before, trainer.policy) == (True, True)


def test_phase2_steps_train_the_selection(trainer, tmp_path):
    start = tmp_path / "start"
    trainer.policy.save(start)
    config = load(Phase2Config(), None, ["--out", str(tmp_path / "p2"), "--init", str(start), "--max_examples", "8",
                                         "--eval.limit", "0", "--rank.batch_size", "2", "--rank.candidates", "6",
                                         "--rationale_tokens", "24", "--call_tokens", "24"])
    phase2 = Phase2(config)
    phase2.policy = phase2._initial_policy()
    phase2.start()
    phase2.make_optimizer()
    before = snapshot(phase2.policy)
    metrics = [phase2.rank_step(step) for step in range(2)]
    assert min(m["tied_groups"] for m in metrics) < 1.0, "every group was one tie: no ranking to learn"
    lora_changed, head_changed = changed(before, phase2.policy)
    assert lora_changed and head_changed
