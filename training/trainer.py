"""The run both phases share: config, data, bank, policy, stages with checkpoints and resume, evaluation.

A phase is a list of stages; a stage is a number of steps of one step function. Each stage starts from
the policy the previous stage ended with (or `init`, or a fresh policy saved as `policy-initial`), resumes
from its newest checkpoint, and ends by saving `policy-STAGE` and evaluating it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tqdm import tqdm

from autotool.benchmarks import QUERY_SPLITS
from autotool.policy import ANCHORS, Policy
from autotool.prompts import TokenBudget
from autotool.rollout import ToolTable, rollout
from autotool.select import MODES
from training import loop
from training.config import at_least, one_of, require
from training.data import (
    DataError,
    build_trajectories,
    check_no_unseen,
    examples,
    read_jsonl,
    with_shortlists,
    write_jsonl,
)
from training.losses import reward

log = logging.getLogger("training")


@dataclass
class EvalConfig:
    """The evaluation of the policy before and after each stage (`eval/LABEL.json` in the run folder)."""

    splits: list = field(
        default_factory=lambda: ["val", "seen-test", "unseen-test"],
        metadata={"help": f"query splits to evaluate on ({', '.join(QUERY_SPLITS)})"},
    )
    limit: int = field(default=64, metadata={"help": "queries per split (seeded sample); 0 skips evaluation"})
    mode: str = field(
        default="reason", metadata={"help": "reason: the policy writes a rationale before the tool; fast: it does not"}
    )
    batch_size: int = field(default=16, metadata={"help": "steps the policy writes at once"})

    def __post_init__(self):
        for name in self.splits:
            require(name in QUERY_SPLITS, "splits", f"must name query splits ({', '.join(QUERY_SPLITS)}); got {name!r}")
        at_least(self, 0, "limit")
        one_of(self, "mode", MODES)
        at_least(self, 1, "batch_size")


@dataclass
class RunConfig:
    """What both phases share: the data, the policy, the run folder, checkpoints and evaluation."""

    benchmark: str = field(
        default="metatool", metadata={"help": "a training catalog (metatool, seal_tools, bfcl) or a benchmark folder"}
    )
    seed: int = field(default=0, metadata={"help": "the tool split's seed (splits/seedN.json)"})
    out: str = field(
        default="runs/train",
        metadata={"help": "the run folder; a second run with the same one resumes from its last checkpoint"},
    )
    init: str = field(default="", metadata={"help": 'a policy folder to start from ("" = a fresh policy)'})
    backbone: str = field(
        default="default",
        metadata={"help": "the language model of a fresh policy: a model folder, or default (SmolLM2-135M-Instruct)"},
    )
    embedder: str = field(
        default="stock",
        metadata={"help": "the tool bank's embedder: stock (all-MiniLM-L6-v2), tools, a model folder, or hash:DIM"},
    )
    anchor: str = field(
        default="residual",
        metadata={
            "help": "the anchor head of a fresh policy: residual, "
            "e' = normalize(W h + a E(query) + b E(rationale)); "
            "pure, e' = normalize(W h)"
        },
    )
    lora_rank: int = field(default=8, metadata={"help": "LoRA rank of a fresh policy's adapters"})
    all_tools: bool = field(
        default=False,
        metadata={
            "help": "train on every tool of the catalog (your own), with the queries split 64/20/16 into "
            "train, val and seen-test instead of the tools (no unseen tools to evaluate on)"
        },
    )
    trajectories: str = field(
        default="", metadata={"help": 'a trajectories JSONL ("" = built from the benchmark\'s train split)'}
    )
    max_examples: int = field(default=0, metadata={"help": "use at most this many training steps (0 = all)"})
    shortlist: int = field(
        default=-1,
        metadata={
            "help": "tools listed in the prompt before the rationale, which picks one by copying its line (the "
            "best in fast mode; 0: none; -1: as the start policy, none for a fresh one)"
        },
    )
    rationale_tokens: int = field(default=32, metadata={"help": "most tokens of a rationale the policy writes"})
    call_tokens: int = field(default=48, metadata={"help": "most tokens of a call the policy writes"})
    checkpoint_every: int = field(default=10, metadata={"help": "steps between checkpoints"})
    keep_checkpoints: int = field(default=2, metadata={"help": "newest checkpoints of a stage kept (0 = all)"})
    train_seed: int = field(default=0, metadata={"help": "seed of the data order, the fresh policy and sampling"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0 = torch's default)"})
    eval: EvalConfig = field(default_factory=EvalConfig, metadata={"help": "the evaluations"})

    def __post_init__(self):
        for name in ("benchmark", "out", "backbone", "embedder"):
            require(bool(getattr(self, name)), name, "must not be empty")
        one_of(self, "anchor", ANCHORS)
        at_least(self, 0, "seed", "max_examples", "keep_checkpoints", "train_seed", "threads")
        at_least(self, -1, "shortlist")
        at_least(self, 1, "lora_rank", "rationale_tokens", "call_tokens", "checkpoint_every")


class Trainer:
    def __init__(self, config: RunConfig, stages: list[str], phase: str):
        from accelerate import Accelerator, DistributedDataParallelKwargs

        from autotool.benchmarks import (
            FOREIGN_VALIDATION,
            benchmark_bank,
            catalog_role,
            embedder_saw,
            load_benchmark,
            load_split,
            make_split,
        )

        self.config, self.stages = config, stages
        if config.threads > 0:
            torch.set_num_threads(config.threads)
        self.accelerator = Accelerator(
            cpu=not torch.cuda.is_available(),
            # a step may leave some trainable parameters without a gradient (no rationale tokens, a fast anchor)
            kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)],
        )
        self.main = self.accelerator.is_main_process
        self.out = Path(config.out)
        self.bench = load_benchmark(config.benchmark)
        if catalog_role(self.bench) == "foreign-validation":  # issue #23: judged on, never trained on
            raise DataError(
                f"{config.benchmark} is a foreign validation catalog ({', '.join(FOREIGN_VALIDATION)}): "
                "it is never trained on; train on a training catalog or a catalog of your own"
            )
        entry = embedder_saw(config.embedder, self.bench, ["val", "unseen-test"], config.seed)
        if entry is not None:
            raise DataError(
                f"embedder {config.embedder!r} was fine-tuned on {self.bench.name} ({entry.get('split')} split, "
                f"seed {entry.get('seed')}): this run's val and test tools would not be held out from it; "
                "use embedder: stock"
            )
        if self.main:
            loop.write_config(self.out, config)
        self.log = loop.RunLog(self.out, enabled=self.main)
        self.split = (
            make_split(self.bench, config.seed, all_tools=True)
            if config.all_tools
            else load_split(self.bench, config.seed)
        )
        self.title = f"{phase} on {self.bench.name}"
        self.bank = benchmark_bank(self.bench, config.embedder)
        self.table = ToolTable.from_bank(self.bank, sorted(self.split.tools["train"]))
        self.table.vectors = self.table.vectors.to(self.accelerator.device)
        tools = {t.name: t for t in self.bench.tools}
        if config.trajectories:
            trajectories, counts = read_jsonl(Path(config.trajectories)), {"kept": None}
        else:
            trajectories, counts = build_trajectories(self.bench, self.split, "train")
        check_no_unseen(trajectories, self.split)
        if self.main:
            write_jsonl(self.out / "trajectories.jsonl", trajectories)
        self.examples = examples(trajectories, tools)
        if config.max_examples:
            self.examples = self.examples[: config.max_examples]
        if not self.examples:
            raise DataError(f"no training examples from {config.trajectories or config.benchmark + ' train split'}")
        self.data_counts = dict(counts)
        if self.main:
            tqdm.write(f"training data: {len(self.examples)} steps; trajectories {self.data_counts}")
        self._listed: dict[int, object] = {}  # examples with their shortlists, by index (`batch`)
        self.policy: Policy | None = None
        self.source: Path | None = Path(config.init) if config.init else None

    # -- data and rollouts -----------------------------------------------------------------------
    def batch(self, step: int, size: int) -> list:
        """This process's examples for `step` (seeded epochs, resumable from the step alone), with their
        shortlists when the policy has one (`training.data.with_shortlists`, made once per example)."""
        a = self.accelerator
        indices = loop.batch_indices(
            len(self.examples), size, step, self.config.train_seed, a.process_index, a.num_processes
        )
        if not self.shortlist:
            return [self.examples[i] for i in indices]
        todo = sorted({i for i in indices if i not in self._listed})
        if todo:
            listed = with_shortlists(
                [self.examples[i] for i in todo],
                self.policy.head_values,
                self.table,
                self.shortlist,
                self.config.train_seed,
            )
            self._listed.update(zip(todo, listed))
        return [self._listed[i] for i in indices]

    @property
    def shortlist(self) -> int:
        """Tools the prompts list (config `shortlist`; -1: the policy's own)."""
        return self.config.shortlist if self.config.shortlist >= 0 else self.policy.shortlist

    def rewarded_rollouts(self, batch: list, group: int, temperature: float, weights) -> tuple[list, list]:
        """`group` sampled rollouts for each example of `batch`, and each rollout's reward terms (same nesting)."""
        self.policy.model.eval()
        groups = rollout(
            self.policy,
            self.table,
            [e.input for e in batch],
            group=group,
            sample=True,
            temperature=temperature,
            budget=self.budget,
        )
        terms = [
            [reward(r.format_ok, r.call, e.gold_call, self.table.tools[r.tool].name, weights) for r in g]
            for e, g in zip(batch, groups)
        ]
        return groups, terms

    # -- policy ---------------------------------------------------------------------------------
    @property
    def budget(self) -> TokenBudget:
        """The most new tokens of a rationale and of a call (config `rationale_tokens`, `call_tokens`)."""
        return TokenBudget(self.config.rationale_tokens, self.config.call_tokens)

    @property
    def forward(self):
        """`logprobs` of the current policy with gradients, as `accelerator.prepare` wrapped it (with several
        processes, DistributedDataParallel: it averages the gradients); made again when the policy changes."""
        if getattr(self, "_forward_of", None) is not self.policy:
            self._forward = self.accelerator.prepare(loop.PolicyForward(self.policy))
            self._forward_of = self.policy
        return self._forward

    def _load(self, path: Path) -> Policy:
        policy = Policy.load(path, self.bank, trainable=True)
        return self._place(policy)

    def _place(self, policy: Policy) -> Policy:
        policy.model.to(self.accelerator.device)
        policy.head.to(self.accelerator.device)
        return policy

    def frozen_copy(self) -> Policy:
        """The policy as it is now, frozen: the reference for the KL penalty and Phase II's scores."""
        ref = copy.copy(self.policy)
        ref.model, ref.head = copy.deepcopy(self.policy.model), copy.deepcopy(self.policy.head)
        for p in list(ref.model.parameters()) + list(ref.head.parameters()):
            p.requires_grad_(False)
        ref.model.eval()
        return ref

    def _initial_policy(self) -> Policy:
        if self.source is not None:
            return self._load(self.source)
        initial = self.out / "policy-initial"
        if (initial / "manifest.json").exists():
            self.source = initial
            return self._load(initial)
        torch.manual_seed(self.config.train_seed)
        policy = Policy.create(
            self.bank,
            None if self.config.backbone == "default" else self.config.backbone,
            self.config.anchor,
            self.config.lora_rank,
        )
        if self.main:
            policy.save(initial)
        self.accelerator.wait_for_everyone()
        self.source = initial
        return self._place(policy)

    def record_training(self) -> None:
        """Add this run's catalog and split to the policy's `trained_on` (its start policy's list, or what the
        start policy's manifest implies: `autotool.benchmarks.manifest_trained_on`)."""
        from autotool.benchmarks import manifest_trained_on, merge_trained_on, training_record

        self.policy.info["trained_on"] = merge_trained_on(
            manifest_trained_on(self.policy.info),
            [training_record(self.bench, self.config.seed, "all-tools" if self.config.all_tools else "train")],
        )
        self.policy.info["shortlist"] = self.shortlist

    # -- stages ---------------------------------------------------------------------------------
    def evaluate(self, label: str) -> None:
        c = self.config.eval
        if not self.main or c.limit <= 0 or (self.out / "eval" / f"{label}.json").exists():
            return
        started, index = time.time(), len(list((self.out / "eval").glob("*.json")))
        self.policy.model.eval()
        metrics = loop.evaluate_policy(
            self.policy,
            self.bench,
            self.split,
            self.bank,
            self.out,
            label,
            c.splits,
            c.limit,
            c.mode,
            c.batch_size,
            self.config.seed,
            self.budget,
        )
        self.log.log("eval", index, {f"eval/{label}/{k}": v for k, v in metrics.items()})
        shown = ", ".join(f"{k} {v:.3f}" for k, v in metrics.items() if k.endswith(("hit@1", "format_error", "reward")))
        tqdm.write(f"eval {label} ({time.time() - started:.0f} s): {shown}")

    def run(
        self,
        steps: dict[str, int],
        step_fns: dict[str, Callable[[int], dict]],
        optimizers: dict[str, Callable[[], torch.optim.Optimizer]],
        on_start: dict[str, Callable[[], None]],
    ) -> Path:
        """Run each stage in order; returns the final policy folder."""
        final = self.source
        for stage in self.stages:
            done = self.out / f"policy-{stage}"
            if (done / "manifest.json").exists():
                tqdm.write(f"{stage}: already finished ({done})")
                self.source = final = done
                self.policy = None
                continue
            checkpoint = loop.last_checkpoint(self.out, stage)
            (self.out / "eval" / f"after-{stage}.json").unlink(missing_ok=True)  # stale unless the stage finished
            if self.policy is None:
                self.policy = self._initial_policy()  # where the stage starts: init, fresh, or the last stage's end
            if checkpoint is None and stage == self.stages[0]:
                self.evaluate("initial")
            on_start.get(stage, lambda: None)()  # e.g. the frozen reference, from the stage's starting policy
            first = 0
            if checkpoint is not None:
                self.policy = self._load(checkpoint / "policy")
                first = json.loads((checkpoint / "trainer.json").read_text())["step"]
                tqdm.write(f"{stage}: resuming at step {first} from {checkpoint}")
            self.record_training()  # before any checkpoint is written, so every saved folder carries it
            optimizer = optimizers[stage]()
            if checkpoint is not None:
                loop.load_optimizer_state(optimizer, checkpoint)
            bar = tqdm(range(first, steps[stage]), desc=stage, disable=not self.main, initial=first, total=steps[stage])
            for step in bar:
                metrics = step_fns[stage](step)
                metrics["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
                self.log.log(stage, step + 1, metrics)
                bar.set_postfix({k: f"{metrics[k]:.3f}" for k in ("loss", "reward") if k in metrics})
                if self.main and (step + 1) % self.config.checkpoint_every == 0 and step + 1 < steps[stage]:
                    loop.save_checkpoint(
                        self.out, stage, step + 1, self.policy, optimizer, self.config.keep_checkpoints
                    )
            spread = loop.rank_spread(self.accelerator, self.policy)  # 0: every process holds the same policy
            if spread > 0 and self.main:
                tqdm.write(f"warning: {stage}: the processes' parameters differ by up to {spread:.3g}")
            if self.main:
                self.policy.info.update(
                    {
                        "trained": f"{self.title}: {stage}",
                        "processes": self.accelerator.num_processes,
                        "rank_spread": spread,
                        "benchmark": self.bench.name,
                        "split_seed": self.config.seed,
                        "data": self.data_counts,
                        "config": dataclasses.asdict(self.config),
                    }
                )
                self.policy.save(done)
                self.log.plot(self.title)
            self.accelerator.wait_for_everyone()
            self.source = final = done
            self.evaluate(f"after-{stage}")
        if self.main:
            self.log.plot(self.title)
            loop.write_summary(self.out, self.title)
        return final
