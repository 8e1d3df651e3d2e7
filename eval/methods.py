"""Selection methods, registered in one table: a new method is a function, not a fork of the harness.

A method factory takes an `EvalContext` and returns a callable `Step -> Prediction`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from eval.benchmarks import Benchmark, Step
from toolbank import ToolBank

DEPTH = 10  # rankings are scored to depth 10 (MRR@10)


@dataclass
class Prediction:
    """A method's answer for one step: tools best first (with scores, for tie handling) and, for methods
    that fill arguments, the call it would make (`call` None with `format_error` when it produced none)."""

    ranking: list[str]
    scores: list[float] | None = None
    call: dict | None = None
    format_error: bool = False
    extra: dict = field(default_factory=dict)


@dataclass
class EvalContext:
    bench: Benchmark
    bank: ToolBank
    options: dict = field(default_factory=dict)


MethodFactory = Callable[[EvalContext], Callable[[Step], Prediction]]
METHODS: dict[str, MethodFactory] = {}
FILLS_ARGUMENTS: set[str] = set()


def register(name: str, fills_arguments: bool = False) -> Callable[[MethodFactory], MethodFactory]:
    """Decorator: add a method factory to `METHODS` under `name`."""

    def decorate(factory: MethodFactory) -> MethodFactory:
        METHODS[name] = factory
        if fills_arguments:
            FILLS_ARGUMENTS.add(name)
        return factory

    return decorate


def _retrieval(mode: str) -> MethodFactory:
    def factory(ctx: EvalContext) -> Callable[[Step], Prediction]:
        def predict(step: Step) -> Prediction:
            # A retrieval agent ranks on the request and does not call a tool it already called.
            hits = ctx.bank.search(step.query.text, k=DEPTH + len(step.context), mode=mode)
            hits = [h for h in hits if h.name not in step.context][:DEPTH]
            return Prediction([h.name for h in hits], [h.score for h in hits])

        return predict

    return factory


register("bm25")(_retrieval("bm25"))
register("dense")(_retrieval("dense"))
register("hybrid")(_retrieval("hybrid"))


@register("policy", fills_arguments=True)
def policy_method(ctx: EvalContext) -> Callable[[Step], Prediction]:
    """The autotool policy: greedy rationale, the most probable tool over the whole bank, greedy call.

    Options: `policy` (a `Policy`, or a policy folder; default the default policy), `policy_mode`
    (`reason` or `fast`), `batch_size`, `rationale_tokens`, `call_tokens` (the most new tokens of each). Steps are written in batches by `prepare` (the harness calls it
    with all steps first), so each step's latency is its batch's time divided by the batch size.
    """
    from autotool.policy import Policy
    from autotool.prompts import StepRecord, history
    from autotool.rollout import CALL_TOKENS, RATIONALE_TOKENS, StepInput, ToolTable, rollout
    from autotool.select import default_policy

    policy = ctx.options.get("policy")
    if policy is None:
        policy = default_policy(ctx.bank)
    elif not isinstance(policy, Policy):
        policy = Policy.load(policy, ctx.bank)
    mode, batch_size = ctx.options.get("policy_mode", "reason"), int(ctx.options.get("batch_size", 16))
    lengths = {"rationale_tokens": int(ctx.options.get("rationale_tokens", RATIONALE_TOKENS)),
               "call_tokens": int(ctx.options.get("call_tokens", CALL_TOKENS))}
    table = ToolTable.from_bank(ctx.bank)
    cache: dict[str, tuple[Prediction, float]] = {}

    def step_input(step: Step) -> StepInput:
        earlier = [StepRecord("", c["tool"], c.get("args") or {}) for c in (step.query.calls or ())[:step.index]]
        if not step.query.calls:
            earlier = [StepRecord("", name, {}) for name in step.context]
        return StepInput(step.query.text, history(earlier, ctx.bank.get), step.context)

    def prepare(steps: list[Step]) -> None:
        import time

        for start in range(0, len(steps), batch_size):
            batch = steps[start:start + batch_size]
            began = time.perf_counter()
            written = rollout(policy, table, [step_input(s) for s in batch], sample=False, mode=mode, **lengths)
            seconds = (time.perf_counter() - began) / len(batch)
            for step, (r,) in zip(batch, written):
                cache[step.id] = (Prediction([table.tools[t].name for t, _ in r.ranking], [p for _, p in r.ranking],
                                             r.call, not r.format_ok, {"rationale": r.rationale}), seconds)

    def predict(step: Step) -> Prediction:
        if step.id not in cache:
            prepare([step])
        prediction, seconds = cache[step.id]
        prediction.extra["seconds"] = seconds
        return prediction

    predict.prepare = prepare
    return predict


def register_policy(name: str, path: str, mode: str | None = None) -> None:
    """Evaluate the policy folder `path` as method `name` (several policies can then be compared in one run)."""

    def factory(ctx: EvalContext) -> Callable[[Step], Prediction]:
        options = {**ctx.options, "policy": path, **({"policy_mode": mode} if mode else {})}
        return policy_method(EvalContext(ctx.bench, ctx.bank, options))

    register(name, fills_arguments=True)(factory)
