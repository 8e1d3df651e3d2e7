"""Trajectory data: a benchmark's `train` queries (seen tools only) written as the steps the policy should take.

A trajectory (one JSON line):
```
{"id": ..., "query": ..., "steps": [{"rationale", "tool", "arguments", "observation"}, ...], "answer": ""}
```
The benchmarks hold no tool outputs or final answers, so `observation` and `answer` are empty; training
learns from the rationale, the tool choice and the call.

The rationale target (AutoTool's pipeline: collect, write a rationale, filter, insert) is written by a
deterministic rule from the gold tool's description and the query:
1. split the description into sentences; take the one sharing the most words with the query (the first on
   ties): the capability, in the language of tool descriptions;
2. replace the tool's name in it (whole word, any case, also split at camelCase / `_`) by "the tool";
3. keep at most 30 words; fewer than two words besides "the tool" count as empty.
A trajectory is dropped, and counted, when a step's rationale is empty or still names the tool (compared with
letters and digits only, so `Research-Helper` is caught), when its gold call fails the tool's schema, or when
it calls a tool an earlier step called (the served path never chooses it again).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from autotool.benchmarks import Benchmark, Split, select_queries, steps_of
from autotool.calls import schema_errors
from autotool.prompts import StepRecord, call_text, history, shortlist_line
from autotool.rollout import StepInput
from autotool.selection import HeadValues, embedded, shortlisted
from toolbank import Tool, atomic_write

MAX_RATIONALE_WORDS = 30
_WORD = re.compile(r"[a-z0-9]+")
_NAME_LIKE = re.compile(r"[A-Za-z0-9_.\-]+")
_IDENTIFIER = re.compile(r"[_.\-0-9]|[a-z][A-Z]")


class DataError(ValueError):
    """Trajectory data is malformed or leaks unseen tools into training. The message names the file or tool."""


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _compact(text: str) -> str:
    return "".join(_WORD.findall(text.lower()))


def _name_forms(name: str) -> list[str]:
    """The name as written, and split into words at camelCase humps, `_`, `-` and `.`."""
    split = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    split = re.sub(r"[_\-.]+", " ", split).strip()
    return sorted({name, split}, key=len, reverse=True)


def names_tool(rationale: str, tool: str) -> bool:
    """True when `rationale` contains the tool's name (letters and digits compared; names under 4 long skipped)."""
    name = _compact(tool)
    return len(name) >= 4 and name in _compact(rationale)


