"""`select_tool(query)`: the call agents use."""

from __future__ import annotations

import json
import random
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from autotool.calls import checked_arguments, parse_arguments
from autotool.policy import Policy, readable_embedders, reads_embeddings_of
from autotool.prompts import MAX_QUERY_CHARS, StepRecord, TokenBudget, call_prefix, history, tool_card
from autotool.rerank import rerank_candidates
from autotool.selection import DEFAULT_TOP_K, StepInput, candidates, embedded, shortlisted
from toolbank import Tool, ToolBank, autotool_home, default_bank_path
from toolbank.tool import FORMATS

MODES = ("reason", "fast")


@dataclass
class Selection:
    """The policy's choice for one step.

    Attributes:
        tool: The chosen tool, or None when no tool fits: the best candidate's `cosine` is below the
            abstention threshold (`min_cosine`); `candidates` still lists the closest ones.
        probability: Its probability under the selection distribution.
        rationale: Why: the capability the policy says the step needs ("" in fast mode).
        arguments: The filled arguments, valid against the tool's schema (None when not asked for, or when
            no valid ones were written).
        candidates: The top-k tools with their probabilities, best first.
        argument_errors: Why the arguments written are not valid (empty when they are, or were not asked for).
        raw_arguments: The policy's text after `{"name": ..., "arguments":` (its last try).
        cosine: The request's cosine with the chosen tool (their embeddings): how close the best tool comes
            to what is asked, comparable across requests and banks (a probability depends on the competition);
            the abstention score.
    """

    tool: Tool | None
    probability: float
    rationale: str
    arguments: dict | None
    candidates: list[tuple[Tool, float]] = field(default_factory=list)
    argument_errors: list[str] = field(default_factory=list)
    raw_arguments: str = ""
    cosine: float = 0.0

    def call(self) -> dict | None:
        """The call as written, `{"name", "arguments"}` (`name`: the tool's qualified name): the arguments parsed
        from `raw_arguments`, less the values that only copy their parameter's description (as `arguments` has
        them when they validate); None when no tool fits or the text is not a JSON object. What the evaluations
        score."""
        if self.tool is None:
            return None
        try:
            arguments = parse_arguments(self.raw_arguments)
        except ValueError:
            return None
        return {"name": self.tool.qualified_name, "arguments": checked_arguments(arguments, self.tool.parameters)[0]}


def default_policy_path() -> Path:
    """`$AUTOTOOL_HOME/policy`: a policy of your own, used instead of the shipped one when present."""
    return autotool_home() / "policy"


SHIPPED_POLICY = Path(__file__).parent / "default_policy"  # trained by `make train-default`

# The request-to-tool cosine below which `select_tool` says no tool fits, per embedder: the largest threshold
# that costs at most 2 points of hit@1 on the validation requests that need a tool, on average over MetaTool's
# val split, API-Bank and ToolAlpaca (experiments/2026-12-01-abstention; for the tuned embedder, which saw every
# MetaTool tool, API-Bank and ToolAlpaca only: experiments/2026-12-01-embedder-finetune/abstention-tools.txt).
# Other embedders: never abstain.
MIN_COSINE = {
    "sentence-transformers/all-MiniLM-L6-v2": 0.22,
    "autotool/all-MiniLM-L6-v2-tools": 0.255,
}


def fitted_min_cosine(bank: ToolBank) -> float:
    """The abstention threshold fitted for the bank's embedder (`MIN_COSINE`), else 0: never abstain."""
    return MIN_COSINE.get(bank.embedder_id, 0.0)


_default: dict[str, Policy] = {}


