"""Phase II, tool-selection refinement: a Plackett-Luce ranking loss over the selection steps (DESIGN.md section 3).

    python -m training.phase2 --config training/configs/phase2.yaml --init runs/phase1-metatool/policy-grpo
    accelerate launch --multi_gpu --num_processes 2 -m training.phase2 --config training/configs/phase2.yaml --init PHASE1_POLICY

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
from training.cli import run
from training.config import ConfigError, at_least, positive, require
from training.losses import RewardWeights, plackett_luce_loss
from training.phase1 import command
from training.trainer import RunConfig, Trainer

STAGES = ("rank",)


@dataclass
class RankConfig:
    """The Plackett-Luce ranking of each query's sampled rollouts by their rewards."""

    steps: int = field(default=12, metadata={"help": "optimizer steps"})
    batch_size: int = field(default=2, metadata={"help": "queries per step"})
    candidates: int = field(default=8, metadata={"help": "rollouts per query (N), ranked against each other"})
    chunk: int = field(
        default=4,
        metadata={
            "help": "rollouts in one forward-backward of the loss (memory: one "
            "chunk's activations are held; the gradient is the same)"
        },
    )
    beta: float = field(
        default=0.1,
        metadata={
            "help": "score scale: a rollout's score is beta * (log pi_theta - log pi_ref) of its selection segments"
        },
    )
    lr: float = field(default=2e-5, metadata={"help": "learning rate of the LoRA adapters and token embeddings"})
    head_lr: float = field(default=2e-4, metadata={"help": "learning rate of the anchor head (0 keeps it as it is)"})
    head_weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay of the head's map W"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature of the rollouts"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient norm clip"})
    reward: RewardWeights = field(
        default_factory=RewardWeights,
        metadata={"help": "the reward's weights (rollouts are ranked by tool hit, then format + call correctness)"},
    )

    def __post_init__(self):
        at_least(self, 0, "steps", "lr", "head_lr", "head_weight_decay")
        at_least(self, 1, "batch_size", "chunk")
        at_least(self, 2, "candidates")  # a ranking needs two rollouts
        positive(self, "beta", "temperature", "max_grad_norm")


@dataclass
class Phase2Config(RunConfig):
    """Phase II: the ranking stage, from a Phase I policy (`init`)."""

    out: str = field(
        default="runs/phase2",
        metadata={"help": "the run folder; a second run with the same one resumes from its last checkpoint"},
    )
    stages: list = field(
        default_factory=lambda: list(STAGES), metadata={"help": f"the stages to run: {', '.join(STAGES)} only"}
    )
    rank: RankConfig = field(default_factory=RankConfig, metadata={"help": "the ranking stage"})

    def __post_init__(self):
        super().__post_init__()
        require(
            list(self.stages) == list(STAGES),
            "stages",
            f"must be [{STAGES[0]}]: Phase II has one stage; got {self.stages!r}",
        )


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
    selection = (
        torch.tensor([r.selection_mask + [False] * (width - len(r.ids)) for r in rollouts], device=token_logp.device)
        & mask
    )
    return (token_logp * selection).sum(dim=1) + tool_logp


def ranking_backward(
    policy,
    reference,
    table,
    rollouts,
    values: torch.Tensor,
    beta: float,
    chunk: int,
    backward=torch.Tensor.backward,
    forward=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The Plackett-Luce loss of `values` (queries, candidates) over the rollouts' scores, with its gradient
    accumulated in the policy's parameters, `chunk` rollouts at a time; returns (loss, scores), detached.

    The loss couples every rollout of a query, so one backward would hold the activations of all of them
    (measured: bench/README.md). Instead (gradient caching): the scores without a graph, the loss's
    gradient in the scores alone, then each chunk's forward again, back-propagated with its share of that
    gradient. Same gradient as one backward over all rollouts; one chunk's activations; one extra forward.
    `forward(table, rollouts)` computes `logprobs` with gradients (default: of `policy`; training passes the
    prepared `loop.PolicyForward`).
    """
    forward = forward or (lambda table, rollouts: logprobs(policy, table, rollouts))
    parts = loop.chunked(rollouts, chunk)
    with torch.no_grad():
        scores = torch.cat([selection_scores(policy, reference, table, p, beta)[0] for p in parts])
    scores = scores.view_as(values).requires_grad_()
    loss = torch.stack([plackett_luce_loss(s, v) for s, v in zip(scores, values)]).mean()
    (d_scores,) = torch.autograd.grad(loss, scores)
    d_own = beta * d_scores.flatten()
    for part, gradient in zip(parts, d_own.split([len(p) for p in parts])):
        backward(selection_logp(part, *forward(table, part)), gradient=gradient)
    return loss.detach(), scores.detach()


class Phase2(Trainer):
    def __init__(self, config: Phase2Config):
        if not config.init:  # not a check of Phase2Config: the shipped phase2.yaml leaves init to the command line
            raise ConfigError("key 'init': Phase II starts from a Phase I policy folder (--init PATH)")
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
        loss, scores = ranking_backward(
            self.policy,
            self.reference,
            self.table,
            flat,
            values,
            c.beta,
            c.chunk,
            self.accelerator.backward,
            self.forward,
        )
        norm = loop.clip_and_step(self.policy, self.optimizer, c.max_grad_norm, self.accelerator)
        seconds = time.perf_counter() - started
        every = [t for g in terms for t in g]
        mean = lambda key: sum(t[key] for t in every) / len(every)
        return {
            "loss": loss.item(),
            "reward": mean("reward"),
            "r_format": mean("r_format"),
            "r_correct": mean("r_correct"),
            "r_select": mean("r_select"),
            "tied_groups": float((values.std(dim=1) == 0).float().mean()),
            "score_spread": (scores.max(dim=1).values - scores.min(dim=1).values).mean().item(),
            "grad_norm": norm,
            "W_norm": self.policy.head.W.weight.norm().item(),
            "generate_s": generated - started,
            "seconds": seconds,
            "rollouts_per_s": len(flat) / seconds,
        }

    def start(self) -> None:
        self.reference = self.frozen_copy()

    def make_optimizer(self):
        c = self.config.rank
        self.optimizer = loop.make_optimizer(self.policy, c.lr, c.head_lr, c.head_weight_decay)
        return self.optimizer

    def train(self):
        return self.run(
            {"rank": self.config.rank.steps},
            {"rank": self.rank_step},
            {"rank": self.make_optimizer},
            {"rank": self.start},
        )


cli = command(__doc__, Phase2Config, Phase2)


def main(argv: list[str] | None = None) -> int:
    """`python -m training.phase2 ARGS`, returning the exit code (default `sys.argv[1:]`)."""
    return run(cli, argv)


if __name__ == "__main__":
    sys.exit(main())
