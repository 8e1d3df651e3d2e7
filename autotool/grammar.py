"""Arguments by schema-constrained decoding: a grammar built from the tool's JSON Schema masks every token the
schema could not continue, so a call the policy writes parses and validates (llguidance).

Why llguidance: it computes a token mask from a JSON Schema in tens of microseconds on a CPU, from the
Hugging Face tokenizer the policy already has, without compiling anything at run time or loading more
models; it reaches transformers through a plain `LogitsProcessor`. (xgrammar pulls triton and a TVM runtime
into the install; outlines and lm-format-enforcer build their indexes in Python, slower per schema.)

The grammar is what the policy writes after `{"name": "NAME", "arguments":` (`prompts.call_prefix`): an
optional space, the arguments object, the call's closing `}`, then the stop token `</tool_call>`. The JSON is
written the way the training text is (`json.dumps`: `", "` and `": "`, no other whitespace), and objects with
listed properties take no others: a key not in the schema cannot be written.
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache

import numpy as np
import torch

# How the JSON is laid out (llguidance's JSON compile options, given in the schema's "x-guidance").
LAYOUT = {"whitespace_flexible": False, "key_separator": ": ", "item_separator": ", "}
RETRY_ITEMS = 2  # the most items an array holds in a retry that ran out of tokens (`tightened`)


def closed(schema: dict) -> dict:
    """A copy of `schema` in which every object with `properties` and no `additionalProperties` allows no
    others (JSON Schema's default allows any key; a tool's caller does not)."""

    def close(node):
        if isinstance(node, dict):
            node = {key: close(value) for key, value in node.items()}
            if isinstance(node.get("properties"), dict) and "additionalProperties" not in node:
                node["additionalProperties"] = False
            return node
        if isinstance(node, list):
            return [close(value) for value in node]
        return node

    return close(copy.deepcopy(schema))


def _fold(char: str) -> str:
    """The one-character form under which upper and lower case meet (`I`, `i` and `ı` under `i`)."""
    upper = char.upper()
    return upper.lower() if len(upper) == 1 and len(upper.lower()) == 1 else char


def _forms(char: str) -> set[str]:
    return {char, _fold(char)} | {f for f in (char.lower(), char.upper()) if len(f) == 1}


WORD, SEPARATOR = r"[\p{L}\p{N}]", r"[^\p{L}\p{N}]"  # what `calls.copied_values` reads as words, and between them


def _letters(chars: set[str]) -> str:
    """A regex class of `chars` (llguidance reads Rust regex syntax; `\\x{..}` escapes every character that is
    not a letter or digit)."""
    return "[" + "".join(c if c.isalnum() else f"\\x{{{ord(c):X}}}" for c in sorted(chars)) + "]"


def _other_word(chars: set[str]) -> str:
    """A class of the letters and digits not in `chars`."""
    return f"[\\p{{L}}\\p{{N}}&&[^{_letters(chars)[1:-1]}]]" if chars else WORD


def excluding(texts, prefix: int = 16) -> str:
    """An anchored regex for every string that is not a copy of one of `texts`: not the same words (letters
    and digits, case ignored) with anything else around and between them, as `calls.copied_values` counts a
    copy; for a text whose words run past `prefix` characters, not anything that begins with those (a value
    that begins by copying a description).

    Flat, one alternative per node of a trie over the texts' words (llguidance nests at most 250 groups): the
    path to the node, then a way to leave the copies there (stop where no text ends, a letter no text
    continues with, a separator where no text has one)."""

    def new_node() -> dict:
        return {"next": {}, "end": False, "blocked": False}  # next: folded letter or " " -> [its forms, node]

    trie = new_node()
    for text in texts:
        words = " ".join(re.findall(r"[^\W_]+", text or ""))
        node = trie
        for char in words[:prefix]:
            forms, node = node["next"].setdefault(" " if char == " " else _fold(char), [set(), new_node()])
            forms |= set() if char == " " else _forms(char)
        if words:
            node["blocked" if len(words) > prefix else "end"] = True

    ways = []

    def walk(node: dict, path: str, after_word: bool, trailing: bool) -> None:
        """`after_word`: the node ends a letter (a separator may come next); `trailing`: a separator node after a
        text's last word (stopping there is still a copy)."""
        if node["blocked"]:
            return
        letters = {key: entry for key, entry in node["next"].items() if key != " "}
        if not (node["end"] or trailing):
            ways.append(path)  # stop here
        ways.append(path + _other_word(set().union(*(forms for forms, _ in letters.values()))) + r"[\s\S]*")
        if after_word and " " not in node["next"]:
            if node["end"]:  # separators after the last word, then any word: more words than the text
                ways.append(path + SEPARATOR + "+" + WORD + r"[\s\S]*")
            else:
                ways.append(path + SEPARATOR + r"[\s\S]*")
        for forms, child in letters.values():
            walk(child, path + _letters(forms), True, False)
        if " " in node["next"]:
            walk(node["next"][" "][1], path + SEPARATOR + "+", False, node["end"])

    walk(trie, SEPARATOR + "*", False, False)
    return "^(" + "|".join(ways) + ")$"


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def tightened(schema: dict, copied: dict[str, list[str]], max_chars: int | None, written=None) -> dict:
    """A copy of the tool's `schema` for a retry, forbidding what made the first try fail.

    At each key of `copied`, a string property may not copy any of the listed texts (the value written, the
    parameter's name, title and description; `excluding`). With `max_chars` (the
    first try ran out of tokens; what the budget leaves), only the required keys and those in `written` (the
    keys the first try began) may be written, and their strings, numbers and arrays are bounded so that the
    object's inside fits in that many characters where the keys leave room (a token is at least one
    character; enums, whose values are fixed, are not counted)."""
    schema = copy.deepcopy(schema or {})
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    for key, texts in copied.items():
        spec = properties.get(key)
        if isinstance(spec, dict) and spec.get("type") == "string" and "pattern" not in spec and "enum" not in spec:
            spec["pattern"] = excluding([*texts, key, str(spec.get("title", "")), str(spec.get("description", ""))])
    if max_chars is None:
        return schema
    keep = set(schema.get("required") or ()) | set(written or ())
    for key in [k for k in properties if k not in keep]:
        del properties[key]
    values, spare = [], max_chars  # (node, how many times it can occur); characters left for the values

    def collect(node, times: int) -> None:
        nonlocal spare
        if isinstance(node, list):
            for value in node:
                collect(value, times)
            return
        if not isinstance(node, dict):
            return
        kind = node.get("type")
        if isinstance(node.get("properties"), dict):
            spare -= times * sum(len(str(key)) + 6 for key in node["properties"])  # '"key": ' and ', '
        if kind in ("string", "integer", "number") and "enum" not in node and "const" not in node:
            values.append((node, times))
            spare -= 2 * times if kind == "string" else 0  # the quotes
        if kind == "array":
            cap = max(RETRY_ITEMS, int(node.get("minItems", 0)))
            node["maxItems"] = min(int(node.get("maxItems", cap)), cap)
            spare -= times * (2 + 2 * node["maxItems"])  # brackets and separators
        for key, value in node.items():  # the subschemas a value can take (not `not`, `enum`, `default`, ...)
            if key == "properties" and isinstance(value, dict):
                collect(list(value.values()), times)
            elif key in ("items", "prefixItems", "additionalProperties", "anyOf", "oneOf", "allOf"):
                collect(value, times * node["maxItems"] if kind == "array" and key == "items" else times)

    collect(schema, 1)
    each = max(4, spare // max(1, sum(times for _, times in values)))
    for node, _ in values:
        if node["type"] == "string":
            cap = max(each, int(node.get("minLength", 0)))
            node["maxLength"] = min(int(node.get("maxLength", cap)), cap)
            continue
        # digits that fit with a sign (and for a number, a point and three decimals), next to any bound it has
        span = 10 ** max(1, min(each - (5 if node["type"] == "number" else 1), 12)) - 1
        low, high = (
            next((v for v in (node.get(side), node.get(f"exclusive{side.title()}")) if _is_number(v)), None)
            for side in ("minimum", "maximum")
        )
        if high is None:
            node["maximum"] = (max(low, 0) if low is not None else 0) + span
        if low is None:
            node["minimum"] = (min(high, 0) if high is not None else 0) - span
        if node["type"] == "number" and "multipleOf" not in node:
            node["multipleOf"] = 0.001
    return schema


def call_grammar(schema: dict) -> str:
    """The Lark grammar (llguidance's dialect) of the rest of a call after `"arguments":`."""
    schema = closed(schema or {})
    if schema.get("type") in (None, "object") or "properties" in schema:
        schema = {"type": "object", **schema}
    schema["x-guidance"] = {**LAYOUT, **(schema.get("x-guidance") or {})}
    return 'start: " "? arguments "}"\narguments: %json ' + json.dumps(schema, ensure_ascii=False)


class ArgumentGrammar:
    """Builds a matcher per call from its tool's schema, for one tokenizer, with `stop` as the end token."""

    def __init__(self, tokenizer, stop: str = "</tool_call>"):
        import llguidance
        import llguidance.hf

        self._llguidance = llguidance
        self.stop_id = tokenizer.convert_tokens_to_ids(stop)
        self.tokenizer = llguidance.hf.from_tokenizer(tokenizer, eos_token=self.stop_id)  # about 0.4 s
        self._compiled = lru_cache(maxsize=4096)(self._compile)

    def _compile(self, schema_json: str) -> tuple[str | None, str]:
        """(grammar, "") or (None, why llguidance cannot build it)."""
        llguidance = self._llguidance
        try:
            grammar = llguidance.grammar_from("lark", call_grammar(json.loads(schema_json)))
            failed, warnings = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, self.tokenizer)
        except (ValueError, TypeError, RuntimeError) as e:
            return None, str(e)
        if failed:
            return None, "; ".join(warnings) or "the grammar does not build"
        return grammar, ""

    def matcher(self, schema: dict):
        """A fresh matcher for a call to a tool with `schema`, or (None, why) when the schema has a form the
        grammar library cannot express: such a call is written unconstrained and checked afterwards."""
        grammar, why = self._compiled(
            json.dumps(schema or {}, ensure_ascii=False)
        )  # key order kept: it is the order written
        if grammar is None:
            return None, why
        return self._llguidance.LLMatcher(self.tokenizer, grammar, log_level=0), ""


