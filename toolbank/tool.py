"""The `Tool` model, its validation, and the file formats tools arrive in.

Formats: plain `{name, description, parameters}`, OpenAI function tools
(`{"type": "function", "function": {...}}`), Anthropic tools (`input_schema`) and MCP tools
(`inputSchema`, or a whole `tools/list` result). A file holds one object, a list, or JSONL.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import jsonschema

FORMATS = ("plain", "openai", "anthropic", "mcp")
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
MAX_DESCRIPTION_CHARS = 32_768
SCHEMA_KEY = {"plain": "parameters", "openai": "parameters", "anthropic": "input_schema", "mcp": "inputSchema"}


class ToolError(ValueError):
    """A tool, or the file it came from, is invalid. Names the file, the tool and the field."""

    def __init__(self, message: str, *, file: str | None = None, tool: str | None = None, field: str | None = None):
        self.file, self.tool, self.field, self.reason = file, tool, field, message
        where = [part for part in (file, tool and f"tool {tool!r}", field and f"field {field!r}") if part]
        super().__init__(": ".join(where + [message]))


@dataclass(frozen=True)
class Tool:
    """A callable tool as an agent sees it.

    Attributes:
        name: Unique in a bank; letters, digits, `_`, `-` and `.`, at most 64 characters.
        description: What the tool does, in plain language.
        parameters: JSON Schema of the arguments (`{}` when the tool takes none or is undocumented).
        namespace: Optional group, e.g. the MCP server the tool came from.
        tags: Optional labels for filtering.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    namespace: str | None = None
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        validate(self)

    @classmethod
    def trusted(cls, name: str, description: str, parameters: dict[str, Any], namespace: str | None,
                tags: tuple[str, ...]) -> "Tool":
        """A tool read back from a bank: it was validated when added, so validation (ms a schema) is skipped."""
        tool = object.__new__(cls)
        for key, value in (("name", name), ("description", description), ("parameters", parameters),
                           ("namespace", namespace), ("tags", tags)):
            object.__setattr__(tool, key, value)
        return tool

    @property
    def text(self) -> str:
        """The text that is embedded and BM25-indexed: `name: description` plus one line per parameter."""
        lines = [f"{self.name}: {self.description}"]
        properties = self.parameters.get("properties") or {}
        for pname, pschema in properties.items():
            pschema = pschema if isinstance(pschema, dict) else {}
            ptype = pschema.get("type", "any")
            ptype = "|".join(ptype) if isinstance(ptype, list) else str(ptype)
            lines.append(f"{pname} ({ptype}): {pschema.get('description', '')}".rstrip(": "))
        return "\n".join(lines)

    @property
    def text_hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def to_dict(self, fmt: str = "plain") -> dict[str, Any]:
        """This tool in one of `FORMATS`; `plain` also carries namespace and tags."""
        if fmt == "openai":
            return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                     "parameters": self.parameters}}
        if fmt not in FORMATS:
            raise ToolError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
        out: dict[str, Any] = {"name": self.name, "description": self.description, SCHEMA_KEY[fmt]: self.parameters}
        if fmt == "plain":
            if self.namespace:
                out["namespace"] = self.namespace
            if self.tags:
                out["tags"] = list(self.tags)
        return out


def validate(tool: Tool) -> None:
    """Raise `ToolError` naming the field when `tool` is invalid."""
    name = tool.name
    if not isinstance(name, str) or not name:
        raise ToolError("is missing or empty; expected a non-empty string", field="name")
    if not NAME_PATTERN.fullmatch(name):
        raise ToolError(f"{name[:80]!r} is invalid; expected 1-64 letters, digits, '_', '-' or '.'", field="name")
    if not isinstance(tool.description, str):
        raise ToolError(f"expected a string, got {type(tool.description).__name__}", tool=name, field="description")
    if len(tool.description) > MAX_DESCRIPTION_CHARS:
        raise ToolError(f"is {len(tool.description):,} characters; at most {MAX_DESCRIPTION_CHARS:,} allowed",
                        tool=name, field="description")
    if not isinstance(tool.parameters, dict):
        raise ToolError(f"expected a JSON Schema object, got {type(tool.parameters).__name__}",
                        tool=name, field="parameters")
    try:
        problem = _schema_problem(json.dumps(tool.parameters, sort_keys=True))
    except (TypeError, ValueError) as e:
        problem = f"not JSON-serialisable: {e}"
    if problem:
        raise ToolError(problem, tool=name, field="parameters")
    if tool.namespace is not None and not (isinstance(tool.namespace, str) and NAME_PATTERN.fullmatch(tool.namespace)):
        raise ToolError(f"{tool.namespace!r} is invalid; expected 1-64 letters, digits, '_', '-' or '.'",
                        tool=name, field="namespace")
    if not all(isinstance(t, str) and t for t in tool.tags):
        raise ToolError("expected a list of non-empty strings", tool=name, field="tags")


@functools.lru_cache(maxsize=4096)
def _schema_problem(schema_json: str) -> str | None:
    """Why a schema (as canonical JSON) is not valid JSON Schema, or None. Cached: a check costs ~2 ms."""
    schema = json.loads(schema_json)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as e:
        path = "/".join(str(p) for p in e.absolute_path) or "(root)"
        return f"not a valid JSON Schema at {path}: {e.message}"
    return None


def detect_format(obj: dict[str, Any]) -> str:
    """Guess the format of one tool object from its keys."""
    if obj.get("type") == "function" and isinstance(obj.get("function"), dict):
        return "openai"
    if "input_schema" in obj:
        return "anthropic"
    if "inputSchema" in obj:
        return "mcp"
    return "plain"


