"""Normalise the Berkeley Function Calling Leaderboard (BFCL, Apache-2.0) into autotool/data/bfcl.

    pip download --no-deps bfcl-eval==2026.3.23 -d /tmp/bfcl     # the PyPI package carries the data
    python autotool/data/vendor_bfcl.py /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl

BFCL gives each request its own short list of functions (one to a few dozen) and the acceptable calls. This
script pools the functions of the single-turn, non-abstention categories into one catalog and keeps each
request with the names of its gold functions, so a selector must find them among all the catalog's tools:

- **Categories read**: `CATEGORIES` below (Python and live user-contributed functions; single, multiple,
  parallel). Java, JavaScript (their own type names), multi-turn, memory, web search, format sensitivity and
  the irrelevance categories (no gold call) are left out.
- **One tool per name.** BFCL's live data repeats a function under one name with paraphrased descriptions
  (`get_current_weather` has 48 wordings): the catalog keeps the wording that occurs most often (ties: first
  met, in `CATEGORIES` order), and `meta.json` counts the wordings dropped.
- **Schemas** become JSON Schema: `dict` -> `object`, `float` -> `number`, `tuple` -> `array`, `any` -> no
  type. A tool whose schema still fails Draft 2020-12 `check_schema`, or whose name breaks the tool-bank rule,
  is left out with every request that needs it (listed in `meta.json`).
- **Requests**: the user messages of the one turn, joined with a newline (system messages dropped).
  `gold_tools` are the distinct functions of the ground truth in call order; `gold_args.calls` one call per
  function, its first (BFCL's parallel categories call one function several times; a selection step chooses a
  tool once, and a tool called at an earlier step is not a candidate again), with, for each argument, the
  first acceptable value upstream lists (an argument whose only acceptable value is the empty string, BFCL's
  "may be omitted", is left out).

Deterministic: the same wheel gives the same files. `meta.json` records the wheel's sha256.
"""

import hashlib
import json
import shutil
import sys
import zipfile
from collections import Counter
from pathlib import Path

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from toolbank.tool import NAME_PATTERN

PACKAGE = "bfcl-eval==2026.3.23"
CATEGORIES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}
LICENCE = Path(__file__).parent / "apibank" / "LICENSE"  # the Apache License 2.0, verbatim


def json_schema(schema: dict) -> dict:
    """BFCL's parameter schema (its own type names) as JSON Schema."""
    out = dict(schema)
    kind = out.get("type")
    if isinstance(kind, str) and kind in TYPES:
        if TYPES[kind] is None:
            del out["type"]
        else:
            out["type"] = TYPES[kind]
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: json_schema(v) if isinstance(v, dict) else v for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = json_schema(out["items"])
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = json_schema(out["additionalProperties"])
    return out


def first_value(alternatives):
    """The first acceptable value of a BFCL answer (a list of alternatives, dicts nested the same way)."""
    if not isinstance(alternatives, list):
        return alternatives
    chosen = next((a for a in alternatives if a != ""), "")
    if isinstance(chosen, dict):
        return {k: first_value(v) for k, v in chosen.items() if first_value(v) != ""}
    return chosen


def write_catalog(target: Path, tools, queries: list[dict]) -> None:
    """`target`'s tools.jsonl (sorted by name), queries.jsonl (in order) and the Apache licence text."""
    target.mkdir(parents=True, exist_ok=True)
    with open(target / "tools.jsonl", "w") as f:
        f.writelines(json.dumps(t, ensure_ascii=False) + "\n" for t in sorted(tools, key=lambda t: t["name"]))
    with open(target / "queries.jsonl", "w") as f:
        f.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
    shutil.copyfile(LICENCE, target / "LICENSE")