class ConstrainedLogits:
    """A logits processor for `generate`: masks, row by row, the tokens each row's matcher does not allow next
    (None: that row is free).

    `prompt_width` is the width of the (left-padded) prompts: tokens after it are the rows' own, fed to
    their matchers one step behind the logits. A row whose grammar is complete can only write `stop_id`."""

    def __init__(self, matchers: list, prompt_width: int, stop_id: int):
        self.matchers, self.prompt_width, self.stop_id = matchers, prompt_width, stop_id

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        written = input_ids.shape[1] > self.prompt_width
        for row, matcher in enumerate(self.matchers):
            if matcher is None or matcher.is_stopped() or matcher.is_error():
                continue
            if written and not matcher.consume_token(int(input_ids[row, -1])):
                continue  # cannot happen for a masked choice; the text is checked against the schema anyway
            if matcher.is_stopped():  # complete: only the end of the call
                stop = scores[row, self.stop_id].clone()
                scores[row] = float("-inf")
                scores[row, self.stop_id] = stop
                continue
            allowed = np.unpackbits(np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8), bitorder="little")
            keep = torch.zeros(scores.shape[1], dtype=torch.bool)
            width = min(len(allowed), scores.shape[1])
            keep[:width] = torch.from_numpy(allowed[:width].astype(bool))
            scores[row] = scores[row].masked_fill(~keep.to(scores.device), float("-inf"))
        return scores
