"""What both training phases share: the run folder, logging (CSV, TensorBoard, PNG), checkpoints and resume,
the optimizer, the data order, and evaluation with the harness.

A run folder:
```
OUT/config.yaml               the resolved config
OUT/trajectories.jsonl        the training data, as used
OUT/metrics.csv               stage, step, metric, value (every loss and reward term, every step)
OUT/curves.png                the curves, one panel per metric
OUT/tensorboard/              the same, for TensorBoard
OUT/checkpoints/STAGE-STEP/   policy folder + trainer.pt (optimizer) + trainer.json (stage, step)
OUT/policy-STAGE/             the policy at the end of each stage
OUT/eval/LABEL.json           the harness's results before and after each stage
```
"""

from __future__ import annotations

import csv
import json
import math
import random
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from autotool.policy import Policy
from autotool.prompts import TokenBudget
from training.config import as_dict

EVAL_METRICS = ("hit@1", "hit@5", "mrr@10", "format_error", "r_correct", "schema_valid")


class RunLog:
    """Append-only metrics: `metrics.csv` (long format), TensorBoard scalars, and a PNG of the curves."""

    def __init__(self, out: Path, enabled: bool = True):
        self.out, self.enabled = out, enabled
        self.csv = out / "metrics.csv"
        self._tb = None
        if enabled:
            out.mkdir(parents=True, exist_ok=True)
            if not self.csv.exists():
                self.csv.write_text("stage,step,metric,value\n")

    def log(self, stage: str, step: int, metrics: dict[str, float]) -> None:
        if not self.enabled:
            return
        with open(self.csv, "a", newline="") as f:
            writer = csv.writer(f)
            for key, value in metrics.items():
                writer.writerow([stage, step, key, f"{float(value):.6g}"])
        if self._tb is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard not installed: CSV and PNG still have everything
                self._tb = False
            else:
                self._tb = SummaryWriter(str(self.out / "tensorboard"))
        if self._tb:
            for key, value in metrics.items():
                self._tb.add_scalar(f"{stage}/{key}", float(value), step)
            self._tb.flush()

    def rows(self) -> list[tuple[str, int, str, float]]:
        with open(self.csv, newline="") as f:
            return [(r["stage"], int(r["step"]), r["metric"], float(r["value"])) for r in csv.DictReader(f)]

    def plot(self, title: str) -> Path | None:
        """`curves.png`: one panel per metric, one line per stage (raw, and a running mean when noisy)."""
        if not self.enabled:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        latest: dict[str, dict[str, dict[int, float]]] = {}  # a resumed run logs some steps again: keep the last
        for stage, step, metric, value in self.rows():
            if not metric.startswith("eval/"):
                latest.setdefault(metric, {}).setdefault(stage, {})[step] = value
        series = {m: {stage: list(points.items()) for stage, points in stages.items()} for m, stages in latest.items()}
        if not series:
            return None
        metrics = sorted(series)
        cols = min(4, len(metrics))
        rows = math.ceil(len(metrics) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 2.8 * rows), squeeze=False)
        for ax, metric in zip(axes.flat, metrics):
            for stage, points in series[metric].items():
                points.sort()
                xs, ys = [p[0] for p in points], [p[1] for p in points]
                (line,) = ax.plot(xs, ys, alpha=0.35 if len(ys) >= 10 else 1.0, label=stage)
                if len(ys) >= 10:
                    w = max(3, len(ys) // 10)
                    smooth = [
                        sum(ys[max(0, i - w + 1) : i + 1]) / len(ys[max(0, i - w + 1) : i + 1]) for i in range(len(ys))
                    ]
                    ax.plot(xs, smooth, color=line.get_color())
            ax.set_title(metric, fontsize=9)
            ax.set_xlabel("step", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(metrics) :]:
            ax.axis("off")
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        path = self.out / "curves.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path


def trainable_parameters(policy: Policy) -> tuple[list, list]:
    """(LoRA and token parameters of the language model, anchor-head parameters) that require gradients."""
    return (
        [p for p in policy.model.parameters() if p.requires_grad],
        [p for p in policy.head.parameters() if p.requires_grad],
    )


def make_optimizer(policy: Policy, lr: float, head_lr: float, head_weight_decay: float) -> torch.optim.Optimizer:
    """AdamW: the adapters at `lr`; the anchor head at `head_lr`, its map W with weight decay (kept small:
    a learned map that is free to grow fits the seen tools and loses the unseen ones, DESIGN.md section 3)."""
    model, head = trainable_parameters(policy)
    groups = [
        {"params": model, "lr": lr, "weight_decay": 0.0},
        {"params": [policy.head.W.weight], "lr": head_lr, "weight_decay": head_weight_decay},
        {"params": [p for p in head if p is not policy.head.W.weight], "lr": head_lr, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW([g for g in groups if g["params"]])


def chunked(items: Sequence, size: int) -> list:
    """`items` in consecutive runs of `size` (the last may be shorter): the rollouts one backward holds."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def batch_indices(n: int, batch_size: int, step: int, seed: int, rank: int = 0, world: int = 1) -> list[int]:
    """The example indices of `step`: epochs of seeded permutations, read in order (resumable from `step`);
    each of `world` processes takes every `world`-th of them."""
    out, start = [], step * batch_size * world
    for position in range(start, start + batch_size * world):
        epoch, offset = divmod(position, n)
        out.append(random.Random(seed * 100_003 + epoch).sample(range(n), n)[offset])
    return out[rank::world]


class PolicyForward(torch.nn.Module):
    """The trained policy's language model and anchor head behind one forward, `logprobs`: what
    `accelerator.prepare` wraps, so that with several processes DistributedDataParallel sees every forward
    with gradients and averages the gradients itself (one process: the module as it is)."""

    def __init__(self, policy: Policy):
        super().__init__()
        self.policy = [policy]  # in a list: not a submodule (a Policy is not an nn.Module)
        self.model, self.head = policy.model, policy.head

    def forward(self, table, rollouts):
        from autotool.rollout import logprobs

        return logprobs(self.policy[0], table, rollouts)


def clip_and_step(policy: Policy, optimizer: torch.optim.Optimizer, max_norm: float, accelerator) -> float:
    """Clip and step (the gradients are already averaged over processes by the prepared `PolicyForward`);
    returns the gradient norm before clipping."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    norm = accelerator.clip_grad_norm_(params, max_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(norm)


def rank_spread(accelerator, policy: Policy) -> float:
    """The largest difference between any process's trainable parameters and the first process's (0 when the
    processes agree, as they must after every step); 0 with one process."""
    if accelerator.num_processes == 1:
        return 0.0
    model, head = trainable_parameters(policy)
    flat = torch.cat([p.detach().flatten().float() for p in model + head])
    every = accelerator.gather(flat[None])  # (processes, parameters)
    return float((every - every[0]).abs().max())


# -- checkpoints -----------------------------------------------------------------------------------------
def save_checkpoint(out: Path, stage: str, step: int, policy: Policy, optimizer, keep: int) -> Path:
    """`checkpoints/STAGE-STEP/`: the policy folder, the optimizer state and where training stood.

    Keeps the newest `keep` checkpoints of the stage."""
    path = out / "checkpoints" / f"{stage}-{step:06d}"
    policy.save(path / "policy")
    torch.save(optimizer.state_dict(), path / "trainer.pt")
    (path / "trainer.json").write_text(json.dumps({"stage": stage, "step": step}) + "\n")  # written last
    done = sorted(p for p in (out / "checkpoints").glob(f"{stage}-*") if (p / "trainer.json").exists())
    for old in done[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return path


def last_checkpoint(out: Path, stage: str) -> Path | None:
    """The newest complete checkpoint of `stage` in `out`, if any."""
    folder = out / "checkpoints"
    if not folder.is_dir():
        return None
    done = sorted(p for p in folder.glob(f"{stage}-*") if (p / "trainer.json").exists())
    return done[-1] if done else None


def load_optimizer_state(optimizer, checkpoint: Path) -> None:
    optimizer.load_state_dict(torch.load(checkpoint / "trainer.pt", weights_only=True))


def write_config(out: Path, config) -> None:
    import yaml

    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(as_dict(config), sort_keys=False))


# -- evaluation ------------------------------------------------------------------------------------------
def evaluate_policy(
    policy: Policy,
    bench,
    split,
    bank,
    out: Path,
    label: str,
    splits: Sequence[str],
    limit: int,
    mode: str,
    batch_size: int,
    seed: int,
    budget: TokenBudget,
) -> dict[str, float]:
    """The policy through the served path (`autotool.select.select_steps`, what `select_tool` and the
    evaluation's `policy` method run) on each split (at most `limit` queries, seeded): `eval/LABEL.json`.

    Returns flat metrics `SPLIT/METRIC`, with `SPLIT/reward` = (1 - format_error) + r_correct.
    """
    from autotool.benchmarks import select_queries, step_input, steps_of
    from autotool.metrics import call_metrics, selection_metrics
    from autotool.select import select_steps

    flat, results, started = {}, [], time.time()
    schemas = {t.name: t.parameters for t in bench.tools}
    for name in splits:
        steps = [s for q in select_queries(bench, split, name, limit, seed) for s in steps_of(q)]
        rows = []
        for start in range(0, len(steps), batch_size):
            batch = steps[start : start + batch_size]
            for step, chosen in zip(
                batch,
                select_steps(
                    policy, bank, [step_input(bank, s) for s in batch], k=10, mode=mode, budget=budget, min_cosine=0.0
                ),
            ):
                call = chosen.call()  # as the evaluation scores it
                rows.append(
                    {
                        **selection_metrics(
                            [t.name for t, _ in chosen.candidates], step.gold, [p for _, p in chosen.candidates]
                        ),
                        "format_error": float(call is None),
                        **call_metrics(step, call, schemas),
                    }
                )
        metrics = {key: float(sum(r[key] for r in rows) / len(rows)) if rows else float("nan") for key in EVAL_METRICS}
        flat.update({f"{name}/{key}": value for key, value in metrics.items()})
        flat[f"{name}/reward"] = (1 - metrics["format_error"]) + metrics["r_correct"]
        results.append({"split": name, "n": len(steps), "methods": {"policy": metrics}})
    (out / "eval").mkdir(parents=True, exist_ok=True)
    (out / "eval" / f"{label}.json").write_text(
        json.dumps(
            {
                "label": label,
                "mode": mode,
                "limit": limit,
                "metrics": flat,
                "seconds": round(time.time() - started, 1),
                "splits": results,
            },
            indent=1,
        )
        + "\n"
    )
    return flat


def write_summary(out: Path, title: str) -> Path | None:
    """`summary.md`: the evaluations before and after each stage, one row per evaluation and split."""
    files = sorted((out / "eval").glob("*.json"), key=lambda p: p.stat().st_mtime)
    if not files:
        return None
    keys = ("hit@1", "hit@5", "mrr@10", "format_error", "r_correct", "reward")
    lines = [
        f"# {title}: evaluations",
        "",
        "The harness's `policy` method (greedy rationale, tool and call; the whole catalog in the bank) on a "
        "seeded sample of each split; `reward` = (1 - format_error) + r_correct.",
        "",
        "| policy | split | n | " + " | ".join(keys) + " |",
        "|---|---|---:|" + "---:|" * len(keys),
    ]
    for path in files:
        data = json.loads(path.read_text())
        for split in data["splits"]:
            m = data["metrics"]
            lines.append(
                f"| {data['label']} | {split['split']} | {split['n']} | "
                + " | ".join(f"{m.get(split['split'] + '/' + k, float('nan')):.3f}" for k in keys)
                + " |"
            )
    path = out / "summary.md"
    path.write_text("\n".join(lines) + "\n")
    return path