def rationale_for(tool: Tool, query: str) -> str:
    """The rationale target for choosing `tool` for `query` (see the module docstring)."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", tool.description) if s.strip()]
    if not sentences:
        return ""
    query_words = _words(query)
    best = max(sentences, key=lambda s: (len(_words(s) & query_words), -sentences.index(s)))
    for form in _name_forms(tool.name):
        best = re.sub(rf"(?<![A-Za-z0-9]){re.escape(form)}(?![A-Za-z0-9])", "the tool", best, flags=re.IGNORECASE)
    best = re.sub(r"\bthe tool the tool\b", "the tool", best)
    if len(_words(best) - {"the", "tool"}) < 2:  # nothing left but the name: no capability stated
        return ""
    return " ".join(best.split()[:MAX_RATIONALE_WORDS])


def build_trajectories(bench: Benchmark, split: Split, query_split: str = "train") -> tuple[list[dict], Counter]:
    """Trajectories for the queries of `query_split`, and counts of what was kept and dropped (and why)."""
    tools = {t.name: t for t in bench.tools}
    trajectories, counts = [], Counter()
    for query in select_queries(bench, split, query_split):
        steps, problem = [], None
        for step in steps_of(query):
            tool, arguments = tools[step.gold], step.gold_args or {}
            rationale = rationale_for(tool, query.text)
            if tool.name in step.context:  # the served path never chooses a tool already called: no target
                problem = "repeats_called_tool"
            elif not rationale:
                problem = "empty_rationale"
            elif names_tool(rationale, tool.name):
                problem = "rationale_names_tool"
            elif schema_errors(arguments, tool.parameters):
                problem = "invalid_call"
            if problem:
                break
            steps.append({"rationale": rationale, "tool": tool.name, "arguments": arguments, "observation": ""})
        counts[f"dropped_{problem}" if problem else "kept"] += 1
        if not problem:
            trajectories.append({"id": query.id, "query": query.text, "steps": steps, "answer": ""})
    return trajectories, counts


def check_no_unseen(trajectories: Iterable[dict], split: Split, allowed: set[str] | None = None) -> None:
    """`DataError` if any training input names a tool outside the split's train tools.

    Checked: every step's tool (the targets, and the cards inserted in context), and held-out tool names
    that look like identifiers (`getWeather`, `pdf_to_text`; not plain words like `calculator`, which
    descriptions use as words) written in a rationale or call. Queries are the users' words: not checked.
    """
    allowed = set(split.tools["train"]) if allowed is None else allowed
    held_out = {n for n in set(split.tools["val"]) | set(split.tools["unseen"]) if _IDENTIFIER.search(n)}
    for trajectory in trajectories:
        for step in trajectory["steps"]:
            if step["tool"] not in allowed:
                raise DataError(
                    f"trajectory {trajectory['id']}: tool {step['tool']!r} is not a train tool "
                    "(validation and unseen tools never reach training)"
                )
            text = step["rationale"] + " " + call_text(step["tool"], step["arguments"])
            leaked = sorted(held_out & {w.strip(".-") for w in _NAME_LIKE.findall(text)})
            if leaked:
                raise DataError(
                    f"trajectory {trajectory['id']}: its rationale or call names held-out tool {leaked[0]!r}"
                )


def write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                for step in row["steps"]:
                    step["rationale"], step["tool"], step["arguments"]
                row["query"], row["id"]
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise DataError(
                    f"{path} line {line_no}: expected a trajectory with id, query and steps of "
                    f"rationale, tool and arguments ({e!r})"
                ) from None
            rows.append(row)
    return rows


@dataclass
class Example:
    """One supervised step: where it starts, and what the policy should write and choose."""

    input: StepInput
    rationale: str
    tool: str
    arguments: dict

    @property
    def call(self) -> str:
        return call_text(self.tool, self.arguments)

    @property
    def gold_call(self) -> dict:
        return {"name": self.tool, "arguments": self.arguments}


def examples(trajectories: Iterable[dict], tools: dict[str, Tool]) -> list[Example]:
    """One example per step; earlier steps are context (written without their rationale, as in evaluation)."""
    out = []
    for trajectory in trajectories:
        context = []
        for number, step in enumerate(trajectory["steps"], 1):
            done = tuple(s.tool for s in context)
            if step["tool"] in done:  # its target would be excluded: log p = -inf
                raise DataError(
                    f"trajectory {trajectory['id']}: step {number} calls {step['tool']!r}, which an earlier step "
                    "called; the served path never chooses a called tool again"
                )
            out.append(
                Example(
                    StepInput(trajectory["query"], history(context, tools.__getitem__), done),
                    step["rationale"],
                    step["tool"],
                    step["arguments"],
                )
            )
            context.append(StepRecord("", step["tool"], step["arguments"], step.get("observation", "")))
    return out


def with_shortlists(examples: list[Example], head: HeadValues, table, n: int, seed: int) -> list[Example]:
    """`examples` as a policy with a shortlist of `n` tools learns them: each step lists the `n` best train tools
    of `table` in fast mode (`autotool.selection.shortlisted`: only train tools, so nothing held out reaches
    training), the gold tool in place of the last when it is not among them, in an order drawn from `seed`
    and the step (the rationale must read the lines, not count on the first); the rationale target is the gold
    tool's line, which the policy copies to pick it."""
    steps = shortlisted(
        head, table, [e.input for e in examples], embedded(table.embedder, [e.input.query for e in examples]), n
    )
    out = []
    for example, step in zip(examples, steps):
        gold = shortlist_line(table.tools[table.index[example.tool]])
        lines = list(step.shortlist)
        if gold not in lines:
            lines[-1] = gold
        random.Random(f"{seed}|{example.input.query}|{len(example.input.context)}").shuffle(lines)
        out.append(replace(example, input=replace(step, shortlist=tuple(lines)), rationale=gold))
    return out
