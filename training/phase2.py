"""Phase II, tool-selection refinement: a Plackett-Luce ranking loss over the selection steps (DESIGN.md section 3).

    python -m training.phase2 --config training/configs/phase2.yaml --init runs/phase1-metatool/policy-grpo
    accelerate launch -m training.phase2 --config training/configs/phase2.yaml --init PHASE1_POLICY

For each query the policy writes N rollouts (sampled rationale, tool drawn from p(t | e'), sampled call),
rewarded as in Phase I and ranked by (tool hit, then format + call correctness); equal rewards are a tie
group. A rollout's score is `beta * (log pi_theta - log pi_ref)` of its selection segments (the rationale
tokens and the tool choice; call tokens are masked), pi_ref the policy Phase II started from; the loss is
the Plackett-Luce negative log-likelihood of the ranking (`training.losses.plackett_luce_loss`).
Same run folder, checkpoints, resume, logging and plots as Phase I (`python -m training.phase1 --help`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import torch

from autotool.rollout import logprobs
from training import loop
from training.config import ConfigError
from training.losses import RewardWeights, plackett_luce_loss
from training.phase1 import main as run_main
from training.trainer import RunConfig, Trainer

STAGES = ("rank",)


@dataclass
class RankConfig:
    steps: int = 12
    batch_size: int = 2  # queries per step
    candidates: int = 8  # rollouts per query (N)
    chunk: int = 4  # rollouts in one forward-backward of the loss (memory: one chunk's activations are held)
    beta: float = 0.1  # score scale
    lr: float = 2e-5
    head_lr: float = 2e-4
    head_weight_decay: float = 0.01
    temperature: float = 1.0
    max_grad_norm: float = 1.0
    reward: RewardWeights = field(default_factory=RewardWeights)


@dataclass
class Phase2Config(RunConfig):
    out: str = "runs/phase2"
    stages: list = field(default_factory=lambda: list(STAGES))
    rank: RankConfig = field(default_factory=RankConfig)


def rank_value(terms: dict[str, float]) -> float:
    """Rank by tool hit first, then by format + call correctness (at most 4 < 100)."""
    return 100.0 * terms["r_select"] + terms["r_format"] + terms["r_correct"]


def selection_scores(policy, reference, table, rollouts, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """`beta * (log pi_theta - log pi_ref)` of each rollout's selection segments, and the token log-probs
    of the current policy (for tests: their gradient must vanish outside the rationale)."""
    token_logp, mask, tool_logp = logprobs(policy, table, rollouts)
    with torch.no_grad():
        ref = selection_logp(rollouts, *logprobs(reference, table, rollouts))
    return beta * (selection_logp(rollouts, token_logp, mask, tool_logp) - ref), token_logp


def selection_logp(rollouts, token_logp: torch.Tensor, mask: torch.Tensor, tool_logp: torch.Tensor) -> torch.Tensor:
    """(n,) log-probability of each rollout's selection segments: its rationale tokens and its tool choice."""
    width = token_logp.shape[1]
    selection = torch.tensor([r.selection_mask + [False] * (width - len(r.ids)) for r in rollouts],
                             device=token_logp.device) & mask
    return (token_logp * selection).sum(dim=1) + tool_logp


def ranking_backward(policy, reference, table, rollouts, values: torch.Tensor, beta: float, chunk: int,
                     backward=torch.Tensor.backward) -> tuple[torch.Tensor, torch.Tensor]:
    """The Plackett-Luce loss of `values` (queries, candidates) over the rollouts' scores, with its gradient
    accumulated in the policy's parameters, `chunk` rollouts at a time; returns (loss, scores), detached.

    The loss couples every rollout of a query, so one backward would hold the activations of all of them (18.8
    GiB on Seal-Tools' long tool cards). Instead (gradient caching): the scores without a graph, the loss's
    gradient in the scores alone, then each chunk's forward again, back-propagated with its share of that
    gradient. Same gradient as one backward over all rollouts; one chunk's activations; one extra forward.
    """
    parts = loop.chunked(rollouts, chunk)
    with torch.no_grad():
        scores = torch.cat([selection_scores(policy, reference, table, p, beta)[0] for p in parts])
    scores = scores.view_as(values).requires_grad_()
    loss = torch.stack([plackett_luce_loss(s, v) for s, v in zip(scores, values)]).mean()
    (d_scores,) = torch.autograd.grad(loss, scores)
    d_own = beta * d_scores.flatten()
    for part, gradient in zip(parts, d_own.split([len(p) for p in parts])):
        backward(selection_logp(part, *logprobs(policy, table, part)), gradient=gradient)
    return loss.detach(), scores.detach()


class Phase2(Trainer):
    def __init__(self, config: Phase2Config):
        if list(config.stages) != list(STAGES):
            raise ConfigError(f"key 'stages': Phase II has one stage, {STAGES[0]!r}")
        if not config.init:
            raise ConfigError("key 'init': Phase II starts from a Phase I policy folder (--init PATH)")
        if config.rank.chunk < 1:
            raise ConfigError(f"key 'rank.chunk': rollouts a backward holds, at least 1; got {config.rank.chunk}")
        super().__init__(config, list(config.stages), "phase 2")
        self.reference = None

    def rank_step(self, step: int) -> dict[str, float]:
        c, started = self.config.rank, time.perf_counter()
        batch = self.batch(step, c.batch_size)
        torch.manual_seed(self.config.train_seed * 1_000_003 + step)  # resumable sampling
        groups, terms = self.rewarded_rollouts(batch, c.candidates, c.temperature, c.reward)
        generated = time.perf_counter()
        self.policy.model.train()
        flat = [r for g in groups for r in g]
        values = torch.tensor([[rank_value(t) for t in g] for g in terms], device=self.accelerator.device)
        loss, scores = ranking_backward(self.policy, self.reference, self.table, flat, values, c.beta, c.chunk,
                                        self.accelerator.backward)
        norm = loop.clip_and_step(self.policy, self.optimizer, c.max_grad_norm, self.accelerator)
        seconds = time.perf_counter() - started
        every = [t for g in terms for t in g]
        mean = lambda key: sum(t[key] for t in every) / len(every)  # noqa: E731
        return {"loss": loss.item(), "reward": mean("reward"), "r_format": mean("r_format"),
                "r_correct": mean("r_correct"), "r_select": mean("r_select"),
                "tied_groups": float((values.std(dim=1) == 0).float().mean()),
                "score_spread": (scores.max(dim=1).values - scores.min(dim=1).values).mean().item(),
                "grad_norm": norm, "W_norm": self.policy.head.W.weight.norm().item(),
                "generate_s": generated - started, "seconds": seconds, "rollouts_per_s": len(flat) / seconds}

    def start(self) -> None:
        self.reference = self.frozen_copy()

    def make_optimizer(self):
        c = self.config.rank
        self.optimizer = loop.make_optimizer(self.policy, c.lr, c.head_lr, c.head_weight_decay)
        return self.optimizer

    def train(self):
        return self.run({"rank": self.config.rank.steps}, {"rank": self.rank_step}, {"rank": self.make_optimizer},
                        {"rank": self.start})


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--help" in argv or "-h" in argv:
        print(__doc__)
        return 0
    return run_main(argv, Phase2Config, Phase2)


if __name__ == "__main__":
    sys.exit(main())
