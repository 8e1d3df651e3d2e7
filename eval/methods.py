"""Selection methods, registered in one table: a new method is a function, not a fork of the harness.

A method factory takes an `EvalContext` and returns a callable `Step -> Prediction`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from autotool.benchmarks import Benchmark, Step, step_input
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


BASELINE_EMBEDDER = "stock"  # what the `-stock` baselines embed with: all-MiniLM-L6-v2 as published


def baseline_bank(ctx: EvalContext) -> ToolBank:
    """The catalog embedded with `BASELINE_EMBEDDER`: the evaluation's bank when it is that, else a second bank
    of the same catalog (`benchmark_bank`, cached on disk), so that a policy served on another embedder is judged
    against the stock baselines in the same run."""
    from autotool.benchmarks import benchmark_bank
    from toolbank import load_embedder

    if ctx.bank.embedder_id == load_embedder(BASELINE_EMBEDDER).id:
        return ctx.bank
    return benchmark_bank(ctx.bench, BASELINE_EMBEDDER)


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


def _retrieval(mode: str, stock: bool = False) -> MethodFactory:
    def factory(ctx: EvalContext) -> Callable[[Step], Prediction]:
        bank = baseline_bank(ctx) if stock else ctx.bank

        def predict(step: Step) -> Prediction:
            # A retrieval agent ranks on the request and does not call a tool it already called.
            hits = bank.search(step.query.text, k=DEPTH + len(step.context), mode=mode)
            hits = [h for h in hits if h.name not in step.context][:DEPTH]
            return Prediction([h.name for h in hits], [h.score for h in hits])

        return predict

    return factory


register("bm25")(_retrieval("bm25"))
register("dense")(_retrieval("dense"))
register("hybrid")(_retrieval("hybrid"))
register("dense-stock")(_retrieval("dense", stock=True))
register("hybrid-stock")(_retrieval("hybrid", stock=True))


def stock_baselines(embedder_id: str) -> tuple[str, ...]:
    """The methods that are issue #23's baselines on a bank embedded by `embedder_id`: BM25, and dense and hybrid
    on the stock embedder (`dense` and `hybrid` themselves when the bank is stock)."""
    from toolbank import load_embedder

    if embedder_id == load_embedder(BASELINE_EMBEDDER).id:
        return ("bm25", "dense", "hybrid", "dense-stock", "hybrid-stock")
    return ("bm25", "dense-stock", "hybrid-stock")


def default_methods(embedder_id: str) -> str:
    """What `python -m eval` runs without `--methods`: the stock baselines, and dense on the bank's own embedder
    when that is another one."""
    return "bm25,dense,hybrid" if "dense" in stock_baselines(embedder_id) else "bm25,dense-stock,hybrid-stock,dense"


def _batched(prepare: Callable[[list[Step]], None], cache: dict) -> Callable[[Step], Prediction]:
    """`predict` for a method that writes steps in batches: `prepare` fills `cache` (step id -> (Prediction,
    seconds a step)); the harness calls it with all steps first, a step not prepared is prepared alone."""

    def predict(step: Step) -> Prediction:
        if step.id not in cache:
            prepare([step])
        prediction, seconds = cache[step.id]
        prediction.extra["seconds"] = seconds
        return prediction

    predict.prepare = prepare
    return predict


@register("policy", fills_arguments=True)
def policy_method(ctx: EvalContext) -> Callable[[Step], Prediction]:
    """The autotool policy through the served path (`autotool.select.select_steps`, what `select_tool` runs):
    greedy rationale, the most probable of the bank's top-K candidates, greedy arguments with one retry.

    Options: `policy` (a `Policy`, or a policy folder; default the default policy), `policy_mode`
    (`reason` or `fast`), `batch_size`, `top_k`, `rationale_tokens`, `call_tokens` (the most new tokens of
    each), `grammar` (False: arguments written without the schema grammar), `rerank` (False: the policy's reranker,
    if it has one, left out), `arguments` (False: the choice alone, as `select_tool(..., arguments=False)`; no call
    and no format error). Steps are written in batches by
    `prepare` (the harness calls it with all steps first), so each step's latency is its batch's time divided
    by the batch size. The call scored is the one the user gets: its arguments as parsed, less the values that
    only copy their parameter's description (`Selection.call`). A step whose arguments do not parse as a JSON
    object counts as a format error.
    """
    from autotool.policy import Policy
    from autotool.prompts import TokenBudget
    from autotool.select import default_policy, select_steps
    from autotool.selection import DEFAULT_TOP_K

    policy = ctx.options.get("policy")
    if policy is None:
        policy = default_policy(ctx.bank)
    elif not isinstance(policy, Policy):
        policy = Policy.load(policy, ctx.bank)
    policy.to(_device(ctx))
    mode, batch_size = ctx.options.get("policy_mode", "reason"), int(ctx.options.get("batch_size", 16))
    default = TokenBudget()
    budget = TokenBudget(
        int(ctx.options.get("rationale_tokens", default.rationale)), int(ctx.options.get("call_tokens", default.call))
    )
    top_k = int(ctx.options.get("top_k", DEFAULT_TOP_K))
    arguments = bool(ctx.options.get("arguments", True))
    cache: dict[str, tuple[Prediction, float]] = {}

    def prepare(steps: list[Step]) -> None:
        import time

        for start in range(0, len(steps), batch_size):
            batch = steps[start : start + batch_size]
            began = time.perf_counter()
            selections = select_steps(
                policy,
                ctx.bank,
                [step_input(ctx.bank, s) for s in batch],
                k=DEPTH,
                mode=mode,
                top_k=top_k,
                budget=budget,
                grammar=bool(ctx.options.get("grammar", True)),
                rerank=bool(ctx.options.get("rerank", True)),
                min_cosine=0.0,  # every step is scored on its choice; abstention is judged on its own
                arguments=arguments,
            )
            seconds = (time.perf_counter() - began) / len(batch)
            for step, selection in zip(batch, selections):
                call = selection.call() if arguments else None
                cache[step.id] = (
                    Prediction(
                        [t.name for t, _ in selection.candidates],
                        [p for _, p in selection.candidates],
                        call,
                        arguments and call is None,
                        {"rationale": selection.rationale},
                    ),
                    seconds,
                )

    return _batched(prepare, cache)


@register("policy-fast", fills_arguments=True)
def policy_fast_method(ctx: EvalContext) -> Callable[[Step], Prediction]:
    """The `policy` method in fast mode (no rationale), so both modes are compared in one run."""
    return policy_method(EvalContext(ctx.bench, ctx.bank, {**ctx.options, "policy_mode": "fast"}))


def register_policy(name: str, path: str, mode: str | None = None, grammar: bool = True, rerank: bool = True) -> None:
    """Evaluate the policy folder `path` as method `name` (several policies can then be compared in one run);
    `grammar=False` writes its arguments unconstrained; `rerank=False` leaves out its reranker."""

    def factory(ctx: EvalContext) -> Callable[[Step], Prediction]:
        options = {
            **ctx.options,
            "policy": path,
            "grammar": grammar,
            "rerank": rerank,
            **({"policy_mode": mode} if mode else {}),
        }
        return policy_method(EvalContext(ctx.bench, ctx.bank, options))

    register(name, fills_arguments=True)(factory)


def _device(ctx: EvalContext) -> str:
    """Where the LLM methods run: option `device`, else the GPU when there is one, else the CPU."""
    import torch

    return ctx.options.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")


NAMEGEN_SYSTEM = "Choose the one tool from the list that does what the user asks, and call it."


@register("namegen", fills_arguments=True)
def namegen_method(ctx: EvalContext) -> Callable[[Step], Prediction]:
    """Name generation (DESIGN.md section 4): the LLM reads the hybrid top-k (names and descriptions) in its
    prompt and picks the name it finds most likely; then, shown that tool's card, it writes the arguments.

    The LLM is the untrained backbone (the default policy's, LoRA at zero). Choosing by the likelihood of
    each listed name (summed over its tokens; the listing is read once and its cache shared by the names)
    means it always names a listed tool. The call is written in the policy's protocol, after the card, with
    `<tool_call>{"name": "<chosen>", "arguments": ` given (the untrained backbone does not know the
    protocol; the prefix spares it format errors), and read as `select_tool` reads arguments: the JSON
    object that follows (a closing tag is not required). Calls are written in batches by `prepare`.
    Options: `namegen_k` (5), `call_tokens`, `batch_size` (16), `backbone` (a model folder; default the
    default backbone).
    """
    import time

    import torch

    from autotool.backbone import cache_keyword, output_cache
    from autotool.calls import parse_arguments
    from autotool.policy import Policy
    from autotool.prompts import call_prefix, tool_card
    from autotool.rollout import TRAINING_BUDGET, decode, prompt_ids

    policy = Policy.create(ctx.bank, backbone=ctx.options.get("backbone")).to(_device(ctx))
    model, tokenizer = policy.model.get_base_model(), policy.tokenizer
    k, batch_size = int(ctx.options.get("namegen_k", 5)), int(ctx.options.get("batch_size", 16))
    arguments = bool(ctx.options.get("arguments", True))
    call_tokens = int(ctx.options.get("call_tokens", TRAINING_BUDGET.call))
    cache: dict[str, tuple[Prediction, float]] = {}

    def encode(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    @torch.inference_mode()
    def name_scores(head: list[int], names: list[list[int]]) -> list[float]:
        """log p(name | head) for each name: one pass over `head`, then all names at once on its cache."""
        out = model(input_ids=torch.tensor([head], device=policy.device), use_cache=True)
        first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        width = max(len(n) for n in names)
        past = output_cache(out)
        past.batch_repeat_interleave(len(names))
        ids = torch.tensor([n + [tokenizer.pad_token_id] * (width - len(n)) for n in names], device=policy.device)
        mask = torch.tensor(
            [[1] * len(head) + [1] * len(n) + [0] * (width - len(n)) for n in names], device=policy.device
        )
        logp = torch.log_softmax(
            model(input_ids=ids, attention_mask=mask, **{cache_keyword(model): past}).logits.float(), -1
        )
        return [
            float(first[n[0]]) + sum(float(logp[i, j - 1, n[j]]) for j in range(1, len(n))) for i, n in enumerate(names)
        ]

    def choose(step: Step) -> tuple[list, list[float]]:
        hits = ctx.bank.search(step.query.text, k=k + len(step.context), mode="hybrid")
        hits = [h for h in hits if h.name not in step.context][:k]
        listing = "\n".join(f"- {h.name}: {h.tool.description[:300]}" for h in hits)
        messages = [
            {"role": "system", "content": NAMEGEN_SYSTEM},
            {"role": "user", "content": f"{step.query.text}\n\nTools:\n{listing}"},
        ]
        head = encode(
            tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            + '<tool_call>{"name": "'
        )
        scores = name_scores(head, [encode(h.name + '"') for h in hits])
        order = sorted(range(len(hits)), key=lambda i: -scores[i])
        return [hits[i].tool for i in order], [scores[i] for i in order]

    def prepare(steps: list[Step]) -> None:
        for start in range(0, len(steps), batch_size):
            batch = steps[start : start + batch_size]
            began = time.perf_counter()
            chosen = [choose(step) for step in batch]
            if not arguments:  # the choice alone (`--measure per-request`)
                seconds = (time.perf_counter() - began) / len(batch)
                for step, (tools, scores) in zip(batch, chosen):
                    cache[step.id] = (Prediction([t.name for t in tools], scores), seconds)
                continue
            starts = [
                prompt_ids(policy, step_input(ctx.bank, step))
                + encode("</think><tool_anchor>")
                + encode(tool_card(tools[0]))
                + encode("<tool_call>" + call_prefix(tools[0].name))
                for step, (tools, _) in zip(batch, chosen)
            ]
            written = policy.generate_ids(starts, call_tokens, "</tool_call>")
            seconds = (time.perf_counter() - began) / len(batch)
            for step, (tools, scores), ids in zip(batch, chosen, written):
                # The untrained backbone rarely closes the call with </tool_call> (it ends its turn instead),
                # so its arguments are read as select_tool reads them: the JSON object after `"arguments": `.
                try:
                    call = {"name": tools[0].name, "arguments": parse_arguments(decode(policy, ids))}
                except ValueError:
                    call = None
                cache[step.id] = (Prediction([t.name for t in tools], scores, call, call is None), seconds)

    return _batched(prepare, cache)
