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
    config = load(
        Phase1Config(),
        None,
        [
            "--out",
            str(out),
            "--max_examples",
            "8",
            "--eval.limit",
            "0",
            "--sft.batch_size",
            "8",
            "--grpo.batch_size",
            "4",
            "--grpo.group",
            "4",
            "--rationale_tokens",
            "24",
            "--call_tokens",
            "24",
        ],
    )
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


def test_grpo_steps_log_their_rewards_lower_their_loss_and_train_lora_and_head(trainer):
    from autotool.rollout import logprobs
    from training.losses import group_advantages, grpo_loss

    trainer.start_grpo()  # the reference: the policy as SFT left it
    trainer.optimizer = loop.make_optimizer(trainer.policy, 1e-4, 1e-3, 0.01)
    c, table = trainer.config.grpo, trainer.table
    written = []  # each step's rollouts, reward terms, and log-probabilities under the policy that wrote them
    sample = trainer.rewarded_rollouts

    def recorded(*args):
        groups, terms = sample(*args)
        flat = [r for g in groups for r in g]
        with torch.no_grad():
            written.append((groups, terms, logprobs(trainer.policy, table, flat)))
        return groups, terms

    trainer.rewarded_rollouts = recorded
    before = snapshot(trainer.policy)
    learned = 0
    for step in range(2):
        metrics = trainer.grpo_step(step)
        groups, terms, (old_token, mask, old_tool) = written[step]
        rewards = torch.tensor([[t["reward"] for t in g] for g in terms])
        every = [t for g in terms for t in g]
        for key in ("reward", "r_format", "r_correct", "r_select"):  # what is logged is the batch's mean
            assert metrics[key] == pytest.approx(sum(t[key] for t in every) / len(every)), key
        assert metrics["equal_groups"] == pytest.approx(float((rewards.std(dim=1) == 0).float().mean()))
        assert metrics["reward_std"] == pytest.approx(float(rewards.std(dim=1, unbiased=False).mean()))
        if metrics["equal_groups"] == 1.0:
            continue
        # The step descends its own objective: the loss it logged (at the policy that wrote the rollouts), and
        # the same loss on the same rollouts after the optimizer step, lower.
        flat = [r for g in groups for r in g]
        advantages = group_advantages(rewards).flatten()
        with torch.no_grad():
            ref_token, _, ref_tool = logprobs(trainer.reference, table, flat)
            token, _, tool = logprobs(trainer.policy, table, flat)
        at_start = grpo_loss(
            old_token,
            mask,
            old_tool,
            advantages,
            old_token,
            old_tool,
            ref_token,
            ref_tool,
            c.epsilon,
            c.beta,
            c.tool_weight,
        )["loss"].item()
        after = grpo_loss(
            token, mask, tool, advantages, old_token, old_tool, ref_token, ref_tool, c.epsilon, c.beta, c.tool_weight
        )["loss"].item()
        assert metrics["loss"] == pytest.approx(at_start, abs=1e-4)
        assert after < at_start, (at_start, after)
        learned += 1
    assert learned, "every group had equal rewards: no learning signal"
    assert changed(before, trainer.policy) == (True, True)


def test_phase2_steps_train_the_selection(trainer, tmp_path):
    start = tmp_path / "start"
    trainer.policy.save(start)
    config = load(
        Phase2Config(),
        None,
        [
            "--out",
            str(tmp_path / "p2"),
            "--init",
            str(start),
            "--max_examples",
            "8",
            "--eval.limit",
            "0",
            "--rank.batch_size",
            "2",
            "--rank.candidates",
            "6",
            "--rationale_tokens",
            "24",
            "--call_tokens",
            "24",
        ],
    )
    phase2 = Phase2(config)
    phase2.policy = phase2._initial_policy()
    phase2.start()
    phase2.make_optimizer()
    before = snapshot(phase2.policy)
    metrics = [phase2.rank_step(step) for step in range(2)]
    assert min(m["tied_groups"] for m in metrics) < 1.0, "every group was one tie: no ranking to learn"
    lora_changed, head_changed = changed(before, phase2.policy)
    assert lora_changed and head_changed
