"""Run selection methods over the steps of a benchmark split and aggregate metrics."""

from __future__ import annotations

import itertools
import time
from collections.abc import Collection

import numpy as np
from tqdm import tqdm

from autotool.benchmarks import Benchmark, Split, Step, select_queries, steps_of
from autotool.metrics import call_metrics, paired_bootstrap, percentile_ms, selection_metrics
from eval.methods import FILLS_ARGUMENTS, METHODS, EvalContext
from toolbank import ToolBank

SELECTION_METRICS = ("hit@1", "hit@5", "mrr@10", "ndcg@5")
PAIRED_METRICS = ("hit@1", "mrr@10")
MEASURES = ("per-step", "per-request")


class EvalError(ValueError):
    """Bad evaluation arguments (unknown method, ...). The message says what was expected."""


PREPARE_CHUNK = 64  # steps handed to a batched method at a time (a progress bar counts them)


def check_methods(methods: list[str]) -> None:
    """`EvalError` naming the first method that is not registered."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise EvalError(f"unknown method {unknown[0]!r}; expected one of {', '.join(sorted(METHODS))}")


def evaluate(
    bench: Benchmark,
    split: Split,
    split_name: str,
    methods: list[str],
    bank: ToolBank,
    limit: int | None = None,
    seed: int = 0,
    single_tool: bool = False,
    options: dict | None = None,
    progress: bool = True,
    exclude: Collection[str] = (),
    measure: str = "per-step",
    baselines: Collection[str] = (),
) -> dict:
    """Evaluate `methods` on the steps of one query split, leaving out the queries whose ids are in `exclude`.

    `measure` is `per-step` (one step per gold call; step i reads the earlier gold calls and may not choose their
    tools again; arguments scored) or `per-request` (one step per request with no context, a hit when the first
    choice is any of its gold tools; the choice alone, no arguments: a user's one call). Each method in
    `baselines` that ran is a baseline; the best of them by hit@1 is `best_baseline`, and every other method is
    compared with it in `versus_best` (paired hit@1).

    Returns:
        {"split", "measure", "n_queries", "n", "repeating" (steps whose gold tool an earlier step called),
        "methods": {name: {metric: mean, "p50_ms", "p95_ms"}},
        "paired": [...], "best_baseline", "versus_best": {name: paired}, "per_step": {name: {metric: [...]}},
        "step_ids": [...]}.
    """
    check_methods(methods)
    if measure not in MEASURES:
        raise EvalError(f"unknown measure {measure!r}; expected one of {', '.join(MEASURES)}")
    queries = select_queries(bench, split, split_name, limit, seed, single_tool, exclude)
    if measure == "per-request":
        steps = [Step(q, 0, q.gold_tools[0], None, ()) for q in queries]
        golds = [set(q.gold_tools) for q in queries]
        options = {**(options or {}), "arguments": False}
    else:
        steps = [step for q in queries for step in steps_of(q)]
        golds = [step.gold for step in steps]
    ctx = EvalContext(bench, bank, options or {})
    schemas = {t.name: t.parameters for t in bench.tools}
    result: dict = {
        "split": split_name,
        "measure": measure,
        "n_queries": len(queries),
        "n": len(steps),
        "repeating": sum(s.repeats_a_call for s in steps),
        "methods": {},
        "per_step": {},
        "step_ids": [s.id for s in steps],
        "query_ids": [s.query.id for s in steps],
    }
    for name in methods:
        predict = METHODS[name](ctx)
        if hasattr(predict, "prepare"):  # methods that work in batches write all steps first
            with tqdm(
                total=len(steps), desc=f"{split_name} {name} (writing)", disable=not progress, leave=False
            ) as bar:
                for start in range(0, len(steps), PREPARE_CHUNK):
                    chunk = steps[start : start + PREPARE_CHUNK]
                    predict.prepare(chunk)
                    bar.update(len(chunk))
        rows, seconds = [], []
        for step, gold in tqdm(
            zip(steps, golds), total=len(steps), desc=f"{split_name} {name}", disable=not progress, leave=False
        ):
            started = time.perf_counter()
            prediction = predict(step)
            seconds.append(prediction.extra.get("seconds", time.perf_counter() - started))
            row = selection_metrics(prediction.ranking, gold, prediction.scores)
            if measure == "per-step":  # per request no method writes a call
                row["format_error"] = float(prediction.format_error)
                if name in FILLS_ARGUMENTS:
                    row.update(call_metrics(step, prediction.call, schemas))
            rows.append(row)
        keys = sorted({k for row in rows for k in row})
        per_step = {k: [row.get(k, np.nan) for row in rows] for k in keys}
        summary = {
            k: float(np.nanmean(v)) if len(v) and not np.all(np.isnan(v)) else float("nan") for k, v in per_step.items()
        }
        result["methods"][name] = {**summary, **percentile_ms(seconds)}
        result["per_step"][name] = per_step
    result["paired"] = [
        {
            "a": a,
            "b": b,
            "metric": metric,
            **paired_bootstrap(
                result["per_step"][a][metric], result["per_step"][b][metric], seed=seed, groups=result["query_ids"]
            ),
        }
        for a, b in itertools.combinations(methods, 2)
        for metric in PAIRED_METRICS
    ]
    ran = [m for m in methods if m in baselines]
    if ran:
        best = max(ran, key=lambda m: result["methods"][m]["hit@1"])  # the first listed on a tie
        result["best_baseline"] = best
        result["versus_best"] = {
            m: paired_bootstrap(
                result["per_step"][m]["hit@1"], result["per_step"][best]["hit@1"], seed=seed, groups=result["query_ids"]
            )
            for m in methods
            if m not in baselines
        }
    return result