def default_policy(bank: ToolBank) -> Policy:
    """The policy at `default_policy_path()`, else the shipped one, else (with a warning) the untrained anchor.

    The shipped policy reads all-MiniLM-L6-v2 embeddings; for a bank with another embedder it is skipped
    with a warning that says so.
    """
    key = f"{bank.embedder_id}|{bank.dim}"
    if key not in _default:
        own = default_policy_path()
        if (own / "manifest.json").exists():
            _default[key] = Policy.load(own, bank)
            return _default[key]
        why = f"no policy at {own} and none shipped at {SHIPPED_POLICY}"
        if (SHIPPED_POLICY / "manifest.json").exists():
            manifest = json.loads((SHIPPED_POLICY / "manifest.json").read_text())
            if reads_embeddings_of(manifest, bank):
                _default[key] = Policy.load(SHIPPED_POLICY, bank)
                return _default[key]
            why = (
                f"the shipped policy reads {' or '.join(readable_embedders(manifest))} embeddings (dim "
                f"{manifest['dim']}); bank {bank.path} uses {bank.embedder_id} (dim {bank.dim}), so re-embed it "
                f"(`toolbank --bank {bank.path} reindex --embedder {manifest['embedder']}`)"
            )
        warnings.warn(
            f"{why}: using the untrained anchor (dense retrieval on the query; the rationale does not move the choice)",
            stacklevel=3,
        )
        _default[key] = Policy.create(bank)
    return _default[key]


def _clean_query(query: str, stacklevel: int = 3) -> str:
    """`query`, checked, and cut to MAX_QUERY_CHARS with a warning at the line `stacklevel` frames up (3: the one
    that called the caller)."""
    if not isinstance(query, str) or not query.strip():
        raise ValueError("the query is empty; say what the tool should do")
    if len(query) > MAX_QUERY_CHARS:
        warnings.warn(f"query of {len(query):,} characters truncated to {MAX_QUERY_CHARS:,}", stacklevel=stacklevel)
        query = query[:MAX_QUERY_CHARS]
    return query


