"""Selection metrics, as pure functions of one ranking and its gold tools, and paired bootstrap intervals.

Ties: when scores are given, tools with equal scores form a tie group and a metric is its expected value
over every order of the group (McSherry and Najork, ECIR 2008), so a method gains nothing from the order
in which it happens to list tied tools. Without scores the ranking's order is taken as strict.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from autotool.calls import schema_errors, toolrl_correctness


def _groups(ranking: Sequence[str], scores: Sequence[float] | None) -> list[list[str]]:
    """Consecutive tie groups of the ranking (one item each when scores are None)."""
    if scores is None:
        return [[item] for item in ranking]
    if len(scores) != len(ranking):
        raise ValueError(f"{len(ranking)} ranked items but {len(scores)} scores")
    groups: list[list[str]] = []
    for i, item in enumerate(ranking):
        if i and scores[i] == scores[i - 1]:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def _as_set(gold: str | Iterable[str]) -> set[str]:
    return {gold} if isinstance(gold, str) else set(gold)


def hit_at_k(ranking: Sequence[str], gold: str | Iterable[str], k: int, scores: Sequence[float] | None = None) -> float:
    """Probability that a gold tool is among the first k."""
    gold, start = _as_set(gold), 0
    for group in _groups(ranking, scores):
        if start >= k:
            break
        relevant, size = sum(item in gold for item in group), len(group)
        slots = min(k, start + size) - start  # places of this group inside the top k
        if relevant:
            # 1 - P(no relevant item among `slots` of `size` shuffled places)
            return 1.0 - math.comb(size - relevant, slots) / math.comb(size, slots)
        start += size
    return 0.0


def reciprocal_rank(
    ranking: Sequence[str], gold: str | Iterable[str], k: int = 10, scores: Sequence[float] | None = None
) -> float:
    """1 / rank of the first gold tool within the first k (0 when none)."""
    gold, start = _as_set(gold), 0
    for group in _groups(ranking, scores):
        relevant, size = sum(item in gold for item in group), len(group)
        if relevant:
            # first relevant at position j of the group with P = C(size - j, relevant - 1) / C(size, relevant)
            total = math.comb(size, relevant)
            return sum(
                math.comb(size - j, relevant - 1) / total / (start + j)
                for j in range(1, size - relevant + 2)
                if start + j <= k
            )
        start += size
    return 0.0


def ndcg_at_k(
    ranking: Sequence[str], gold: str | Iterable[str], k: int = 5, scores: Sequence[float] | None = None
) -> float:
    """Binary-relevance nDCG@k: DCG of the ranking over the DCG of a perfect one."""
    gold, start, dcg = _as_set(gold), 0, 0.0
    for group in _groups(ranking, scores):
        share = sum(item in gold for item in group) / len(group)  # each place's chance of being relevant
        dcg += sum(share / math.log2(pos + 2) for pos in range(start, min(k, start + len(group))))
        start += len(group)
    ideal = sum(1.0 / math.log2(pos + 2) for pos in range(min(k, len(gold))))
    return dcg / ideal if ideal else 0.0


def selection_metrics(
    ranking: Sequence[str], gold: str | Iterable[str], scores: Sequence[float] | None = None
) -> dict[str, float]:
    """hit@1, hit@5, mrr@10 and ndcg@5 of one ranking."""
    return {
        "hit@1": hit_at_k(ranking, gold, 1, scores),
        "hit@5": hit_at_k(ranking, gold, 5, scores),
        "mrr@10": reciprocal_rank(ranking, gold, 10, scores),
        "ndcg@5": ndcg_at_k(ranking, gold, 5, scores),
    }


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], n_resamples: int = 2000, seed: int = 0, groups: Sequence[str] | None = None
) -> dict[str, float]:
    """Mean of a - b over paired items with a bootstrap 95% percentile interval.

    Args:
        a, b: One value per item (e.g. hit@1 of two methods on the same steps).
        groups: Optional cluster of each item (e.g. its query); clusters are resampled whole.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired values must be two equal-length lists, got {a.shape} and {b.shape}")
    diff = a - b
    if len(diff) == 0:
        return {"mean": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "n": 0}
    rng = np.random.default_rng(seed)
    if groups is None:
        means = diff[rng.integers(0, len(diff), (n_resamples, len(diff)))].mean(axis=1)
    else:
        _, cluster = np.unique(np.asarray(groups), return_inverse=True)
        sums, counts = np.bincount(cluster, diff), np.bincount(cluster)
        picks = rng.integers(0, len(sums), (n_resamples, len(sums)))
        means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": float(diff.mean()), "ci_low": float(low), "ci_high": float(high), "n": int(len(diff))}


def percentile_ms(seconds: Sequence[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds."""
    if not len(seconds):
        return {"p50_ms": float("nan"), "p95_ms": float("nan")}
    ms = np.asarray(seconds) * 1000
    return {"p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95))}


def call_metrics(step, call: dict | None, schemas: dict[str, dict]) -> dict[str, float]:
    """Schema validity, argument exact match and ToolRL R_correct of a predicted call (`{name, arguments}`, or
    None when there is none) against the step's gold (an `autotool.benchmarks.Step`).

    A step without gold arguments (MetaTool: every tool takes none) has the gold call `{name, arguments: {}}`.
    """
    gold = [{"name": step.gold, "arguments": step.gold_args or {}}]
    if call is None:
        return {"schema_valid": 0.0, "args_exact": 0.0, "r_correct": toolrl_correctness(gold, None)["r_correct"]}
    schema = schemas.get(call["name"], {})
    return {
        "schema_valid": float(not schema_errors(call["arguments"], schema)),
        "args_exact": float(call["name"] == step.gold and call["arguments"] == (step.gold_args or {})),
        "r_correct": toolrl_correctness(gold, [call])["r_correct"],
    }
