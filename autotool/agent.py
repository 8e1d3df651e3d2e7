"""`Agent`: reason -> select -> call -> observe, with Python callables as the tools' executors."""

from __future__ import annotations

import collections.abc
import enum
import inspect
import json
import math
import re
import shutil
import tempfile
import types
import typing
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autotool.backbone import SPECIAL_TOKENS
from autotool.policy import Policy
from autotool.prompts import StepRecord, TokenBudget, history, prompt
from autotool.select import MODES, Selection, _clean_query, default_policy, select_steps
from autotool.selection import StepInput
from toolbank import DEFAULT_EMBEDDER, Embedder, Tool, ToolBank

_JSON_TYPES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
    type(None): "null",
}
_ARRAYS = (
    list,
    tuple,
    set,
    frozenset,
    collections.abc.Sequence,
    collections.abc.Iterable,
    collections.abc.Collection,
    collections.abc.Set,
    collections.abc.MutableSequence,
)
_OBJECTS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
_PARAM_FIELDS = {"param", "parameter", "arg", "argument", "key", "keyword"}
_ARG_SECTIONS = {
    "args",
    "arguments",
    "parameters",
    "params",
    "keyword args",
    "keyword arguments",
    "kwargs",
    "other parameters",
}
_SECTIONS = _ARG_SECTIONS | {
    "returns",
    "return",
    "yields",
    "yield",
    "raises",
    "raise",
    "exceptions",
    "examples",
    "example",
    "note",
    "notes",
    "warning",
    "warnings",
    "see also",
    "todo",
    "attributes",
    "references",
    "methods",
}
_FIELD = re.compile(r"^:(\w+)(?:\s+([^:]*?))?\s*:\s*(.*)$")  # reST `:param int x: ...`, `:returns: ...`
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")  # `x (int): ...`
_NUMPY_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?::.*)?$")  # `x : int`
PEEK_TOKENS = 4  # enough to see whether the policy starts another step (<think>) or answers (<answer>)
ANSWER_TOKENS = 64
THOUGHT_TOKENS = TokenBudget().rationale


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """A docstring's summary (its first paragraph, before any section) and its parameter descriptions, from a
    Google `Args:` section, reST `:param x:` fields or a NumPy `Parameters` section."""
    lines = inspect.cleandoc(doc or "").expandtabs().splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    where, current, base = "summary", None, None  # where: summary, text, google, numpy or field
    i = 0
    while i < len(lines):
        line = lines[i]
        text, indent = line.strip(), len(line) - len(line.lstrip())
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        i += 1
        if text and len(following) >= 3 and set(following) == {"-"}:  # a NumPy section header
            where, current, base = ("numpy" if text.lower() in _ARG_SECTIONS else "text"), None, None
            i += 1
            continue
        if text.endswith(":") and text[:-1].strip().lower() in _SECTIONS:  # a Google section header
            where, current, base = ("google" if text[:-1].strip().lower() in _ARG_SECTIONS else "text"), None, None
            continue
        fieldline = _FIELD.match(text)
        if fieldline:
            kind, spec, rest = fieldline.groups()
            if kind.lower() in _PARAM_FIELDS and spec:
                current = spec.split()[-1].lstrip("*")
                params[current] = (rest or "").strip()
                where, base = "field", indent
            else:
                where, current = "text", None
            continue
        if where == "summary":
            summary.append(text)
        elif where in ("google", "numpy"):
            if not text:
                current = None
                continue
            base = indent if base is None else base
            if indent < base:
                where, current = "text", None
            elif indent == base:
                entry = (_GOOGLE_ENTRY if where == "google" else _NUMPY_ENTRY).match(text)
                current = entry.group(1) if entry else None
                if entry:
                    params[current] = entry.group(2).strip() if where == "google" else ""
            elif current is not None:
                params[current] = f"{params[current]} {text}".strip()
        elif where == "field":
            if text and indent > base and current is not None:
                params[current] = f"{params[current]} {text}".strip()
            else:
                where, current = ("field" if not text else "text"), None
    paragraphs, block = [], []
    for text in summary + [""]:
        if text:
            block.append(text)
        elif block:
            paragraphs.append(" ".join(block))
            block = []
    return (paragraphs[0] if paragraphs else ""), {k: v for k, v in params.items() if v}


