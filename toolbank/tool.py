"""The `Tool` model, its validation, and the file formats tools arrive in.

Formats: plain `{name, description, parameters}`, OpenAI function tools
(`{"type": "function", "function": {...}}`), Anthropic tools (`input_schema`) and MCP tools
(`inputSchema`, or a whole `tools/list` result). A file holds one object, a list, or JSONL.
"""

from __future__ import annotations

import codecs
import dataclasses
import difflib
import functools
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# jsonschema and referencing are imported where a schema is checked: a process that only reads a bank (a search)
# starts 0.1 s sooner without them.

FORMATS = ("plain", "openai", "anthropic", "mcp")
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
MAX_DESCRIPTION_CHARS = 32_768
MAX_DEPTH = 64  # levels of JSON nesting in one tool object: recursive validators crash far deeper down
MAX_NAME_SHOWN = 60  # characters of a (too long) name repeated in a message
SUSPICIOUS_TAG = "suspicious"  # set on tools whose text addresses the model; MCP search leaves them out
SCHEMA_KEY = {"plain": "parameters", "openai": "parameters", "anthropic": "input_schema", "mcp": "inputSchema"}
# The keys each format defines, besides our own namespace and tags; any other key is reported as ignored.
KNOWN_KEYS = {
    "plain": {"name", "description", "parameters"},
    "openai": {"type", "function"},  # the function object: OPENAI_FUNCTION_KEYS
    "anthropic": {"name", "description", "input_schema", "type", "cache_control"},
    "mcp": {
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
        "_meta",
        "icons",
        "execution",
    },
}
OPENAI_FUNCTION_KEYS = {"name", "description", "parameters", "strict"}
OWN_KEYS = {"namespace", "tags"}


def short(name: Any) -> str:
    """`name` for a message: at most `MAX_NAME_SHOWN` characters, then '…'."""
    name = str(name)
    return name if len(name) <= MAX_NAME_SHOWN else name[:MAX_NAME_SHOWN] + "…"


