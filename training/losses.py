"""Rewards and losses: ToolRL's reward, GRPO's group advantages and clipped objective, Plackett-Luce ranking."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from autotool.calls import toolrl_correctness
from training.config import at_least


@dataclass
class RewardWeights:
    """The weights of the reward's terms, `R = w_f R_format + w_c R_correct + w_s R_select` (see `reward`)."""

    format: float = field(
        default=1.0,
        metadata={
            "help": "w_f, the weight of R_format (1 when the thought is "
            "closed and the call is wrapped in its tags and parses)"
        },
    )
    correct: float = field(
        default=1.0,
        metadata={"help": "w_c, the weight of R_correct (in [-3, 3]: the parsed call against the gold one)"},
    )
    select: float = field(
        default=1.0, metadata={"help": "w_s, the weight of R_select (1 when the tool drawn is the gold tool)"}
    )

    def __post_init__(self):
        at_least(self, 0, "format", "correct", "select")


def reward(
    format_ok: bool, call: dict | None, gold_call: dict, chosen_tool: str, weights: RewardWeights = RewardWeights()
) -> dict[str, float]:
    """`R = w_f R_format + w_c R_correct + w_s R_select`, with each term (DESIGN.md section 3, ToolRL's rlla.py).

    R_format is 1 when the thought is closed and the call is wrapped in its tags and parses; R_correct in
    [-3, 3] scores the parsed call against the gold one (-3 without a call); R_select is 1 when the tool
    drawn from the selection distribution is the gold tool.
    """
    terms = {
        "r_format": float(format_ok),
        "r_correct": toolrl_correctness([gold_call], None if call is None else [call])["r_correct"],
        "r_select": float(chosen_tool == gold_call["name"]),
    }
    terms["reward"] = (
        weights.format * terms["r_format"] + weights.correct * terms["r_correct"] + weights.select * terms["r_select"]
    )
    return terms


def group_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """(groups, G) rewards -> `(r - mean) / (std + 1e-6)` per group; exactly 0 for a group of equal rewards."""
    mean = rewards.mean(dim=1, keepdim=True)
    std = rewards.std(dim=1, keepdim=True, unbiased=False)
    advantages = (rewards - mean) / (std + 1e-6)
    return torch.where(std > 0, advantages, torch.zeros_like(advantages))


def grpo_loss(
    token_logp: torch.Tensor,
    mask: torch.Tensor,
    tool_logp: torch.Tensor,
    advantages: torch.Tensor,
    old_token_logp: torch.Tensor,
    old_tool_logp: torch.Tensor,
    ref_token_logp: torch.Tensor | None = None,
    ref_tool_logp: torch.Tensor | None = None,
    epsilon: float = 0.2,
    beta: float = 0.0,
    tool_weight: float = 1.0,
) -> dict[str, torch.Tensor]:
    """GRPO's clipped surrogate with a KL penalty, over the written tokens and the tool choice of each rollout.

    Per action: `-(min(rho A, clip(rho, 1-eps, 1+eps) A) - beta KL)`, rho the probability ratio to the
    policy that wrote the rollout, KL the k3 estimate `exp(ref - logp) - (ref - logp) - 1`. A rollout's
    loss is the mean over its tokens plus `tool_weight` times the tool choice's term; the batch loss is the
    mean over rollouts.

    Args:
        token_logp, mask, old_token_logp, ref_token_logp: (batch, width); tool_logp, old_tool_logp,
            ref_tool_logp, advantages: (batch,).
    """

    def per_action(logp, old, ref, adv):
        ratio = torch.exp(logp - old)
        surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - epsilon, 1 + epsilon) * adv)
        kl = torch.zeros_like(logp) if ref is None else torch.exp(ref - logp) - (ref - logp) - 1
        return -(surrogate - beta * kl), kl, (ratio - 1).abs() > epsilon

    mask = mask.to(token_logp.dtype)
    tokens, token_kl, token_clipped = per_action(token_logp, old_token_logp, ref_token_logp, advantages[:, None])
    tool, tool_kl, tool_clipped = per_action(tool_logp, old_tool_logp, ref_tool_logp, advantages)
    n = mask.sum(dim=1).clamp(min=1)
    loss = ((tokens * mask).sum(dim=1) / n + tool_weight * tool).mean()
    return {
        "loss": loss,
        "kl": ((token_kl * mask).sum(dim=1) / n).mean().detach(),
        "tool_kl": tool_kl.mean().detach(),
        "clipped": ((token_clipped * mask).sum() / mask.sum().clamp(min=1)).detach(),
    }


def plackett_luce_loss(scores: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
    """Negative log-likelihood of the reward ranking under Plackett-Luce, with ties as unordered groups.

    With distinct rewards this is exactly `-sum_j [s_sigma(j) - log sum_{l >= j} exp(s_sigma(l))]`, sigma the
    rollouts sorted by reward, best first. Rollouts of equal reward form a tie group and are treated as
    Breslow treats ties in a partial likelihood: each member's term has the same pool, the group and
    everything ranked below it, so the loss does not depend on any order inside the group. The last group
    (nothing below it) adds nothing; all rewards equal gives 0.

    Args:
        scores: (n,) rollout scores `beta * (log pi_theta - log pi_ref)` of the selection segments.
        rewards: (n,) their rewards.
    """
    loss = scores.sum() * 0.0  # zero, but part of the graph: a batch of all-tied groups still back-propagates
    worst = rewards.min()
    for j in range(len(scores)):
        if rewards[j] > worst:
            pool = rewards <= rewards[j]  # j, its ties, and every worse rollout
            loss = loss - (scores[j] - torch.logsumexp(scores[pool], dim=0))
    return loss
