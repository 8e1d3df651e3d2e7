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
        ref_token, _, ref_tool = logprobs(reference, table, rollouts)
    width = token_logp.shape[1]
    selection = torch.tensor([r.selection_mask + [False] * (width - len(r.ids)) for r in rollouts],
                             device=token_logp.device) & mask
    log_ratio = ((token_logp - ref_token) * selection).sum(dim=1) + (tool_logp - ref_tool)
    return beta * log_ratio, token_logp


class Phase2(Trainer):
    def __init__(self, config: Phase2Config):
        if list(config.stages) != list(STAGES):
            raise ConfigError(f"key 'stages': Phase II has one stage, {STAGES[0]!r}")
        if not config.init:
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
        scores, _ = selection_scores(self.policy, self.reference, self.table, flat, c.beta)
        values = torch.tensor([rank_value(t) for g in terms for t in g], device=scores.device).view(len(batch), -1)
        scores = scores.view(len(batch), -1)
        loss = torch.stack([plackett_luce_loss(s, v) for s, v in zip(scores, values)]).mean()
        self.accelerator.backward(loss)
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