def read(wheel: Path) -> dict[str, list[tuple[dict, dict]]]:
    """category -> [(entry, answer)] from the wheel's bfcl_eval/data."""
    rows = {}
    with zipfile.ZipFile(wheel) as z:
        for category in CATEGORIES:
            entries = [json.loads(line) for line in z.read(f"bfcl_eval/data/BFCL_v4_{category}.json").splitlines()]
            answers = {
                (a := json.loads(line))["id"]: a
                for line in z.read(f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json").splitlines()
            }
            rows[category] = [(e, answers[e["id"]]) for e in entries]
    return rows


def vendor(wheel: Path, target: Path) -> dict:
    rows = read(wheel)
    wordings: dict[str, Counter] = {}
    first_seen: dict[str, dict[str, int]] = {}
    for category in CATEGORIES:
        for entry, _ in rows[category]:
            for function in entry["function"]:
                key = json.dumps([function["description"], function["parameters"]], sort_keys=True)
                wordings.setdefault(function["name"], Counter())[key] += 1
                first_seen.setdefault(function["name"], {}).setdefault(key, len(first_seen[function["name"]]))
    tools, dropped_tools = {}, {}
    for name, counts in wordings.items():
        key = min(counts, key=lambda k: (-counts[k], first_seen[name][k]))
        description, parameters = json.loads(key)
        parameters = json_schema(parameters)
        if not NAME_PATTERN.fullmatch(name):
            dropped_tools[name] = "name breaks the tool-bank rule"
            continue
        try:
            Draft202012Validator.check_schema(parameters)
        except SchemaError as e:
            dropped_tools[name] = f"schema: {e.message[:120]}"
            continue
        tools[name] = {"name": name, "description": description, "parameters": parameters, "source": "bfcl"}

    queries, dropped_queries, per_category, repeated_calls = [], {}, Counter(), 0
    for category in CATEGORIES:
        for entry, answer in rows[category]:
            turn = entry["question"][0]
            text = "\n".join(m["content"] for m in turn if m["role"] == "user").strip()
            calls = {}  # one call per function: its first (a tool is selected once; see the docstring)
            for name, args in (item for call in answer["ground_truth"] for item in call.items()):
                if name in calls:
                    repeated_calls += 1
                    continue
                calls[name] = {
                    "tool": name,
                    "args": {k: v for k, v in ((k, first_value(a)) for k, a in args.items()) if v != ""},
                }
            calls = list(calls.values())
            gold = [c["tool"] for c in calls]
            missing = [n for n in gold if n not in tools]
            if missing or not text or not gold:
                dropped_queries[entry["id"]] = f"gold tool {missing[0]} left out" if missing else "no request or call"
                continue
            queries.append(
                {
                    "id": f"bfcl-{entry['id']}",
                    "query": text,
                    "gold_tools": gold,
                    "gold_args": {"calls": calls},
                    "source": category,
                }
            )
            per_category[category] += 1

    write_catalog(target, tools.values(), queries)
    meta = {
        "source": f"PyPI {PACKAGE} (bfcl_eval/data), from ShishirPatil/gorilla berkeley-function-call-leaderboard",
        "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "licence": "Apache-2.0 (the package's licence and its data README; the licence text is LICENSE)",
        "categories": list(CATEGORIES),
        "counts": {
            "tools": len(tools),
            "queries": len(queries),
            "queries_per_category": dict(per_category),
            "gold_tools_per_query": dict(sorted(Counter(str(len(q["gold_tools"])) for q in queries).items())),
            "calls": sum(len(q["gold_args"]["calls"]) for q in queries),
            "repeated_calls_dropped": repeated_calls,
            "names_with_several_wordings": sum(len(c) > 1 for c in wordings.values()),
            "wordings_dropped": sum(len(c) - 1 for c in wordings.values()),
        },
        "log": {"tools_left_out": dropped_tools, "queries_left_out": dropped_queries},
    }
    (target / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta


if __name__ == "__main__":
    result = vendor(Path(sys.argv[1]), Path(__file__).parent / "bfcl")
    print(json.dumps(result["counts"], indent=1))