def _check_counts(k: int, top_k: int) -> None:
    for name, value in (("k", k), ("top_k", top_k)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")


def _request(query: str, mode: str, k: int, top_k: int, bank: ToolBank | None) -> tuple[str, ToolBank]:
    """`select_tool`'s and `select_tools`' checks, before anything loads, then the default bank where none was
    given. (The caller loads the default policy itself, so that its warning names the user's line.)"""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    _check_counts(k, top_k)
    query = _clean_query(query, stacklevel=4)  # the warning at the line that called select_tool(s)
    return query, ToolBank.load(default_bank_path()) if bank is None else bank


def _namespaces(namespace: str | Sequence[str] | None) -> str | tuple[str, ...] | None:
    """One namespace, several (as a tuple), or None for every tool."""
    if namespace is None or isinstance(namespace, str):
        return namespace
    namespace = tuple(namespace)
    if not namespace or not all(isinstance(n, str) for n in namespace):
        raise ValueError(f"namespace must be a name or a non-empty list of names, got {namespace!r}")
    return namespace


def select_steps(
    policy: Policy,
    bank: ToolBank,
    steps: Sequence[StepInput],
    k: int = 5,
    mode: str = "reason",
    arguments: bool = True,
    namespace: str | Sequence[str] | None = None,
    sample: bool = False,
    top_k: int = DEFAULT_TOP_K,
    budget: TokenBudget = TokenBudget(),
    grammar: bool = True,
    min_cosine: float | None = None,
    tags: Sequence[str] = (),
    rerank: bool = True,
) -> list[Selection]:
    """The served path, for a batch of steps: rationale (after the step's shortlist, for a policy with one:
    `Policy.shortlist`), anchor, candidates (autotool/selection.py), their best few reordered by the policy's
    reranker where its manifest has one (`autotool.rerank`; `rerank=False` leaves them as they are), choice and
    arguments, as `select_tool` describes. Never raises on arguments: a selection whose arguments failed
    the schema twice has `arguments` None and the reasons in `argument_errors`. The evaluation scores this.
    `namespace` is one namespace, a list of them, or None for every tool; `tags` keeps the tools carrying all
    of them; `grammar=False` writes arguments
    without the schema grammar (to measure what it adds); `min_cosine` as in `select_tool` (the evaluation
    passes 0: it scores every choice)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    _check_counts(k, top_k)
    namespace = _namespaces(namespace)
    tags = (tags,) if isinstance(tags, str) else tuple(tags)
    if len(bank) == 0:
        raise ValueError(f"bank {bank.path} has no tools; add some with `toolbank add FILE`")
    queries = embedded(bank.embedder, [s.query for s in steps])
    if mode == "fast" and not arguments and not policy.head_values.uses_hidden:
        # Nothing the language model reads or writes moves the choice: neither it nor PyTorch is loaded.
        rationales, heads, hidden = [""] * len(steps), None, None
    else:
        rationales, heads, hidden = written(policy, bank, steps, queries, mode, budget.rationale, namespace, tags)
    min_cosine = fitted_min_cosine(bank) if min_cosine is None else min_cosine
    anchors = policy.anchors(bank.embedder, [s.query for s in steps], rationales, hidden, query_vectors=queries)
    ranked_steps = candidates(policy.head_values, bank, anchors, steps, max(top_k, k), namespace, tags)
    if rerank and policy.rerank is not None:
        ranked_steps = [
            rerank_candidates(policy.reranker, policy.rerank, step.query, ranked)
            for step, ranked in zip(steps, ranked_steps)
        ]
    selections = []
    for step, rationale, ranked, query in zip(steps, rationales, ranked_steps, queries):
        if not ranked:
            raise ValueError(
                f"no tools in namespace {namespace!r}"
                + (f" with tags {list(tags)}" if tags else "")
                + f" of bank {bank.path}"
                + (" that earlier steps did not call" if step.exclude else "")
            )
        if sample:
            chosen = random.choices(ranked, weights=[c.probability for c in ranked])[0]
        else:
            chosen = max(ranked, key=lambda c: c.probability)  # the first of the most probable
        cosine = float(bank.vectors([chosen.tool.qualified_name])[0] @ query)
        selections.append(
            Selection(
                chosen.tool if cosine >= min_cosine else None,
                chosen.probability,
                rationale,
                None,
                [(c.tool, c.probability) for c in ranked[:k]],
                cosine=cosine,
            )
        )
    fitting = [i for i, s in enumerate(selections) if s.tool is not None]  # no arguments where no tool fits
    if arguments and fitting:
        fill_arguments(
            policy,
            [heads[i] + policy.encode(tool_card(selections[i].tool))[0].tolist() for i in fitting],
            [selections[i] for i in fitting],
            budget.call,
            grammar,
        )
    return selections


def written(
    policy: Policy,
    bank: ToolBank,
    steps: Sequence[StepInput],
    queries,
    mode: str,
    rationale_tokens: int,
    namespace: str | tuple[str, ...] | None = None,
    tags: Sequence[str] = (),
):
    """What the policy writes before it chooses, as `select_steps` runs it: each step's rationale ("" in fast
    mode; after its shortlist, for a policy with one), its prompt up to and including `<tool_anchor>` (where the
    arguments continue) and the (n, hidden) states there (None while W is zero). `queries` are the steps'
    request embeddings."""
    from autotool.rollout import hidden_at_anchor, prompt_ids, think

    read = shortlisted(policy.head_values, bank, steps, queries, policy.shortlist, namespace, tags)
    _, _, rationales, heads = think(policy, [prompt_ids(policy, s) for s in read], mode, rationale_tokens)
    return rationales, heads, hidden_at_anchor(policy, heads)


def _matcher(policy: Policy, schemas: Sequence[dict]):
    """The grammar matcher of the first of `schemas` llguidance can build (a retry's tightened schemas, then the
    tool's own); None when it can build none (written unconstrained, checked afterwards)."""
    for schema in schemas:
        matcher, _ = policy.argument_grammar.matcher(schema)
        if matcher is not None:
            return matcher
    return None


def fill_arguments(
    policy: Policy,
    before_calls: list[list[int]],
    selections: list[Selection],
    max_new_tokens: int,
    grammar: bool = True,
) -> None:
    """Write each selection's arguments after its call prefix (`before_calls`: the step's tokens up to and
    including the tool card), through its tool's schema grammar (`autotool.grammar`; `grammar=False` writes
    them unconstrained). A value that only repeats its parameter's description or name is left out, as
    missing (`calls.copied_values`). A try that still fails the schema is retried once, with the errors shown,
    through a tighter grammar (`grammar.tightened`): the copied values may not be written again, and after a
    try that ran out of tokens, only the required keys and those it began, bounded to fit the budget."""
    from autotool.grammar import tightened
    from autotool.rollout import decode

    call_end = policy.tokenizer.convert_tokens_to_ids("</tool_call>")
    schemas = [[s.tool.parameters] for s in selections]  # the grammars to try, the first that builds
    copied: dict[int, dict[str, list[str]]] = {}  # per selection: the keys whose values only copied, and them
    ran_out: set[int] = set()  # selections whose try ended at the token budget

    def attempt(todo: list[int], starts: list[list[int]]) -> list[list[int]]:
        """Fill selections `todo` after `starts`; returns each try's tokens, its call closed."""
        starts = [
            s + policy.encode("<tool_call>" + call_prefix(selections[i].tool.qualified_name))[0].tolist()
            for i, s in zip(todo, starts)
        ]
        matchers = [_matcher(policy, schemas[i]) for i in todo] if grammar else None
        written = policy.generate_ids(starts, max_new_tokens, "</tool_call>", constraints=matchers)
        for i, ids in zip(todo, written):
            if ids[-1:] == [call_end]:
                ids = ids[:-1]
            else:
                ran_out.add(i)
            selection = selections[i]
            selection.raw_arguments = decode(policy, ids)
            try:
                parsed = parse_arguments(selection.raw_arguments)
            except ValueError as e:
                selection.arguments, selection.argument_errors = None, [f"not a JSON object: {e}"]
                continue
            filled, errors = checked_arguments(parsed, selection.tool.parameters)
            copied[i] = {key: [str(parsed[key])] for key in parsed if key not in filled}
            selection.arguments, selection.argument_errors = (None if errors else filled), errors
        return [s + ids[: -1 if ids[-1:] == [call_end] else None] + [call_end] for s, ids in zip(starts, written)]

    tried = attempt(list(range(len(selections))), before_calls)
    retry = [i for i, s in enumerate(selections) if s.argument_errors]
    if retry:  # one retry, with the errors in context, through a grammar without what failed
        for i in retry:
            own = selections[i].tool.parameters
            began = re.findall(r'"((?:[^"\\]|\\.)*)": ', selections[i].raw_arguments)
            try:
                schemas[i] = [
                    *([tightened(own, copied.get(i, {}), max_new_tokens - 6, began)] if i in ran_out else []),
                    tightened(own, copied.get(i, {}), None),
                    own,
                ]
            except (TypeError, ValueError, AttributeError):  # a bound that is not a number: the tool's own
                pass
        attempt(
            retry,
            [
                tried[i]
                + policy.encode(f"<obs>invalid arguments: {'; '.join(selections[i].argument_errors)}</obs>")[0].tolist()
                for i in retry
            ],
        )


def select_tool(
    query: str,
    bank: ToolBank | None = None,
    policy: Policy | None = None,
    k: int = 5,
    mode: str = "reason",
    context: Sequence[StepRecord] | None = None,
    arguments: bool = True,
    namespace: str | Sequence[str] | None = None,
    sample: bool = False,
    top_k: int = DEFAULT_TOP_K,
    min_cosine: float | None = None,
    tags: Sequence[str] = (),
    rerank: bool = True,
) -> Selection:
    """Choose a tool for `query`, say why, and fill its arguments; or say that no tool fits.

    Args:
        query: The user's request.
        bank: Tool bank (default: the bank at `$AUTOTOOL_BANK` / `$AUTOTOOL_HOME/bank`).
        policy: Policy (default: the trained policy at `$AUTOTOOL_HOME/policy`, else the shipped one).
        k: How many candidates to return.
        mode: `reason` writes a rationale first; `fast` skips it (one forward pass, or none while W is zero).
        context: Earlier steps of the same task (each `StepRecord.tool` a qualified name, or a name only one
            tool has); their tools are not chosen again (as in training).
        arguments: Fill the arguments through the tool's schema grammar, so they parse and validate; when they
            still do not (out of tokens, a schema form the grammar cannot express, a required value that only
            copied its description), a retry with the errors shown. Never raises on them: `arguments` is None
            and `argument_errors` says why.
        namespace: Only consider tools in this namespace (or these, a list).
        tags: Only consider tools carrying all of these tags.
        sample: Sample the tool from the selection distribution instead of taking the most probable.
        top_k: Candidates the distribution is computed over (the whole bank when smaller).
        min_cosine: Say no tool fits (`tool` None) when the request's cosine with the best tool is below this;
            None: the threshold fitted for the bank's embedder (`MIN_COSINE`: 0.255 for the default, fine-tuned
            embedder, 0.22 for stock all-MiniLM-L6-v2); 0 never abstains.
        rerank: Let the policy's reranker (a cross-encoder, where its manifest names one: `autotool.rerank`)
            reorder the best few candidates; False leaves the distribution of the anchor as it is.

    Raises:
        ValueError: Empty query, unknown mode, k or top_k below 1, or an empty bank.
    """
    query, bank = _request(query, mode, k, top_k, bank)
    policy = default_policy(bank) if policy is None else policy
    context = list(context or ())
    called = tuple(bank.get(record.tool).qualified_name for record in context)  # a bare name, if unambiguous
    step = StepInput(query, history(context, bank.get), called)
    (selection,) = select_steps(
        policy,
        bank,
        [step],
        k,
        mode,
        arguments,
        namespace,
        sample,
        top_k,
        min_cosine=min_cosine,
        tags=tags,
        rerank=rerank,
    )
    return selection


@dataclass
class TopTools:
    """The best `k` tools for a request, ready to hand to a chat API (`select_tools`).

    Attributes:
        tools: The tools as dicts in `format` (`Tool.to_dict`): pass them as the `tools` of a chat request.
        names: Their qualified names (`namespace/name`), best first; `ToolBank.get` also takes the
            `namespace__name` form by which the `openai` and `anthropic` formats name them.
        scores: Their probabilities under the selection distribution (over the candidates, so the top `k`
            need not sum to 1).
        rationale: The capability the policy says the request needs ("" in fast mode).
        format: The format of `tools`.
        selection: The underlying `Selection` (its `candidates` hold the `Tool` objects).
    """

    tools: list[dict]
    names: list[str]
    scores: list[float]
    rationale: str
    format: str
    selection: Selection

    def __len__(self) -> int:
        return len(self.names)


def select_tools(
    query: str,
    k: int = 5,
    format: str = "openai",
    bank: ToolBank | None = None,
    policy: Policy | None = None,
    mode: str = "fast",
    namespace: str | Sequence[str] | None = None,
    top_k: int = DEFAULT_TOP_K,
    tags: Sequence[str] = (),
    rerank: bool = True,
) -> TopTools:
    """The best `k` tools for `query`, in a chat API's format, for a larger model to choose among and call.

    The same served path as `select_tool` (`select_steps`, without arguments): the tools are its candidates,
    best first.

    Args:
        query: The user's request (or the model's current sub-task).
        k: How many tools (fewer when the bank or namespace holds fewer).
        format: `openai` (chat completions `tools`), `anthropic` (messages `tools`), `mcp` (`tools/list`
            entries) or `plain`.
        bank: Tool bank (default: the bank at `$AUTOTOOL_BANK` / `$AUTOTOOL_HOME/bank`).
        policy: Policy (default: `default_policy(bank)`).
        mode: `fast` (default: no rationale) or `reason` (a rationale, in `TopTools.rationale`).
        namespace: Only consider tools in this namespace (or these, a list).
        top_k: Candidates the distribution is computed over (at least `k`).
        tags: Only consider tools carrying all of these tags.
        rerank: As in `select_tool`.

    Raises:
        ValueError: Empty query, unknown format or mode, k or top_k below 1, an empty bank or namespace.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
    query, bank = _request(query, mode, k, top_k, bank)
    policy = default_policy(bank) if policy is None else policy
    (selection,) = select_steps(
        policy,
        bank,
        [StepInput(query)],
        k,
        mode,
        False,
        namespace,
        False,
        top_k,
        min_cosine=0.0,
        tags=tags,
        rerank=rerank,
    )  # the larger model decides whether one fits
    tools = [tool for tool, _ in selection.candidates]
    return TopTools(
        [t.to_dict(format) for t in tools],
        [t.qualified_name for t in tools],
        [p for _, p in selection.candidates],
        selection.rationale,
        format,
        selection,
    )
