"""Copy the normalised benchmarks from ../shared/data into autotool/data, making tool names valid tool-bank names.

    python autotool/data/vendor.py ../shared/data

The training catalogs (`metatool`, `seal_tools`) are copied with the repairs below. The foreign validation
catalogs (`apibank`: API-Bank, Apache-2.0; `toolalpaca`: ToolAlpaca, Apache-2.0) and `metatool_no_tool`
(MetaTool's no-tool queries, MIT) are copied byte for byte with their README, LICENSE and meta.json
(attribution and licence travel with the data); every tool name there already passes the tool-bank rule,
and the copy fails if one does not. autotool/data/README.md is the project's own and is not overwritten.

Two upstream names break the tool-name rule (letters, digits, `_ - .`): MetaTool's `PDF&URLTool` and
Seal-Tools' `requestFirst Aid Assistance`. Each invalid character becomes `_`, in tools.jsonl and in every
query's gold tools and calls. Four Seal-Tools parameters carry `examples` as a string, which JSON Schema
requires to be an array: the string is wrapped in a list. Nothing else changes.
"""

import json
import re
import shutil
import sys
from pathlib import Path

BENCHMARKS = ("metatool", "seal_tools")  # repaired while copied
AS_IS = ("apibank", "toolalpaca", "metatool_no_tool")  # copied unchanged, with their licence and meta.json
AS_IS_FILES = ("README.md", "LICENSE", "meta.json", "tools.jsonl", "queries.jsonl")


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name)[:64]


def vendor(source: Path, target: Path) -> dict[str, str]:
    renamed: dict[str, str] = {}
    for bench in BENCHMARKS:
        (target / bench).mkdir(parents=True, exist_ok=True)
        shutil.copy(source / bench / "README.md", target / bench / "README.md")
        tools = [json.loads(line) for line in open(source / bench / "tools.jsonl")]
        for tool in tools:
            for prop in (tool["parameters"].get("properties") or {}).values():
                if isinstance(prop.get("examples"), str):
                    prop["examples"] = [prop["examples"]]
            new = safe_name(tool["name"])
            if new != tool["name"]:
                renamed[tool["name"]] = new
                tool["name"] = new
        assert len({t["name"] for t in tools}) == len(tools), "renaming made two names equal"
        with open(target / bench / "tools.jsonl", "w") as f:
            f.writelines(json.dumps(t, ensure_ascii=False) + "\n" for t in tools)
        with open(source / bench / "queries.jsonl") as src, open(target / bench / "queries.jsonl", "w") as dst:
            for line in src:
                query = json.loads(line)
                query["gold_tools"] = [renamed.get(n, n) for n in query["gold_tools"]]
                for call in (query.get("gold_args") or {}).get("calls", []):
                    call["tool"] = renamed.get(call["tool"], call["tool"])
                dst.write(json.dumps(query, ensure_ascii=False) + "\n")
    for bench in AS_IS:
        names = [json.loads(line)["name"] for line in open(source / bench / "tools.jsonl")]
        bad = [n for n in names if safe_name(n) != n]
        assert not bad, f"{bench}: tool names that break the tool-bank rule: {bad}"
        (target / bench).mkdir(parents=True, exist_ok=True)
        for file in AS_IS_FILES:
            shutil.copyfile(source / bench / file, target / bench / file)
    return renamed


if __name__ == "__main__":
    print(vendor(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data"), Path(__file__).parent))
