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
