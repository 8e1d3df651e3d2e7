"""`Agent`: reason -> select -> call -> observe, with Python callables as the tools' executors."""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

from autotool.policy import Policy
from autotool.prompts import StepRecord, history, prompt
from autotool.select import ArgumentError, Selection, default_policy, select_tool
from toolbank import Tool, ToolBank

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}


def tool_from_function(fn: Callable, name: str | None = None, namespace: str | None = None) -> Tool:
    """A tool card from a function: its name, the docstring's first paragraph, and a schema from its signature."""
    properties, required = {}, []
    hints = typing.get_type_hints(fn)
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        spec = {"type": _JSON_TYPES[hints[pname]]} if hints.get(pname) in _JSON_TYPES else {}
        properties[pname] = spec
        if param.default is param.empty:
            required.append(pname)
    doc = inspect.getdoc(fn) or ""
    schema = {"type": "object", "properties": properties, "required": required}
    return Tool(name or fn.__name__, doc.split("\n\n")[0].replace("\n", " "), schema, namespace=namespace)


@dataclass
class Trajectory:
    query: str
    steps: list[tuple[Selection, str]] = field(default_factory=list)  # (selection, observation)
    answer: str = ""


class Agent:
    """Runs a task with the tools registered on it.

    ```
    agent = Agent(bank, policy)
    agent.register(get_weather)          # tool card from name, docstring and signature; added to the bank
    trajectory = agent.run("Is it raining in Paris?")
    ```
    """

    def __init__(self, bank: ToolBank, policy: Policy | None = None, namespace: str = "agent", max_steps: int = 4):
        self.bank, self.policy, self.namespace, self.max_steps = bank, policy, namespace, max_steps
        self.executors: dict[str, Callable[..., Any]] = {}

    def register(self, fn: Callable[..., Any], name: str | None = None) -> Tool:
        """Add `fn` to the bank (in this agent's namespace) and call it when its tool is chosen."""
        tool = tool_from_function(fn, name, self.namespace)
        self.bank.add([tool], replace=True)
        self.executors[tool.name] = fn
        return tool

    def run(self, query: str) -> Trajectory:
        """Loop select -> call -> observe until the policy answers, `max_steps` steps were taken, or every tool
        was called (a step does not choose a tool an earlier step called, as in training)."""
        trajectory, records = Trajectory(query), []
        policy = default_policy(self.bank) if self.policy is None else self.policy
        for _ in range(self.max_steps):
            try:
                selection = select_tool(query, self.bank, policy, context=records, namespace=self.namespace)
            except ArgumentError as e:
                selection, observation = e.selection, f"error: {e}"
                selection.arguments = {}
            except ValueError:
                if records:  # every tool was called once already: nothing left to choose
                    break
                raise
            else:
                try:
                    observation = str(self.executors[selection.tool.name](**selection.arguments))
                except Exception as e:  # a tool that raises is an observation, not the end of the run
                    observation = f"error: {type(e).__name__}: {e}"
            trajectory.steps.append((selection, observation))
            records.append(StepRecord(selection.rationale, selection.tool.name, selection.arguments or {}, observation))
            text = prompt(policy.tokenizer, query, history(records, self.bank.get))[: -len("<think>")]
            following = policy.generate(text, 48, "</answer>")
            if not following.lstrip().startswith("<think>"):
                trajectory.answer = following.replace("<answer>", "").strip()
                break
        return trajectory

