"""Phase I, trajectory stabilisation: SFT, then GRPO with the ToolRL reward (DESIGN.md section 3).

    python -m training.phase1 --config training/configs/phase1.yaml [--key value ...]
    python -m training.phase1 --config training/configs/phase1.yaml --stages '[grpo]' --init runs/x/policy-sft
    accelerate launch --multi_gpu --num_processes 2 -m training.phase1 --config training/configs/phase1.yaml

Any config key can be overridden: `--sft.steps 10 --grpo.group 8 --out runs/try` (`--help` lists every key
with its type, default and meaning). Run it again with the same `--out` to resume from the last checkpoint.
Writes into `out`: metrics.csv, curves.png, tensorboard/, checkpoints/, policy-sft/, policy-grpo/,
eval/{initial,after-sft,after-grpo}.json.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import click
import torch

from autotool.policy import embed
from autotool.rollout import logprobs, teacher_rollout
from training import loop
from training.cli import CommandError, ConfigCommand, doc_help, run
from training.config import ConfigError, at_least, load, positive, require
from training.losses import RewardWeights, group_advantages, grpo_loss
from training.trainer import RunConfig, Trainer

STAGES = ("sft", "grpo")


@dataclass
class SFTConfig:
    """Supervised fine-tuning on the trajectories: the language-model loss plus the selection cross-entropy."""

    steps: int = field(default=60, metadata={"help": "optimizer steps"})
    batch_size: int = field(default=8, metadata={"help": "training steps (examples) per optimizer step"})
    lr: float = field(default=2e-4, metadata={"help": "learning rate of the LoRA adapters and token embeddings"})
    head_lr: float = field(default=1e-3, metadata={"help": "learning rate of the anchor head (0 keeps it as it is)"})
    head_weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay of the head's map W"})
    select_weight: float = field(
        default=1.0, metadata={"help": "weight of the selection cross-entropy beside the language-model loss"}
    )
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient norm clip"})

    def __post_init__(self):
        at_least(self, 0, "steps", "lr", "head_lr", "head_weight_decay", "select_weight")
        at_least(self, 1, "batch_size")
        positive(self, "max_grad_norm")


@dataclass
class GRPOConfig:
    """GRPO with the ToolRL reward: groups of sampled rollouts per query, advantages within each group."""

    steps: int = field(default=20, metadata={"help": "optimizer steps"})
    batch_size: int = field(default=4, metadata={"help": "queries per step"})
    group: int = field(default=4, metadata={"help": "rollouts per query (G); the advantages compare them"})
    lr: float = field(default=5e-5, metadata={"help": "learning rate of the LoRA adapters and token embeddings"})
    head_lr: float = field(default=2e-4, metadata={"help": "learning rate of the anchor head (0 keeps it as it is)"})
    head_weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay of the head's map W"})
    beta: float = field(default=0.04, metadata={"help": "KL coefficient (0: no KL term and no reference policy)"})
    epsilon: float = field(
        default=0.2, metadata={"help": "ratio clip: the ratio is clipped to [1 - epsilon, 1 + epsilon]"}
    )
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature of the rollouts"})
    updates_per_batch: int = field(
        default=1, metadata={"help": "optimizer steps on each batch of rollouts (ratio != 1 from the second on)"}
    )
    chunk: int = field(
        default=4,
        metadata={
            "help": "rollouts in one forward-backward (memory: one chunk's "
            "activations are held; the gradient is the same)"
        },
    )
    tool_weight: float = field(
        default=1.0, metadata={"help": "weight of the tool choice's term beside the mean over tokens"}
    )
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient norm clip"})
    reward: RewardWeights = field(default_factory=RewardWeights, metadata={"help": "the reward's weights"})

    def __post_init__(self):
        at_least(self, 0, "steps", "lr", "head_lr", "head_weight_decay", "beta", "tool_weight")
        at_least(self, 1, "batch_size", "updates_per_batch", "chunk")
        at_least(self, 2, "group")  # one rollout has no group to be compared with: its advantage is 0
        require(0 < self.epsilon < 1, "epsilon", f"must be between 0 and 1, got {self.epsilon!r}")
        positive(self, "temperature", "max_grad_norm")


@dataclass
class Phase1Config(RunConfig):
    """Phase I: SFT, then GRPO."""

    out: str = field(
        default="runs/phase1",
        metadata={"help": "the run folder; a second run with the same one resumes from its last checkpoint"},
    )
    stages: list = field(
        default_factory=lambda: list(STAGES), metadata={"help": f"the stages to run, in order ({', '.join(STAGES)})"}
    )
    sft: SFTConfig = field(default_factory=SFTConfig, metadata={"help": "supervised fine-tuning"})
    grpo: GRPOConfig = field(default_factory=GRPOConfig, metadata={"help": "GRPO"})

    def __post_init__(self):
        super().__post_init__()
        require(
            bool(self.stages) and all(s in STAGES for s in self.stages),
            "stages",
            f"must be a list of {', '.join(STAGES)}; got {self.stages!r}",
        )


def grpo_backward(
    policy,
    table,
    chunks,
    advantages: torch.Tensor,
    refs,
    olds,
    c: GRPOConfig,
    backward=torch.Tensor.backward,
    forward=None,
) -> dict[str, float]:
    """Accumulate the gradient of `grpo_loss` over all rollouts, one chunk of rollouts at a time.

    The loss is a mean over rollouts, so each chunk's mean, weighted by its share of the rollouts, sums to it:
    the gradient is the one a single backward gives, with one chunk's activations held instead of every rollout's
    (measured: bench/README.md). `refs` and `olds` are each chunk's `logprobs` under the reference and the
    policy that wrote the rollouts (None: no KL term; the ratio is taken to the current policy). `forward(table,
    rollouts)` computes `logprobs` with gradients (default: of `policy`; training passes the prepared
    `loop.PolicyForward`). Returns the loss and its diagnostics over the whole batch.
    """
    forward = forward or (lambda table, rollouts: logprobs(policy, table, rollouts))
    total = sum(len(p) for p in chunks)
    sums, tokens = {"loss": 0.0, "kl": 0.0, "tool_kl": 0.0, "clipped": 0.0}, 0.0
    for part, part_advantages, ref, old in zip(chunks, advantages.split([len(p) for p in chunks]), refs, olds):
        token_logp, mask, tool_logp = forward(table, part)
        old_token, old_tool = (token_logp.detach(), tool_logp.detach()) if old is None else (old[0], old[2])
        ref_token, ref_tool = (None, None) if ref is None else (ref[0], ref[2])
        out = grpo_loss(
            token_logp,
            mask,
            tool_logp,
            part_advantages,
            old_token,
            old_tool,
            ref_token,
            ref_tool,
            c.epsilon,
            c.beta,
            c.tool_weight,
        )
        share = len(part) / total
        backward(out["loss"] * share)
        for key in ("loss", "kl", "tool_kl"):
            sums[key] += float(out[key].detach()) * share
        sums["clipped"] += float(out["clipped"]) * float(mask.sum())
        tokens += float(mask.sum())
    sums["clipped"] /= max(tokens, 1.0)
    return sums


class Phase1(Trainer):
    def __init__(self, config: Phase1Config):
        super().__init__(config, list(config.stages), "phase 1")
        self.reference = None

    def sft_loss(self, batch: list) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Language-model loss on the rationale and call tokens + `select_weight` x the selection cross-entropy."""
        queries = embed(self.table.embedder, [e.input.query for e in batch])
        rationales = embed(self.table.embedder, [e.rationale for e in batch])
        rollouts = [
            teacher_rollout(self.policy, self.table, e.input, e.rationale, e.tool, e.call, q, r)
            for e, q, r in zip(batch, queries, rationales)
        ]
        token_logp, mask, tool_logp = self.forward(self.table, rollouts)
        # the mean over every process's tokens: each process divides its sum by the tokens of all of them (times
        # the processes, as the gradients are averaged), not by its own
        a = self.accelerator
        tokens = a.reduce(mask.sum().float(), "sum") if a.num_processes > 1 else mask.sum()
        lm = -(token_logp * mask).sum() * a.num_processes / tokens
        select = -tool_logp.mean()
        return lm + self.config.sft.select_weight * select, {
            "lm_loss": a.reduce(lm.detach(), "mean") if a.num_processes > 1 else lm,
            "select_loss": select,
            "p_gold": tool_logp.exp().mean(),
        }

    def sft_step(self, step: int) -> dict[str, float]:
        c, started = self.config.sft, time.perf_counter()
        batch = self.batch(step, c.batch_size)
        self.policy.model.train()
        loss, terms = self.sft_loss(batch)
        self.accelerator.backward(loss)
        norm = loop.clip_and_step(self.policy, self.optimizer, c.max_grad_norm, self.accelerator)
        seconds = time.perf_counter() - started
        head = self.policy.head
        return {
            "loss": loss.item(),
            **{k: v.item() for k, v in terms.items()},
            "grad_norm": norm,
            "a": head.a.item(),
            "b": head.b.item(),
            "g": head.log_g.exp().item(),
            "W_norm": head.W.weight.norm().item(),
            "seconds": seconds,
            "examples_per_s": len(batch) / seconds,
        }

    def grpo_step(self, step: int) -> dict[str, float]:
        c, started = self.config.grpo, time.perf_counter()
        batch = self.batch(step, c.batch_size)
        torch.manual_seed(self.config.train_seed * 1_000_003 + step)  # resumable sampling
        groups, nested = self.rewarded_rollouts(batch, c.group, c.temperature, c.reward)
        generated = time.perf_counter()
        terms = [t for g in nested for t in g]
        rewards = torch.tensor([t["reward"] for t in terms]).view(len(batch), c.group)
        advantages = group_advantages(rewards).flatten().to(self.accelerator.device)
        flat = [r for g in groups for r in g]
        chunks = loop.chunked(flat, c.chunk)
        with torch.no_grad():
            refs = [logprobs(self.reference, self.table, p) if c.beta > 0 else None for p in chunks]
            olds = [None if c.updates_per_batch == 1 else logprobs(self.policy, self.table, p) for p in chunks]
        self.policy.model.train()
        for _ in range(c.updates_per_batch):
            out = grpo_backward(
                self.policy, self.table, chunks, advantages, refs, olds, c, self.accelerator.backward, self.forward
            )
            norm = loop.clip_and_step(self.policy, self.optimizer, c.max_grad_norm, self.accelerator)
        seconds = time.perf_counter() - started
        mean = lambda key: sum(t[key] for t in terms) / len(terms)
        return {
            "loss": out["loss"],
            "reward": mean("reward"),
            "r_format": mean("r_format"),
            "r_correct": mean("r_correct"),
            "r_select": mean("r_select"),
            "reward_std": float(rewards.std(dim=1, unbiased=False).mean()),
            "equal_groups": float((rewards.std(dim=1) == 0).float().mean()),
            "closed_think": sum(r.closed_think for r in flat) / len(flat),
            "rationale_tokens": sum(len(r.rationale_ids) for r in flat) / len(flat),
            "kl": out["kl"],
            "tool_kl": out["tool_kl"],
            "clipped": out["clipped"],
            "grad_norm": norm,
            "W_norm": self.policy.head.W.weight.norm().item(),
            "generate_s": generated - started,
            "seconds": seconds,
            "rollouts_per_s": len(flat) / seconds,
        }

    def start_grpo(self) -> None:
        if self.config.grpo.beta > 0:
            self.reference = self.frozen_copy()

    def optimizer_for(self, stage: str):
        c = getattr(self.config, stage)

        def make():
            self.optimizer = loop.make_optimizer(self.policy, c.lr, c.head_lr, c.head_weight_decay)
            return self.optimizer

        return make

    def train(self):
        c = self.config
        return self.run(
            {"sft": c.sft.steps, "grpo": c.grpo.steps},
            {"sft": self.sft_step, "grpo": self.grpo_step},
            {s: self.optimizer_for(s) for s in STAGES},
            {"grpo": self.start_grpo},
        )