def _annotation_description(hint: Any) -> str | None:
    """The description in `Annotated[T, "description"]` (or a metadata object's `.description`, as pydantic's
    `Field` has), also inside `Optional[...]`."""
    if typing.get_origin(hint) is typing.Annotated:
        for meta in hint.__metadata__:
            text = meta if isinstance(meta, str) else getattr(meta, "description", None)
            if isinstance(text, str) and text.strip():
                return text.strip()
        return _annotation_description(typing.get_args(hint)[0])
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            found = _annotation_description(arg)
            if found:
                return found
    return None


def _enum_schema(values: list) -> dict:
    kinds = {_JSON_TYPES.get(type(v)) for v in values}
    out = {"type": kinds.pop()} if len(kinds) == 1 and None not in kinds else {}
    return out | {"enum": values}


def json_schema(hint: Any) -> dict:
    """A JSON Schema for a type hint: `str`, `int`, `float`, `bool`, `None`, `list[T]` (and tuples, sets,
    sequences), `dict[str, T]` (and mappings), `Optional[T]` / `T | None`, unions, `Literal[...]` and `Enum`
    classes; `Annotated[T, ...]` is T. Any other hint (`Any`, a class) gives `{}`: any value."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return json_schema(args[0])
    if hint is None or hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[type(None) if hint is None else hint]}
    if origin in (typing.Union, types.UnionType):
        options = [json_schema(a) for a in args]
        if any(not o for o in options):
            return {}
        if all(set(o) == {"type"} for o in options):
            kinds = [k for o in options for k in (o["type"] if isinstance(o["type"], list) else [o["type"]])]
            return {"type": list(dict.fromkeys(kinds))}
        return {"anyOf": options}
    if origin is typing.Literal:
        return _enum_schema(list(args))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([m.value for m in hint])
    if hint in _ARRAYS or origin in _ARRAYS:
        out: dict = {"type": "array"}
        items = [a for a in args if a is not Ellipsis]
        if items and all(a == items[0] for a in items) and json_schema(items[0]):
            out["items"] = json_schema(items[0])
        if origin in (set, frozenset, collections.abc.Set) or hint in (set, frozenset):
            out["uniqueItems"] = True
        return out
    if hint in _OBJECTS or origin in _OBJECTS:
        out = {"type": "object"}
        if len(args) == 2 and json_schema(args[1]):
            out["additionalProperties"] = json_schema(args[1])
        return out
    return {}


def _hints(fn: Callable) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # a forward reference that does not resolve: the annotations that are not strings
        return {
            n: p.annotation
            for n, p in inspect.signature(fn).parameters.items()
            if p.annotation is not p.empty and not isinstance(p.annotation, str)
        }


def _json_default(value: Any) -> tuple[bool, Any]:
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, (str, bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        return True, value
    return False, None


def tool_from_function(fn: Callable, name: str | None = None, namespace: str | None = None) -> Tool:
    """A tool card from a function: its name, its docstring's summary, and a JSON Schema from its signature.

    Each parameter's type comes from its hint (`json_schema`), its description from `Annotated[T,
    "description"]` or else the docstring (`parse_docstring`: Google `Args:`, reST `:param x:`, NumPy
    `Parameters`), and a JSON-valued default is recorded. Parameters without a default are required.
    The schema has the shape of the training catalogs' (no `additionalProperties`): an unknown argument
    reaches the function, whose TypeError becomes the step's observation.
    """
    summary, documented = parse_docstring(inspect.getdoc(fn) or "")
    hints = _hints(fn)
    properties, required = {}, []
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        hint = hints.get(pname, param.empty)
        spec = {} if hint is param.empty else json_schema(hint)
        description = (None if hint is param.empty else _annotation_description(hint)) or documented.get(pname)
        if description:
            spec["description"] = description
        if param.default is param.empty:
            required.append(pname)
        else:
            ok, value = _json_default(param.default)
            if ok:
                spec["default"] = value
        properties[pname] = spec
    schema = {"type": "object", "properties": properties, "required": required}
    return Tool(name or fn.__name__, summary, schema, namespace=namespace)


def _call(fn: Callable, arguments: dict) -> Any:
    """`fn(**arguments)`, with positional-only parameters passed by position."""
    arguments = dict(arguments)
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return fn(**arguments)
    positional = []
    for param in parameters:
        if param.kind is param.POSITIONAL_ONLY and param.name in arguments:
            positional.append(arguments.pop(param.name))
    return fn(*positional, **arguments)


def _observation(result: Any) -> str:
    if isinstance(result, str):
        return result
    if result is None:
        return ""
    if isinstance(result, (dict, list, tuple, int, float, bool)):
        try:
            return json.dumps(result, ensure_ascii=False)
        except (TypeError, ValueError):
            pass
    return str(result)


@dataclass
class Trajectory:
    """A task as the agent ran it.

    Attributes:
        query: The task.
        steps: `(Selection, observation)` for each step, in order. The observation is what the tool returned
            (as text; dicts and lists as JSON), or `error: ...` when it has no valid arguments
            (the function is then not called), the function raised, or no function could call the tool.
        answer: The policy's answer, the text it wrote between `<answer>` and `</answer>` without any tags;
            "" when it wrote none.
        stop: Why the run ended: `answer`; `max_steps` (the step budget was spent); `no_tools` (every tool the
            agent may choose was called once); `no_answer` (after a step the policy wrote neither another
            step nor an answer); `unsure` (the next choice was below `Agent(min_probability=...)`);
            `no_tool_fits` (no tool fits the request: nothing was called).
    """

    query: str
    steps: list[tuple[Selection, str]] = field(default_factory=list)  # (selection, observation)
    answer: str = ""
    stop: str = ""


def _remove_bank(bank: ToolBank, folder: Path) -> None:
    bank.close()
    shutil.rmtree(folder, ignore_errors=True)


class Agent:
    """Runs a task with Python functions as the tools.

    ```
    agent = Agent()                      # a private, temporary bank (default embedder); Agent(bank) for yours
    agent.register(get_weather)          # tool card from name, docstring and signature; added to the bank
    trajectory = agent.run("Is it raining in Paris?")
    ```

    Args:
        bank: The bank to register tools in and choose from. None: a private bank in a temporary folder,
            with `embedder`, removed by `close()` (or when the agent is garbage-collected). Never the
            default bank.
        policy: The policy (default: `default_policy(bank)`).
        namespace: Where `register` puts tools. The agent chooses among the tools it registered there (other
            tools of that namespace, with no function here, are left out).
        max_steps: The most steps (tool calls) of a run.
        namespaces: Other namespaces of the bank whose tools the agent may also choose (a name or a list;
            `"*"`: every tool of the bank). They are called through `execute`.
        execute: `execute(tool, arguments)` calls a chosen tool that has no registered function (e.g. through
            an MCP client); without it such a step's observation is an error.
        mode: `reason` (a rationale before each choice) or `fast`.
        min_probability: When set, a step whose chosen tool has a lower probability ends the run before the
            tool is called (`Trajectory.stop` is `unsure`). Off by default.
        embedder: The embedder of the temporary bank when `bank` is None (spec string or `Embedder`).
    """

    def __init__(
        self,
        bank: ToolBank | None = None,
        policy: Policy | None = None,
        namespace: str = "agent",
        max_steps: int = 4,
        namespaces: str | Sequence[str] | None = None,
        execute: Callable[[Tool, dict], Any] | None = None,
        mode: str = "reason",
        min_probability: float | None = None,
        embedder: str | Embedder | None = None,
    ):
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a whole number of at least 1, got {max_steps!r}")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        if min_probability is not None and not (isinstance(min_probability, (int, float)) and 0 < min_probability <= 1):
            raise ValueError(f"min_probability must be in (0, 1], got {min_probability!r}")
        if not isinstance(namespace, str) or not namespace:
            raise ValueError(f"namespace must be a name, got {namespace!r}")
        if bank is not None and embedder is not None:
            raise ValueError("embedder is for the temporary bank of Agent(bank=None); this bank has its own")
        self._finalizer = None
        if bank is None:
            folder = Path(tempfile.mkdtemp(prefix="autotool-agent-"))
            try:
                bank = ToolBank.create(folder / "bank", DEFAULT_EMBEDDER if embedder is None else embedder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            self._finalizer = weakref.finalize(self, _remove_bank, bank, folder)
        if namespaces is None or namespaces == "*":
            others = namespaces
        else:
            others = (namespaces,) if isinstance(namespaces, str) else tuple(namespaces)
            if not all(isinstance(n, str) and n for n in others):
                raise ValueError(f"namespaces must be names, or '*' for every tool, got {namespaces!r}")
            others = tuple(n for n in dict.fromkeys(others) if n != namespace)
        self.bank, self.policy, self.namespace, self.max_steps = bank, policy, namespace, max_steps
        self.namespaces, self.execute, self.mode, self.min_probability = others, execute, mode, min_probability
        self.executors: dict[str, Callable[..., Any]] = {}

    @classmethod
    def in_memory(cls, embedder: str | Embedder = DEFAULT_EMBEDDER, **options) -> Agent:
        """An agent on a private bank of its own in a temporary folder (removed by `close()`), with `embedder`
        (e.g. `toolbank.HashEmbedder(64)`, which needs no model). `options` as for `Agent`."""
        return cls(None, embedder=embedder, **options)

    @property
    def temporary(self) -> bool:
        """The agent's bank is its own temporary one."""
        return self._finalizer is not None

    def close(self) -> None:
        """Remove the temporary bank (a bank you gave the agent stays as it is, open)."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def register(self, fn: Callable[..., Any], name: str | None = None) -> Tool:
        """Add `fn` as a tool (`tool_from_function`) in this agent's namespace, and call it when it is chosen.

        A tool of the same name in this namespace is replaced. A tool of that name in another namespace is
        another tool (`namespace/name` is a tool's identity): it stays as it is, beside this one. `executors`
        holds the functions by qualified name (`agent/get_weather`).
        """
        tool = tool_from_function(fn, name, self.namespace)
        self.bank.add([tool], replace_only_in=self.namespace)
        self.executors[tool.qualified_name] = fn
        return tool

    def _choices(self) -> tuple[str | tuple[str, ...] | None, tuple[str, ...], int]:
        """The namespace filter of this agent's steps, the tools of its own namespace it has no function for
        (left out), and how many tools it may choose."""
        store = self.bank.store
        own = [t.qualified_name for t in store.tools(store.ids_where(self.namespace)).values()]
        stale = tuple(sorted(n for n in own if n not in self.executors))
        mine = len(own) - len(stale)
        if self.namespaces == "*":
            return None, stale, len(self.bank) - len(stale)
        if not self.namespaces:
            return self.namespace, stale, mine
        counts = store.namespaces()
        return (self.namespace, *self.namespaces), stale, mine + sum(counts.get(n, 0) for n in self.namespaces)

    def _observe(self, selection: Selection) -> str:
        tool = selection.tool
        if selection.arguments is None:
            return f"error: no valid arguments for {tool.qualified_name!r}: {'; '.join(selection.argument_errors)}"
        try:
            if tool.qualified_name in self.executors:
                return _observation(_call(self.executors[tool.qualified_name], selection.arguments))
            if self.execute is not None:
                return _observation(self.execute(tool, dict(selection.arguments)))
        except Exception as e:  # a tool that raises is an observation, not the end of the run
            return f"error: {type(e).__name__}: {e}"
        return (
            f"error: no function calls tool {tool.qualified_name!r} (namespace {tool.namespace!r}); give the Agent "
            "execute="
        )

    def _ending(self, policy: Policy, query: str, records: list[StepRecord]) -> tuple[str, str]:
        """What the policy writes after the last observation: ("step", "") when it starts another step,
        ("answer", text) for an answer (tags removed), ("no_answer", "") for anything else.

        A step starts with `<think>`, or is a thought closed by `</think>` without the opening tag: training's
        prompts always supply `<think>` (`prompts.prompt`), so the shipped policy writes the thought at once.
        """
        text = prompt(policy.tokenizer, query, history(records, self.bank.get))[: -len("<think>")]
        start = policy.encode(text)[0].tolist()
        decode = lambda ids: policy.tokenizer.decode(ids, skip_special_tokens=False)
        (written,) = policy.generate_ids([start], PEEK_TOKENS, "</answer>")
        head = decode(written)
        if head.lstrip().startswith("<think>"):
            return "step", ""
        if "<answer>" in head:
            if len(written) >= PEEK_TOKENS and written[-1:] != [policy.tokenizer.convert_tokens_to_ids("</answer>")]:
                (more,) = policy.generate_ids([start + written], ANSWER_TOKENS, "</answer>")  # the rest of it
                written = written + more
            answer = decode(written).split("<answer>", 1)[1]
            for tag in [*SPECIAL_TOKENS, *policy.tokenizer.all_special_tokens]:
                answer = answer.split(tag, 1)[0]  # the answer ends at the first tag that is not its text
            answer = answer.strip()
            return ("answer", answer) if answer else ("no_answer", "")
        if "</think>" not in head and len(written) >= PEEK_TOKENS:  # perhaps a thought: write it to its end
            (more,) = policy.generate_ids([start + written], THOUGHT_TOKENS, "</think>")
            head = decode(written + more)
        thought, closed, _ = head.partition("</think>")
        if closed and thought.strip() and not any(tag in thought for tag in SPECIAL_TOKENS):
            return "step", ""
        return "no_answer", ""

    def run(self, query: str) -> Trajectory:
        """Loop select -> call -> observe until the policy answers, `max_steps` steps were taken, the policy
        writes neither a step nor an answer, every tool it may choose was called (a step does not choose a
        tool an earlier step called, as in training), no tool fits the request (at the first step, its cosine
        with the best tool is below `select_tool`'s fitted `min_cosine`), or the next choice is below
        `min_probability`. `Trajectory.stop` says which.

        Raises:
            ValueError: An empty query, or no tool to choose (register some first).
        """
        query = _clean_query(query)
        namespace, stale, available = self._choices()
        if available < 1:
            raise ValueError(
                f"agent has no tools in namespace {self.namespace!r} of bank {self.bank.path}; "
                "register functions with agent.register(fn)"
            )
        policy = default_policy(self.bank) if self.policy is None else self.policy
        trajectory, records = Trajectory(query), []
        trajectory.stop = "max_steps"
        for _ in range(self.max_steps):
            called = tuple(dict.fromkeys(r.tool for r in records))
            if len(called) >= available:
                trajectory.stop = "no_tools"
                break
            step = StepInput(query, history(records, self.bank.get), called + stale, called)
            (selection,) = select_steps(
                policy,
                self.bank,
                [step],
                mode=self.mode,
                arguments=True,
                namespace=namespace,
                min_cosine=None if not records else 0.0,  # whether any tool fits is asked of the request once
            )
            if selection.tool is None:
                trajectory.stop = "no_tool_fits"
                break
            if self.min_probability is not None and selection.probability < self.min_probability:
                trajectory.stop = "unsure"
                break
            observation = self._observe(selection)
            trajectory.steps.append((selection, observation))
            records.append(
                StepRecord(selection.rationale, selection.tool.qualified_name, selection.arguments or {}, observation)
            )
            kind, answer = self._ending(policy, query, records)
            if kind != "step":
                trajectory.stop, trajectory.answer = kind, answer
                break
        return trajectory
