"""Tool calls: parse them, check them against a schema, and score them against gold calls (ToolRL).

A call is `{"name": str, "arguments": dict}`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import referencing.exceptions

from toolbank.tool import schema_validator

R_CORRECT_MIN, R_CORRECT_MAX = -3.0, 3.0


class CallError(ValueError):
    """A call's text does not parse as `{"name": ..., "arguments": {...}}`."""


def parse_arguments(text: str) -> dict[str, Any]:
    """The JSON object at the start of `text` (a model writes it after `"arguments": `); ValueError if none."""
    try:
        obj, _ = json.JSONDecoder().raw_decode(text.strip())
    except RecursionError:
        raise ValueError("arguments nested too deeply to parse") from None
    if not isinstance(obj, dict):
        raise ValueError("arguments are not a JSON object")
    return obj


def parse_call(text: str) -> dict[str, Any]:
    """Parse the JSON inside `<tool_call>...</tool_call>` into `{"name", "arguments"}`; `CallError` if it can't."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise CallError(f"the call is not JSON: {e}") from None
    except RecursionError:
        raise CallError("the call is nested too deeply to parse") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise CallError('the call must be a JSON object with a string "name"')
    arguments = obj.get("arguments", {})
    if not isinstance(arguments, dict):
        raise CallError('"arguments" must be a JSON object')
    return {"name": obj["name"], "arguments": arguments}


def schema_errors(arguments: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Why `arguments` fail `schema` (empty when valid); an empty schema accepts anything.

    Only the schema's own local references (`#/...`) are followed: nothing is fetched from the network or the
    disk. A reference that does not resolve, or nesting too deep to check, is an error in the list.
    """
    try:
        errors = list(schema_validator(schema).iter_errors(arguments))
    except referencing.exceptions.Unresolvable as e:  # jsonschema wraps it, keeping the class
        ref = getattr(e, "ref", "") or str(e)
        return [
            (
                f"(schema): reference {ref[:100]!r} does not resolve within the schema (only local '#/...' "
                "references are followed; nothing is fetched)"
            )
        ]
    except RecursionError:
        return ["(arguments): nested too deeply to check against the schema"]
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(arguments)'}: {e.message}"
        for e in sorted(errors, key=lambda e: list(e.absolute_path))
    ]


def _words(text: Any) -> str:
    return " ".join(re.findall(r"[^\W_]+", str(text).casefold()))


def copied_values(arguments: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The keys of `arguments` whose value only repeats the parameter's own name, title or description (what a
    model writes when it does not know the value), compared word by word, ignoring case and punctuation."""
    properties = (schema or {}).get("properties") or {}
    copied = []
    for key, value in arguments.items():
        spec = properties.get(key)
        if not isinstance(value, str) or not isinstance(spec, dict) or not _words(value):
            continue
        if _words(value) in {_words(key), _words(spec.get("title", "")), _words(spec.get("description", ""))}:
            copied.append(key)
    return copied


def checked_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`arguments` without the values that only copy their parameter's name or description (treated as missing),
    and why the rest fail `schema` (empty when valid)."""
    copied = copied_values(arguments, schema)
    kept = {key: value for key, value in arguments.items() if key not in copied}
    required = set((schema or {}).get("required") or ())
    missing = [key for key in copied if key in required]
    errors = [
        f"{key}: the value only repeats the parameter's name or description (treated as missing)" for key in missing
    ]
    errors += [
        e
        for e in schema_errors(kept, schema)
        if not any(e == f"(arguments): {key!r} is a required property" for key in missing)
    ]
    return kept, errors


def multiset_jaccard(gold: Sequence, predicted: Sequence) -> float:
    """|gold ∩ predicted| / |gold ∪ predicted| over multisets; 1 when equal (both empty included), 0 if one is empty."""
    if list(gold) == list(predicted):
        return 1.0
    if not gold or not predicted:
        return 0.0
    shared = sum((Counter(gold) & Counter(predicted)).values())
    return shared / (len(gold) + len(predicted) - shared)


def toolrl_correctness(gold: Sequence[dict], predicted: Sequence[dict] | None) -> dict[str, float]:
    """ToolRL's R_correct in [-3, 3] (Qian et al. 2025, the semantics of `rlla.py`), with its terms.

    -3 when there is no parsed call (`predicted` is None); +3 for an exact match of the call list;
    otherwise `6 S / S_max - 3` with `S = r_name + sum over gold calls of the best unused same-name predicted
    call's (Jaccard of parameter keys + number of exactly equal values)` and
    `S_max = 1 + sum over gold calls of (1 + number of gold parameters)`; r_name is the multiset Jaccard of
    the tool names.

    Returns:
        {"r_correct", "r_name", "r_keys", "r_values", "s", "s_max"}.
    """
    gold = [{"name": c["name"], "arguments": c.get("arguments") or {}} for c in gold]
    s_max = 1.0 + sum(1.0 + len(c["arguments"]) for c in gold)
    if predicted is None:
        return {"r_correct": R_CORRECT_MIN, "r_name": 0.0, "r_keys": 0.0, "r_values": 0.0, "s": 0.0, "s_max": s_max}
    predicted = [{"name": c["name"], "arguments": c.get("arguments") or {}} for c in predicted]
    r_name = multiset_jaccard([c["name"] for c in gold], [c["name"] for c in predicted])
    if gold == predicted:
        return {
            "r_correct": R_CORRECT_MAX,
            "r_name": 1.0,
            "r_keys": float(len(gold)),
            "r_values": float(sum(len(c["arguments"]) for c in gold)),
            "s": s_max,
            "s_max": s_max,
        }
    used: set[int] = set()
    r_keys = r_values = 0.0
    for g in gold:
        best, best_index, best_terms = 0.0, -1, (0.0, 0.0)
        for i, p in enumerate(predicted):
            if i in used or p["name"] != g["name"]:
                continue
            keys = multiset_jaccard(list(g["arguments"]), list(p["arguments"]))
            values = float(sum(1 for k, v in g["arguments"].items() if k in p["arguments"] and p["arguments"][k] == v))
            if keys + values > best:
                best, best_index, best_terms = keys + values, i, (keys, values)
        if best_index >= 0:
            used.add(best_index)
            r_keys += best_terms[0]
            r_values += best_terms[1]
    s = r_name + r_keys + r_values
    r_correct = (R_CORRECT_MAX - R_CORRECT_MIN) * s / s_max + R_CORRECT_MIN
    return {"r_correct": r_correct, "r_name": r_name, "r_keys": r_keys, "r_values": r_values, "s": s, "s_max": s_max}
