"""`select_tool(query)`: the call agents use."""

from __future__ import annotations

import json
import random
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from autotool.calls import parse_arguments, schema_errors
from autotool.policy import Candidate, Policy
from autotool.prompts import MAX_QUERY_CHARS, StepRecord, call_prefix, history, prompt, tool_card
from toolbank import Tool, ToolBank, autotool_home, default_bank_path

MODES = ("reason", "fast")
RATIONALE_TOKENS = 32
ARGUMENT_TOKENS = 96


@dataclass
class Selection:
    """The policy's choice for one step.

    Attributes:
        tool: The chosen tool.
        probability: Its probability under the selection distribution.
        rationale: Why: the capability the policy says the step needs ("" in fast mode).
        arguments: The filled arguments, valid against the tool's schema (None when not asked for).
        candidates: The top-k tools with their probabilities, best first.
    """

    tool: Tool
    probability: float
    rationale: str
    arguments: dict | None
    candidates: list[tuple[Tool, float]] = field(default_factory=list)


class ArgumentError(ValueError):
    """The policy's arguments failed the tool's schema twice. `raw` holds its text, `selection` the choice."""

    def __init__(self, message: str, raw: str, selection: Selection):
        super().__init__(message)
        self.raw, self.selection = raw, selection


def default_policy_path() -> Path:
    """`$AUTOTOOL_HOME/policy`: a policy of your own, used instead of the shipped one when present."""
    return autotool_home() / "policy"


SHIPPED_POLICY = Path(__file__).parent / "default_policy"  # trained by `make train-default`
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
            if (manifest["embedder"], manifest["dim"]) == (bank.embedder_id, bank.dim):
                _default[key] = Policy.load(SHIPPED_POLICY, bank)
                return _default[key]
            why = (f"the shipped policy reads {manifest['embedder']} embeddings (dim {manifest['dim']}); bank "
                   f"{bank.path} uses {bank.embedder_id} (dim {bank.dim})")
        warnings.warn(f"{why}: using the untrained anchor (dense retrieval on the query; the rationale does "
                      "not move the choice)", stacklevel=3)
        _default[key] = Policy.create(bank)
    return _default[key]


def _clean_query(query: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise ValueError("the query is empty; say what the tool should do")
    if len(query) > MAX_QUERY_CHARS:
        warnings.warn(f"query of {len(query):,} characters truncated to {MAX_QUERY_CHARS:,}", stacklevel=3)
        query = query[:MAX_QUERY_CHARS]
    return query


def fill_arguments(policy: Policy, before_call: str, tool: Tool) -> tuple[dict | None, str, list[str]]:
    """Generate arguments after the call's prefix; returns (arguments or None, raw text, errors)."""
    raw = policy.generate(before_call + "<tool_call>" + call_prefix(tool.name), ARGUMENT_TOKENS, ["</tool_call>"])
    try:
        arguments = parse_arguments(raw)
    except ValueError as e:
        return None, raw, [f"not a JSON object: {e}"]
    errors = schema_errors(arguments, tool.parameters)
    return (arguments if not errors else None), raw, errors


def select_tool(query: str, bank: ToolBank | None = None, policy: Policy | None = None, k: int = 5,
                mode: str = "reason", context: Sequence[StepRecord] | None = None, arguments: bool = True,
                namespace: str | None = None, sample: bool = False, top_k: int = 64) -> Selection:
    """Choose a tool for `query`, say why, and fill its arguments.

    Args:
        query: The user's request.
        bank: Tool bank (default: the bank at `$AUTOTOOL_BANK` / `$AUTOTOOL_HOME/bank`).
        policy: Policy (default: the trained policy at `$AUTOTOOL_HOME/policy`, else the untrained anchor).
        k: How many candidates to return.
        mode: `reason` writes a rationale first; `fast` skips it (one forward pass, or none while untrained).
        context: Earlier steps of the same task; their tools are not chosen again (as in training).
        arguments: Fill and validate the arguments (after one failed try, a retry with the errors shown).
        namespace: Only consider tools in this namespace.
        sample: Sample the tool from the selection distribution instead of taking the most probable.
        top_k: Candidates the distribution is computed over (the whole bank when smaller).

    Raises:
        ValueError: Empty query, unknown mode, or an empty bank.
        ArgumentError: The arguments failed the tool's schema twice (the selection is attached).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    query = _clean_query(query)
    bank = ToolBank.load(default_bank_path()) if bank is None else bank
    if len(bank) == 0:
        raise ValueError(f"bank {bank.path} has no tools; add some with `toolbank add FILE`")
    policy = default_policy(bank) if policy is None else policy
    text = prompt(policy.tokenizer, query, history(context or (), bank.get))
    rationale = ""
    if mode == "reason":
        rationale = policy.generate(text, RATIONALE_TOKENS, ["</think>"]).strip()
    text += f"{rationale}</think><tool_anchor>"
    hidden = policy.hidden_at_end(text) if policy.head.uses_hidden else None
    anchor = policy.anchor(bank, query, rationale, hidden)
    called = [record.tool for record in context or ()]
    candidates: list[Candidate] = policy.candidates(bank, anchor, query, max(top_k, k), namespace, called)
    if not candidates:
        raise ValueError(f"no tools in namespace {namespace!r} of bank {bank.path}"
                         + (" that earlier steps did not call" if called else ""))
    if sample:
        chosen = random.choices(candidates, weights=[c.probability for c in candidates])[0]
    else:
        chosen = candidates[int(np.argmax([c.probability for c in candidates]))]
    selection = Selection(chosen.tool, chosen.probability, rationale, None,
                          [(c.tool, c.probability) for c in candidates[:k]])
    if arguments:
        before_call = text + tool_card(chosen.tool)
        filled, raw, errors = fill_arguments(policy, before_call, chosen.tool)
        if filled is None:  # one retry, with the errors in context
            retry = (before_call + "<tool_call>" + call_prefix(chosen.tool.name) + raw + "</tool_call>"
                     + f"<obs>invalid arguments: {'; '.join(errors)}</obs>")
            filled, raw, errors = fill_arguments(policy, retry, chosen.tool)
        if filled is None:
            raise ArgumentError(f"arguments for {chosen.tool.name!r} failed twice: {'; '.join(errors)}", raw, selection)
        selection.arguments = filled
    return selection
