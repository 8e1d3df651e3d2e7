"""The main job: build the default tool bank from the bundled catalogs, search it, select tools with the shipped
policy (rationale, probability, arguments), and show how it compares with retrieval on unseen tools.

    make run          # or: .venv/bin/python demo.py [--bank PATH]

The bank is `$AUTOTOOL_HOME/bank` (default ~/.cache/autotool/bank) unless `--bank` says otherwise. A second
run re-embeds nothing: tools whose text did not change are left as they are.
"""

import argparse
import json
import time
import warnings
from pathlib import Path

from autotool import ArgumentError, select_tool
from autotool.select import default_policy
from toolbank import Tool, ToolBank, default_bank_path, load_file

CATALOGS = Path(__file__).parent / "autotool" / "data"
RESULTS = Path(__file__).parent / "experiments"
QUERIES = [
    "Will the air be clean enough to go running tomorrow? My zip code is 94110.",
    "Find peer-reviewed papers about protein folding",
    "Analyze the DNA found on the swab from the crime scene",
    "Convert 250 US dollars to euros",
    "Translate this paragraph into Japanese",
]
# A tool that no bundled catalog contains: the bank takes it like any other.
NEW_TOOL = Tool(
    "book_meeting_room",
    "Reserve a meeting room in the office for a time slot and invite attendees",
    {"type": "object", "properties": {
        "room": {"type": "string", "description": "Room name or floor"},
        "start": {"type": "string", "description": "Start time, ISO 8601"},
        "minutes": {"type": "integer", "description": "Length of the meeting"}},
     "required": ["start", "minutes"]},
    namespace="office",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bank", type=Path, default=None, help="bank folder (default: $AUTOTOOL_HOME/bank)")
    args = parser.parse_args()

    started = time.perf_counter()
    bank = ToolBank.open(args.bank or default_bank_path())
    print(f"bank: {bank.path}")
    for name in ("metatool", "seal_tools"):
        tools, _ = load_file(CATALOGS / name / "tools.jsonl", namespace=name)
        report = bank.add(tools, replace=True, progress=True)
        print(f"  {name}: {len(tools)} tools ({len(report.added)} added, {len(report.replaced)} replaced, "
              f"{len(report.unchanged)} unchanged, {report.embedded} embedded)")
    bank.add([NEW_TOOL], replace=True)
    print(f"  office: 1 tool of our own ({NEW_TOOL.name})")
    print(f"{len(bank)} tools ready in {time.perf_counter() - started:.1f} s\n")

    for query in QUERIES + ["Book the 4th floor room for an hour at 3pm tomorrow"]:
        print(f"> {query}")
        for mode in ("bm25", "dense", "hybrid"):
            started = time.perf_counter()
            hits = bank.search(query, k=3, mode=mode)
            ms = (time.perf_counter() - started) * 1000
            print(f"  {mode:>6} ({ms:5.1f} ms): " + ", ".join(f"{h.name} {h.score:.3f}" for h in hits))
        print()

    print("select_tool (reason mode): rationale, anchor, selection by distance, arguments")
    print("  (the shipped policy; on a CPU each takes seconds: it writes a rationale, then the call)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy = default_policy(bank)
    for w in caught:
        print(f"  note: {w.message}")
    for query in [QUERIES[0], QUERIES[3], "Book the 4th floor room for an hour at 3pm tomorrow"]:
        started = time.perf_counter()
        try:
            selection, problem = select_tool(query, bank, policy, k=3), ""
        except ArgumentError as e:
            selection, problem = e.selection, f"invalid arguments ({e}); raw: {e.raw[:80]!r}"
        print(f"> {query}  ({time.perf_counter() - started:.1f} s)")
        print(f"  rationale: {selection.rationale!r}")
        print(f"  chosen:    {selection.tool.name} (p = {selection.probability:.2f}); candidates: "
              + ", ".join(f"{t.name} {p:.2f}" for t, p in selection.candidates))
        print(f"  arguments: {json.dumps(selection.arguments) if selection.arguments is not None else problem}\n")
    print_results()


# The committed evaluations of the shipped policy (experiments/2026-11-29-eval-default/eval.sh, CPU) on
# unseen-test samples that no earlier run had evaluated a policy on; in these runs the shipped policy is method
# `shipped`.
RESULT_FOLDERS = {"metatool": "2026-11-30-metatool-phase2-unseen", "seal_tools": "2026-11-30-seal_tools-phase2-unseen"}
SHOWN = {"bm25": "bm25", "dense": "dense", "hybrid": "hybrid", "shipped": "policy"}


def print_results() -> None:
    """The committed evaluation of the shipped policy, hit@1 on unseen tools."""
    print("How it compares on tools it never saw (hit@1, unseen-test; committed results in experiments/, "
          "not recomputed here):")
    for bench, folder in RESULT_FOLDERS.items():
        path = RESULTS / folder / "results.json"
        if not path.exists():
            print(f"  {bench}: no results at {path}")
            continue
        results = json.loads(path.read_text())
        split = next(s for s in results["splits"] if s["split"] == "unseen-test")
        cells = [f"{label} {split['methods'][m]['hit@1']:.3f}" for m, label in SHOWN.items() if m in split["methods"]]
        print(f"  {bench} ({split['n_queries']} queries, {folder}): " + ", ".join(cells))


if __name__ == "__main__":
    main()