def command(doc: str, default=Phase1Config, phase=Phase1) -> click.Command:
    """The click command of a phase: `--config PATH`, then any config key as `--KEY VALUE` (`training.config.load`);
    exit 2 on a config or data error."""

    @click.command(cls=ConfigCommand, config_class=default, help=doc_help(doc))
    @click.option(
        "--config",
        "path",
        type=click.Path(dir_okay=False),
        metavar="PATH",
        help="A YAML file of config keys (training/configs/); the --KEY VALUE overrides win over it.",
    )
    @click.pass_context
    def cli(ctx: click.Context, path: str | None) -> int:
        from autotool.benchmarks import BenchmarkError
        from training.data import DataError

        try:
            config = load(default(), path, ctx.args)
            trainer = phase(config)
            final = trainer.train()
        except (ConfigError, BenchmarkError, DataError) as e:
            raise CommandError(str(e)) from None
        if trainer.main:
            click.echo(f"done: {final}  (metrics {trainer.out / 'metrics.csv'}, curves {trainer.out / 'curves.png'})")
        return 0

    return cli


cli = command(__doc__)


def main(argv: list[str] | None = None) -> int:
    """`python -m training.phase1 ARGS`, returning the exit code (default `sys.argv[1:]`)."""
    return run(cli, argv)


if __name__ == "__main__":
    sys.exit(main())