def from_dict(obj: Any, fmt: str | None = None, *, namespace: str | None = None) -> Tool:
    """Build a `Tool` from one object in `fmt` (detected when None). Raises `ToolError`."""
    if not isinstance(obj, dict):
        raise ToolError(f"expected a JSON object for a tool, got {type(obj).__name__}")
    if fmt is None:
        fmt = detect_format(obj)
    if fmt not in FORMATS:
        raise ToolError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    name = obj.get("name") if isinstance(obj.get("name"), str) else None
    if fmt == "openai":
        if obj.get("type") != "function" or not isinstance(obj.get("function"), dict):
            raise ToolError('expected {"type": "function", "function": {...}} for an OpenAI tool', tool=name,
                            field="function")
        obj = obj["function"]
        name = obj.get("name") if isinstance(obj.get("name"), str) else None
    schema_key = SCHEMA_KEY[fmt]
    if fmt in ("anthropic", "mcp") and schema_key not in obj:
        raise ToolError(f"missing; a {fmt} tool carries its schema in {schema_key!r}", tool=name, field=schema_key)
    tags = obj.get("tags", ())
    if not isinstance(tags, (list, tuple)):
        raise ToolError("expected a list of strings", tool=name, field="tags")
    parameters = obj.get(schema_key)
    try:
        return Tool(
            name=obj.get("name", ""),
            description=obj.get("description") or "",
            parameters={} if parameters is None else parameters,
            namespace=namespace or obj.get("namespace"),
            tags=tuple(tags),
        )
    except ToolError as e:
        raise ToolError(e.reason, tool=e.tool or name, field=e.field) from None


def parse_text(text: str) -> list[Any]:
    """JSON (one object, a list, an MCP `tools/list` result) or JSONL -> list of raw tool objects."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as whole_error:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2 or not _is_json(lines[0][1]):  # not JSONL: report the whole-file error
            raise ToolError(f"invalid JSON: {whole_error}") from None
        data = []
        for n, line in lines:
            try:
                data.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ToolError(f"invalid JSON on line {n}: {e}") from None
        return data
    if isinstance(data, dict):
        result = data.get("result") if isinstance(data.get("result"), dict) else data  # a JSON-RPC response
        if isinstance(result.get("tools"), list):
            return result["tools"]
        return [data]
    if isinstance(data, list):
        return data
    raise ToolError(f"expected a JSON object or list of tools, got {type(data).__name__}")


def _is_json(text: str) -> bool:
    """Whether `text` parses as JSON."""
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def read_text(path: str | Path) -> str:
    """Read a tool file as UTF-8, refusing empty, binary and non-UTF-8 files with a clear error."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ToolError(f"cannot read: {e.strerror}", file=str(path)) from None
    if not raw.strip():
        raise ToolError("is empty; expected JSON or JSONL tools", file=str(path))
    if b"\x00" in raw:
        raise ToolError("is a binary file; expected JSON or JSONL text", file=str(path))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ToolError(f"is not UTF-8 text (bad byte at offset {e.start})", file=str(path)) from None


def load_file(path: str | Path, fmt: str | None = None, *, namespace: str | None = None,
              skip_invalid: bool = False) -> tuple[list[Tool], list[ToolError]]:
    """Read every tool in a file.

    Args:
        path: A JSON or JSONL file.
        fmt: One of `FORMATS`, or None to detect each object's format.
        namespace: Put every tool in this namespace.
        skip_invalid: Collect invalid tools as errors instead of raising on the first.

    Returns:
        The valid tools and, with `skip_invalid`, the errors of the invalid ones.

    Raises:
        ToolError: The file is unreadable or not JSON, or a tool is invalid (without `skip_invalid`),
            or a name repeats within the file.
    """
    if fmt is not None and fmt not in FORMATS:
        raise ToolError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", file=str(path))
    try:
        objects = parse_text(read_text(path))
    except ToolError as e:
        raise ToolError(e.reason, file=str(path)) from None
    return from_dicts(objects, str(path), fmt, namespace=namespace, skip_invalid=skip_invalid)


def from_dicts(objects: Iterable[Any], source: str, fmt: str | None = None, *, namespace: str | None = None,
               skip_invalid: bool = False) -> tuple[list[Tool], list[ToolError]]:
    """Tools from tool objects read from `source` (a file, a server: named in errors); see `load_file`."""
    tools, errors, seen = [], [], set()
    for i, obj in enumerate(objects, 1):
        try:
            tool = from_dict(obj, fmt, namespace=namespace)
            if tool.name in seen:
                raise ToolError(f"appears twice in {source}; names must be unique", tool=tool.name, field="name")
            seen.add(tool.name)
            tools.append(tool)
        except ToolError as e:
            error = ToolError(e.reason, file=source, tool=e.tool or f"#{i}", field=e.field)
            if not skip_invalid:
                raise error from None
            errors.append(error)
    return tools, errors


def dump(tools: Iterable[Tool], fmt: str = "plain", *, jsonl: bool = False) -> str:
    """Serialise tools in `fmt` as a JSON list, or JSONL with `jsonl`."""
    dicts = [t.to_dict(fmt) for t in tools]
    if jsonl:
        return "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dicts)
    if fmt == "mcp":
        return json.dumps({"tools": dicts}, indent=2, ensure_ascii=False) + "\n"
    return json.dumps(dicts, indent=2, ensure_ascii=False) + "\n"
