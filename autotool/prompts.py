"""The text protocol the policy reads and writes.

One selection step, as the model sees it:
`<think>rationale</think><tool_anchor>` -> the system inserts the chosen tool's card ->
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` -> `<obs>result</obs>` -> next step or `<answer>`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from toolbank import Tool

# Short on purpose: it is read (and, in training, back-propagated through) at every step.
SYSTEM = (
    "Pick a tool. Write <think>the capability needed</think><tool_anchor>; a tool card follows; "
    'then <tool_call>{"name": ..., "arguments": {...}}</tool_call>.'
)
MAX_QUERY_CHARS = 4000
SHORTLIST_HEADER = "Candidates:\n"  # before the listed tools (`shortlist_line`), after the earlier steps
SHORTLIST_WORDS = 16  # words of a tool's description a shortlist line keeps


@dataclass(frozen=True)
class TokenBudget:
    """The most new tokens the policy writes for each part of a step: the rationale, and the call (its
    arguments after the given `{"name": ..., "arguments":` when serving; the whole call in training rollouts)."""

    rationale: int = 32
    call: int = 96


@dataclass
class StepRecord:
    """A finished step, given back to the model as context for the next one."""

    rationale: str
    tool: str  # the tool's qualified name
    arguments: dict
    observation: str = ""


def tool_card(tool: Tool) -> str:
    """What the system inserts after `<tool_anchor>`: the tool's qualified name (`namespace/name`; the name alone
    without a namespace), description and schema."""
    return (
        f"[{tool.qualified_name}] {tool.description}\nparameters: {json.dumps(tool.parameters, ensure_ascii=False)}\n"
    )


def shortlist_line(tool: Tool) -> str:
    """How a shortlisted tool is listed in the prompt, and what a rationale that picks it copies: `NAME: ` and the
    first sentence of its description, at most `SHORTLIST_WORDS` words (the name is the qualified name)."""
    sentence = re.split(r"(?<=[.!?])\s+|\n+", tool.description.strip(), maxsplit=1)[0]
    return f"{tool.qualified_name}: {' '.join(sentence.split()[:SHORTLIST_WORDS])}"


def call_text(name: str, arguments: dict) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def call_prefix(name: str) -> str:
    """`{"name": "NAME", "arguments":`: the start of a call, which the model continues with the arguments.

    No space after the colon: in the training text the space belongs to the next token (` {"`, ` {}`), so a
    prefix ending in a lone space token is one the model never saw, and it then skips the opening brace.
    """
    return call_text(name, {})[:-3].rstrip()


def step_text(step: StepRecord, card: str) -> str:
    return (
        f"<think>{step.rationale}</think><tool_anchor>{card}<tool_call>{call_text(step.tool, step.arguments)}"
        f"</tool_call><obs>{step.observation}</obs>"
    )


def history(steps: Sequence[StepRecord], get_tool: Callable[[str], Tool]) -> tuple[str, ...]:
    """The texts of earlier steps as the model reads them, each with its tool's card (`get_tool(name)`: the
    step's tool, by its qualified name)."""
    return tuple(step_text(s, tool_card(get_tool(s.tool))) for s in steps)


def shared_prefix(tokenizer) -> str:
    """The start every prompt has in common: the chat template up to the user's text (system prompt included)."""
    marker = "\x00"
    text = prompt(tokenizer, marker)
    return text[: text.index(marker)]


def prompt(tokenizer, query: str, context: Sequence[str] = (), shortlist: Sequence[str] = ()) -> str:
    """The chat-formatted prompt, ending where the model writes its next `<think>`.

    Args:
        query: The user's request.
        context: Texts of the earlier steps (`step_text`), in order.
        shortlist: Lines (`shortlist_line`) of the tools this step's rationale may read and pick from, listed after
            the earlier steps under `SHORTLIST_HEADER` (none: no list, the protocol of a policy without one).
    """
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": query}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    listed = SHORTLIST_HEADER + "".join(f"- {line}\n" for line in shortlist) if shortlist else ""
    return text + "".join(context) + listed + "<think>"