class ToolError(ValueError):
    """A tool, or the file it came from, is invalid. Names the file (and line), the tool and the field."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        tool: str | None = None,
        field: str | None = None,
        line: int | None = None,
    ):
        self.file, self.tool, self.field, self.reason, self.line = file, tool, field, message, line
        place = f"{file}:{line}" if file and line else file or (line and f"line {line}")
        where = [part for part in (place, tool and f"tool {short(tool)!r}", field and f"field {field!r}") if part]
        super().__init__(": ".join(where + [message]))


@dataclass(frozen=True)
class Tool:
    """A callable tool as an agent sees it.

    A tool's identity in a bank is its `qualified_name`, `namespace/name` (`name` without a namespace), so
    two servers' `search` tools coexist in one bank.

    Attributes:
        name: Unique in its namespace; letters, digits, `_`, `-` and `.`, at most 64 characters.
        description: What the tool does, in plain language.
        parameters: JSON Schema of the arguments (`{}` when the tool takes none or is undocumented).
        namespace: Optional group, e.g. the MCP server the tool came from (the same characters as a name).
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
    def trusted(
        cls, name: str, description: str, parameters: dict[str, Any], namespace: str | None, tags: tuple[str, ...]
    ) -> Tool:
        """A tool read back from a bank: it was validated when added, so validation (ms a schema) is skipped."""
        tool = object.__new__(cls)
        for key, value in (
            ("name", name),
            ("description", description),
            ("parameters", parameters),
            ("namespace", namespace),
            ("tags", tags),
        ):
            object.__setattr__(tool, key, value)
        return tool

    @property
    def qualified_name(self) -> str:
        """`namespace/name`, or `name` when the tool has no namespace: its identity in a bank, and the name the
        policy and MCP clients see."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def api_name(self) -> str:
        """The qualified name with `/` written `__` (`github__search`): the function name in the `openai` and
        `anthropic` formats, whose APIs allow only letters, digits, `_` and `-`. `ToolBank.get` resolves it."""
        return self.qualified_name.replace("/", "__")

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
        """This tool in one of `FORMATS`; `plain` also carries namespace and tags. `openai` and `anthropic` name
        the function by `api_name` (`namespace__name`); `plain` and `mcp` write the bare `name`."""
        if fmt == "openai":
            return {
                "type": "function",
                "function": {"name": self.api_name, "description": self.description, "parameters": self.parameters},
            }
        if fmt not in FORMATS:
            raise ToolError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
        name = self.api_name if fmt == "anthropic" else self.name
        out: dict[str, Any] = {"name": name, "description": self.description, SCHEMA_KEY[fmt]: self.parameters}
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
        raise ToolError(f"{short(name)!r} is invalid; expected 1-64 letters, digits, '_', '-' or '.'", field="name")
    if not isinstance(tool.description, str):
        raise ToolError(f"expected a string, got {type(tool.description).__name__}", tool=name, field="description")
    if len(tool.description) > MAX_DESCRIPTION_CHARS:
        raise ToolError(
            f"is {len(tool.description):,} characters; at most {MAX_DESCRIPTION_CHARS:,} allowed",
            tool=name,
            field="description",
        )
    if problem := _unicode_problem(tool.description):
        raise ToolError(problem, tool=name, field="description")
    if not isinstance(tool.parameters, dict):
        raise ToolError(
            f"expected a JSON Schema object, got {type(tool.parameters).__name__}", tool=name, field="parameters"
        )
    problem = json_problem(tool.parameters, MAX_DEPTH - 1)
    if problem is None:
        try:
            canonical = json.dumps(tool.parameters, sort_keys=True, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as e:
            problem = f"not JSON-serialisable: {e}"
        else:
            problem = _unicode_problem(canonical) or _schema_problem(canonical)
    if problem:
        raise ToolError(problem, tool=name, field="parameters")
    if tool.namespace is not None and not (isinstance(tool.namespace, str) and NAME_PATTERN.fullmatch(tool.namespace)):
        raise ToolError(
            f"{short(tool.namespace)!r} is invalid; expected 1-64 letters, digits, '_', '-' or '.'",
            tool=name,
            field="namespace",
        )
    if not all(isinstance(t, str) and t and not _unicode_problem(t) for t in tool.tags):
        raise ToolError("expected a list of non-empty strings", tool=name, field="tags")


def _unicode_problem(text: str) -> str | None:
    """Why `text` cannot be stored as UTF-8 (a lone surrogate, which JSON's \\ud800 escapes allow), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"holds an unpaired surrogate {text[e.start]!r}; expected valid Unicode text"
    return None


def json_problem(obj: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """Why `obj` is not plain JSON at most `max_depth` levels deep (a key that is not a string, nesting too
    deep, a cycle), or None. Iterative, so depth cannot crash it."""
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
            if not all(isinstance(k, str) for k in node):
                return f"has a key that is not a string ({next(k for k in node if not isinstance(k, str))!r})"
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth > max_depth:
            return (
                f"is nested more than {max_depth} levels deep; at most {MAX_DEPTH} levels of JSON nesting are "
                "allowed in a tool"
            )
        stack.extend((child, depth + 1) for child in children)
    return None


def _refuse_retrieval(uri: str):
    import referencing.exceptions

    raise referencing.exceptions.NoSuchResource(ref=uri)


@functools.cache
def local_refs():
    """The one registry every validator of a tool schema is built with: only the JSON Schema metaschemas
    (jsonschema adds them) and the schema's own local references; nothing is ever fetched from the network or
    the disk. Also `LOCAL_REFS`."""
    import referencing

    return referencing.Registry(retrieve=_refuse_retrieval)


def __getattr__(name: str):
    if name == "LOCAL_REFS":  # built on first use, with the import of referencing
        return local_refs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
_DATA_KEYS = {"enum", "const", "default", "examples", "example"}  # their values are data, not schemas
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def validator_class(schema: Any) -> type:
    """The jsonschema validator class for `schema` (its `$schema`, else the latest draft; no warning)."""
    import jsonschema

    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def schema_validator(schema: Any) -> Any:
    """A jsonschema validator for `schema` that resolves only local references (see `local_refs`)."""
    return validator_class(schema)(schema, registry=local_refs())


@functools.lru_cache(maxsize=4096)
def _schema_problem(schema_json: str) -> str | None:
    """Why a schema (as canonical JSON) is not a valid, self-contained JSON Schema, or None. Cached: a check
    costs ~2 ms."""
    schema = json.loads(schema_json)
    if not isinstance(schema.get("$schema", ""), str):
        return "not a valid JSON Schema at $schema: expected a string"
    cls = validator_class(schema)
    meta = validator_class(cls.META_SCHEMA)
    try:
        checker = meta(cls.META_SCHEMA, registry=local_refs(), format_checker=meta.FORMAT_CHECKER)
        error = next(iter(checker.iter_errors(schema)), None)
    except RecursionError:
        return f"nested too deeply to check; at most {MAX_DEPTH} levels of JSON nesting are allowed in a tool"
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return f"not a valid JSON Schema at {path}: {error.message}"
    if not any(f'"{key}"' in schema_json for key in _REF_KEYS):
        return None
    return _ref_problem(schema, cls)


def _ref_problem(schema: dict, cls: type) -> str | None:
    """Why a reference in `schema` is not allowed (not local: `#...`) or does not resolve, or None."""
    import referencing.exceptions
    import referencing.jsonschema

    specification = referencing.jsonschema.specification_with(
        cls.ID_OF(cls.META_SCHEMA) or "", default=referencing.jsonschema.DRAFT202012
    )
    root = local_refs().resolver_with_root(specification.create_resource(schema))
    stack: list[tuple[Any, str, bool, Any]] = [(schema, "parameters", True, root)]  # node, path, is a schema?
    while stack:
        node, path, is_schema, resolver = stack.pop()
        if isinstance(node, list):
            stack.extend((item, f"{path}[{i}]", True, resolver) for i, item in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        if not is_schema:  # a map of names to schemas (properties, $defs, ...)
            stack.extend((value, _json_path(path, key), True, resolver) for key, value in node.items())
            continue
        if node is not schema and isinstance(specification.id_of(node), str):
            resolver = resolver.in_subresource(specification.create_resource(node))
        for key, value in node.items():
            if key in _REF_KEYS and isinstance(value, str):
                where = _json_path(path, key)
                if not value.startswith("#"):
                    return (
                        f"{where}: remote reference {short(value)!r} not allowed; only local '#/...' "
                        "references (into this schema)"
                    )
                try:
                    resolver.lookup(value)
                except referencing.exceptions.Unresolvable:
                    return f"{where}: local reference {short(value)!r} does not resolve within this schema"
            elif key not in _DATA_KEYS:
                stack.append((value, _json_path(path, key), key not in _SCHEMA_MAPS, resolver))
    return None


def _json_path(path: str, key: str) -> str:
    return f"{path}.{key}" if _IDENTIFIER.fullmatch(key) else f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def detect_format(obj: dict[str, Any]) -> str:
    """Guess the format of one tool object from its keys."""
    if obj.get("type") == "function" and isinstance(obj.get("function"), dict):
        return "openai"
    if "input_schema" in obj:
        return "anthropic"
    if "inputSchema" in obj:
        return "mcp"
    return "plain"


def from_dict(
    obj: Any, fmt: str | None = None, *, namespace: str | None = None, notes: list[str] | None = None
) -> Tool:
    """Build a `Tool` from one object in `fmt` (detected when None). Raises `ToolError`.

    A key the format does not define is ignored, and named in `notes` when given; one that holds a JSON Schema
    the format would not read (`inputSchema` read as plain, a misspelt `params`) is an error, since the tool
    would silently lose its schema.
    """
    tool, ignored = _from_dict(obj, fmt, namespace)
    if notes is not None:
        notes.extend(f"tool {short(tool.qualified_name)!r}: {_ignored_note(key)}" for key in ignored)
    return tool


def _from_dict(obj: Any, fmt: str | None, namespace: str | None) -> tuple[Tool, list[str]]:
    """`from_dict`, also returning the keys it ignored."""
    if not isinstance(obj, dict):
        raise ToolError(f"expected a JSON object for a tool, got {type(obj).__name__}")
    name = obj.get("name") if isinstance(obj.get("name"), str) else None
    if problem := json_problem(obj):
        raise ToolError(problem, tool=name)
    if fmt is None:
        fmt = detect_format(obj)
    if fmt not in FORMATS:
        raise ToolError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    ignored = [k for k in obj if k not in KNOWN_KEYS[fmt] | OWN_KEYS]
    tags, tool_namespace = obj.get("tags", ()), obj.get("namespace")
    if fmt == "openai":
        if obj.get("type") != "function" or not isinstance(obj.get("function"), dict):
            raise ToolError(
                'expected {"type": "function", "function": {...}} for an OpenAI tool', tool=name, field="function"
            )
        obj = obj["function"]
        name = obj.get("name") if isinstance(obj.get("name"), str) else None
        ignored += [f"function.{k}" for k in obj if k not in OPENAI_FUNCTION_KEYS]
    schema_key = SCHEMA_KEY[fmt]
    for key in ("parameters", "input_schema", "inputSchema"):
        if key != schema_key and key in obj:
            guess = {"parameters": "a plain or openai", "input_schema": "an anthropic", "inputSchema": "an mcp"}[key]
            raise ToolError(
                f"the {fmt} format reads the schema from {schema_key!r}, so this schema would be "
                f"dropped; {key!r} is where {guess} tool keeps it: read the tool in that format (or "
                "let the format be detected)",
                tool=name,
                field=key,
            )
    if schema_key not in obj:
        for key in obj:
            if key not in OPENAI_FUNCTION_KEYS | KNOWN_KEYS[fmt] | OWN_KEYS and _looks_like_schema(obj[key]):
                raise ToolError(
                    f"unknown key {short(key)!r} holds what looks like the tool's JSON Schema, which "
                    f"would be dropped: the {fmt} format reads it from {schema_key!r}",
                    tool=name,
                    field=short(key),
                )
    if fmt in ("anthropic", "mcp") and schema_key not in obj:
        raise ToolError(f"missing; a {fmt} tool carries its schema in {schema_key!r}", tool=name, field=schema_key)
    if not isinstance(tags, (list, tuple)):
        raise ToolError("expected a list of strings", tool=name, field="tags")
    parameters = obj.get(schema_key)
    try:
        tool = Tool(
            name=obj.get("name", ""),
            description=obj.get("description") or "",
            parameters={} if parameters is None else parameters,
            namespace=namespace or tool_namespace,
            tags=tuple(tags),
        )
    except ToolError as e:
        raise ToolError(e.reason, tool=e.tool or name, field=e.field) from None
    return tool, ignored


def _looks_like_schema(value: Any) -> bool:
    """Whether `value` looks like an object's JSON Schema (`{"type": "object", ...}` or with `properties`)."""
    return isinstance(value, dict) and (value.get("type") == "object" or isinstance(value.get("properties"), dict))


def _ignored_note(key: str) -> str:
    """'unknown key ... ignored', with the nearest known key when it looks misspelt."""
    known = sorted(set().union(*KNOWN_KEYS.values(), OWN_KEYS, OPENAI_FUNCTION_KEYS))
    close = difflib.get_close_matches(key.removeprefix("function."), known, n=1, cutoff=0.7)
    return f"unknown key {short(key)!r} ignored" + (f" (did you mean {close[0]!r}?)" if close else "")


# Phrases by which a tool's text addresses the model to get itself chosen (tool poisoning), not the user.
_MODEL_ADDRESSED = re.compile(
    "|".join(
        [
            r"\balways\s+(?:select|use|call|choose|pick|prefer|invoke|run)\s+(?:this|me)(?:\s+tool)?\b",
            r"\byou\s+must\s+(?:always\s+)?(?:select|use|call|choose|pick|prefer|invoke|run)\s+(?:this|me|it)(?:\s+tool)?\b",
            r"\byou\s+must\s+(?:always\s+)?(?:ignore|disregard)\b",
            (
                r"\b(?:select|use|call|choose|pick|prefer|invoke)\s+(?:this|me)\s+(?:tool\s+)?(?:for|on|with|in)\s+"
                r"(?:every|all|any|each)\s+(?:requests?|quer(?:y|ies)|tasks?|questions?|prompts?|messages?|cases?)\b"
                r"(?!\s+(?:about|on|related|regarding|involving|concerning|that|which|for|with|in|where|when|of|to)\b)"
            ),
            (
                r"\b(?:select|use|call|choose|pick|prefer)\s+(?:this|me)\s+(?:tool\s+)?(?:instead\s+of|before|over)\s+"
                r"(?:any|all|every)\s+(?:other\s+)?tools?\b"
            ),
            (
                r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?(?:other|previous|"
                r"prior|above|earlier|system|original)\s+(?:tools?|instructions?|prompts?|messages?|rules?)\b"
            ),
            (
                r"\b(?:do\s+not|don't|never)\s+(?:use|call|select|choose|consider|pick)\s+(?:any\s+)?(?:other|another|"
                r"different|alternative)\s+tools?\b"
            ),
            (
                r"\b(?:this|it)\s+is\s+the\s+(?:only|best|correct|right)\s+tool\s+(?:for|to\s+use\s+for)\s+"
                r"(?:every|all|any|each)\b"
            ),
            r"\bregardless\s+of\s+(?:the\s+)?(?:user'?s?\s+)?(?:request|query|task|question|prompt)\b",
            r"\bas\s+an\s+ai\s+(?:language\s+)?model\b",
            r"<\s*important\s*>",
            r"\b(?:do\s+not|don't|never)\s+(?:tell|inform)\s+the\s+user\b",
        ]
    ),
    re.IGNORECASE,
)


def model_addressed_phrase(tool: Tool) -> str | None:
    """The first phrase in `tool`'s description or its schema's descriptions and titles that addresses the
    model (e.g. "always select this tool", "ignore previous instructions"), or None."""
    texts, stack = [tool.description], [tool.parameters]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            texts += [v for k, v in node.items() if k in ("description", "title") and isinstance(v, str)]
            stack += [v for v in node.values() if isinstance(v, (dict, list))]
        elif isinstance(node, list):
            stack += [v for v in node if isinstance(v, (dict, list))]
    for text in texts:
        if match := _MODEL_ADDRESSED.search(text):
            return " ".join(match.group(0).split())
    return None


def flag_suspicious(tool: Tool) -> tuple[Tool, str | None]:
    """`tool` with the `SUSPICIOUS_TAG` added when its text addresses the model, and the phrase (else None)."""
    phrase = model_addressed_phrase(tool)
    if phrase is None or SUSPICIOUS_TAG in tool.tags:
        return tool, phrase
    return dataclasses.replace(tool, tags=(*tool.tags, SUSPICIOUS_TAG)), phrase


class _NotJSON(ValueError):
    """NaN, Infinity or a number out of float range: Python's json reads them, no other JSON parser does."""


def _reject_constant(name: str):
    raise _NotJSON(f"{name} is not a JSON value (only finite numbers are)")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _NotJSON(f"number {short(text)} is out of range")
    return value


def _loads(text: str, one_line: bool = False) -> Any:
    """`json.loads` of strict JSON; `ToolError` for a syntax error, NaN/Infinity or nesting past the parser.
    `one_line`: `text` is a line of a JSONL file, so an error names its column only."""
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        where = f"column {e.colno}" if one_line else f"line {e.lineno} column {e.colno}"
        raise ToolError(f"invalid JSON: {e.msg} at {where}") from None
    except RecursionError:
        raise ToolError(
            f"nested too deeply to parse; at most {MAX_DEPTH} levels of JSON nesting are allowed in a tool"
        ) from None
    except ValueError as e:  # _NotJSON, an integer of over 4,300 digits
        raise ToolError(f"invalid JSON: {e}") from None


def parse_text(text: str) -> list[Any]:
    """JSON (one object, a list, an MCP `tools/list` result) or JSONL -> list of raw tool objects.
    Raises `ToolError` (with `line` for JSONL) for the first part that does not parse."""
    objects = []
    for line, obj in _entries(text):
        if isinstance(obj, ToolError):
            raise ToolError(obj.reason, line=line)
        objects.append(obj)
    return objects


def _entries(text: str) -> list[tuple[int | None, Any]]:
    """(line number for JSONL else None, tool object or the `ToolError` of a line that does not parse)."""
    try:
        data = _loads(text)
    except ToolError as whole_error:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        entries: list[tuple[int | None, Any]] = []
        for n, line in lines:
            try:
                entries.append((n, _loads(line, one_line=True)))
            except ToolError as e:
                entries.append((n, e))
        objects = sum(isinstance(obj, dict) for _, obj in entries)
        if len(lines) < 2 or text.lstrip().startswith("[") or 2 * objects < len(lines):
            raise whole_error from None  # not JSONL (most lines are not objects): the whole file's error
        return entries
    if isinstance(data, dict):
        result = data.get("result") if isinstance(data.get("result"), dict) else data  # a JSON-RPC response
        if isinstance(result.get("tools"), list):
            return [(None, obj) for obj in result["tools"]]
        return [(None, data)]
    if isinstance(data, list):
        return [(None, obj) for obj in data]
    raise ToolError(f"expected a JSON object or list of tools, got {type(data).__name__}")


_BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
]  # UTF-32 LE starts like UTF-16 LE


def read_text(path: str | Path) -> str:
    """Read a tool file: UTF-8, or UTF-16/32 with a byte-order mark. Refuses empty, binary and other files with
    a clear error."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ToolError(f"cannot read: {e.strerror}", file=str(path)) from None
    codec = next((codec for bom, codec in _BOMS if raw.startswith(bom)), "utf-8")
    if codec != "utf-8":
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError as e:
            raise ToolError(
                f"starts with a {codec.upper().removesuffix('-SIG')} byte-order mark but is not "
                f"{codec.upper().removesuffix('-SIG')} text (bad bytes at offset {e.start}); convert "
                "it to UTF-8",
                file=str(path),
            ) from None
        if not text.strip():
            raise ToolError("is empty; expected JSON or JSONL tools", file=str(path))
        return text
    if not raw.strip():
        raise ToolError("is empty; expected JSON or JSONL tools", file=str(path))
    if b"\x00" in raw:
        even, odd = raw[0::2].count(0), raw[1::2].count(0)  # UTF-16 of ASCII text: every other byte is NUL
        if len(raw) % 2 == 0 and min(even, odd) == 0 and max(even, odd) * 2 > len(raw) // 2:
            raise ToolError("looks like UTF-16 text without a byte-order mark; convert it to UTF-8", file=str(path))
        raise ToolError("is a binary file; expected JSON or JSONL text", file=str(path))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolError(f"is not UTF-8 text (bad byte at offset {e.start})", file=str(path)) from None


def load_file(
    path: str | Path,
    fmt: str | None = None,
    *,
    namespace: str | None = None,
    skip_invalid: bool = False,
    notes: list[str] | None = None,
) -> tuple[list[Tool], list[ToolError]]:
    """Read every tool in a file.

    Args:
        path: A JSON or JSONL file.
        fmt: One of `FORMATS`, or None to detect each object's format.
        namespace: Put every tool in this namespace.
        skip_invalid: Collect the errors (an invalid tool, a JSONL line or the whole file not parsing) instead
            of raising the first.
        notes: When given, gets a line per key the tools' format does not define (ignored).

    Returns:
        The valid tools and, with `skip_invalid`, the errors, each naming the file (and line, for JSONL).

    Raises:
        ToolError: The file is unreadable or not JSON, or a tool is invalid (without `skip_invalid`),
            or a name repeats within the file; `fmt` is unknown.
    """
    if fmt is not None and fmt not in FORMATS:
        raise ToolError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", file=str(path))
    try:
        entries = _entries(read_text(path))
    except ToolError as e:
        error = ToolError(e.reason, file=str(path))
        if not skip_invalid:
            raise error from None
        return [], [error]
    return _from_entries(entries, str(path), fmt, namespace, skip_invalid, notes)


def from_dicts(
    objects: Iterable[Any],
    source: str,
    fmt: str | None = None,
    *,
    namespace: str | None = None,
    skip_invalid: bool = False,
    notes: list[str] | None = None,
) -> tuple[list[Tool], list[ToolError]]:
    """Tools from tool objects read from `source` (a file, a server: named in errors); see `load_file`."""
    return _from_entries([(None, obj) for obj in objects], source, fmt, namespace, skip_invalid, notes)


def _from_entries(
    entries: list[tuple[int | None, Any]],
    source: str,
    fmt: str | None,
    namespace: str | None,
    skip_invalid: bool,
    notes: list[str] | None,
) -> tuple[list[Tool], list[ToolError]]:
    tools, errors, seen, ignored = [], [], {}, {}
    for i, (line, obj) in enumerate(entries, 1):
        try:
            if isinstance(obj, ToolError):
                raise obj
            tool, keys = _from_dict(obj, fmt, namespace)
            if tool.qualified_name in seen:
                first = seen[tool.qualified_name]
                raise ToolError(
                    f"appears twice in {source}"
                    + (f" (first on line {first})" if first else "")
                    + "; names must be unique in a namespace",
                    tool=tool.qualified_name,
                    field="name",
                )
            seen[tool.qualified_name] = line
            tools.append(tool)
            for key in keys:
                ignored.setdefault(key, []).append(tool.qualified_name)
        except ToolError as e:
            error = ToolError(
                e.reason, file=source, line=line, tool=e.tool or (None if line else f"#{i}"), field=e.field
            )
            if not skip_invalid:
                raise error from None
            errors.append(error)
    if notes is not None:
        for key, names in ignored.items():
            which = (
                f"tool {short(names[0])!r}"
                if len(names) == 1
                else f"{len(names)} tools ({', '.join(repr(short(n)) for n in names[:3])}{', …' if len(names) > 3 else ''})"
            )
            notes.append(f"{source}: {_ignored_note(key)} in {which}")
    return tools, errors


def dump(tools: Iterable[Tool], fmt: str = "plain", *, jsonl: bool = False) -> str:
    """Serialise tools in `fmt` as a JSON list, or JSONL with `jsonl`."""
    dicts = [t.to_dict(fmt) for t in tools]
    if jsonl:
        return "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dicts)
    if fmt == "mcp":
        return json.dumps({"tools": dicts}, indent=2, ensure_ascii=False) + "\n"
    return json.dumps(dicts, indent=2, ensure_ascii=False) + "\n"
