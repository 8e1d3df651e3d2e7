"""The main job: build the default tool bank from the bundled catalogs, let the shipped policy choose tools
(rationale, probability, arguments), compare with plain search, and show the committed results on tools and catalogs it never trained on.

    make run          # or: .venv/bin/python demo.py [--bank PATH]

The bank is `$AUTOTOOL_HOME/bank` (default ~/.cache/autotool/bank) unless `--bank` says otherwise. A second
run re-embeds nothing: tools whose text did not change are left as they are.
"""

import json
import time
import warnings
from pathlib import Path

import click

from autotool import select_tool
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
OWN_QUERY = "Book the 4th floor room for an hour at 3pm tomorrow"
# A tool that no bundled catalog contains: the bank takes it like any other.
NEW_TOOL = Tool(
    "book_meeting_room",
    "Reserve a meeting room in the office for a time slot and invite attendees",
    {
        "type": "object",
        "properties": {
            "room": {"type": "string", "description": "Room name or floor"},
            "start": {"type": "string", "description": "Start time, ISO 8601"},
            "minutes": {"type": "integer", "description": "Length of the meeting"},
        },
        "required": ["start", "minutes"],
    },
    namespace="office",
)


def build_bank(path: Path) -> ToolBank:
    started = time.perf_counter()
    bank = ToolBank.open(path)
    click.echo(f"bank: {bank.path}")
    for name in ("metatool", "seal_tools"):
        tools, _ = load_file(CATALOGS / name / "tools.jsonl", namespace=name)
        report = bank.add(tools, replace=True, progress=True)
        click.echo(f"  {name}: {len(tools)} tools ({report.embedded} embedded now, the rest unchanged)")
    bank.add([NEW_TOOL], replace=True)
    click.echo(f"  office: 1 tool of our own ({NEW_TOOL.name})")
    click.echo(f"{len(bank)} tools ready in {time.perf_counter() - started:.1f} s\n")
    return bank


def show_selections(bank: ToolBank) -> None:
    """The shipped policy in reason mode; arguments are shown only where they validate against the schema."""
    click.echo("select_tool, reason mode (the shipped policy writes a rationale, then the call: seconds on a CPU)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy = default_policy(bank)
    for w in caught:  # our own notes (e.g. no shipped policy for this embedder), not libraries' deprecations
        if issubclass(w.category, UserWarning) and w.filename.startswith(str(Path(__file__).parent / "autotool")):
            click.echo(f"  note: {w.message}")
    for query in [QUERIES[0], QUERIES[3], OWN_QUERY]:
        started = time.perf_counter()
        selection = select_tool(query, bank, policy, k=3)
        click.echo(f"> {query}  ({time.perf_counter() - started:.1f} s)")
        click.echo(f"  why:       {selection.rationale}")
        closest = ", ".join(f"{t.name} {p:.2f}" for t, p in selection.candidates)
        if selection.tool is None:
            click.echo(f"  no tool fits (cosine {selection.cosine:.2f}); closest: {closest}\n")
            continue
        click.echo(f"  chosen:    {selection.tool.name} (p = {selection.probability:.2f}); candidates: {closest}")
        if selection.arguments is not None:
            click.echo(f"  arguments: {json.dumps(selection.arguments, ensure_ascii=False)}\n")
        else:
            click.echo(f"  arguments: none that validate ({selection.argument_errors[0][:100]})\n")


def show_searches(bank: ToolBank) -> None:
    click.echo("search: the same requests by keywords (bm25), embeddings (dense) and both (hybrid), top 3")
    for query in QUERIES + [OWN_QUERY]:
        click.echo(f"> {query}")
        for mode in ("bm25", "dense", "hybrid"):
            started = time.perf_counter()
            hits = bank.search(query, k=3, mode=mode)
            ms = (time.perf_counter() - started) * 1000
            click.echo(f"  {mode:>6} ({ms:5.1f} ms): " + ", ".join(f"{h.name} {h.score:.3f}" for h in hits))
    click.echo()


# The committed evaluations of what users get today (the shipped policy, its reranker and the `tools` embedder,
# through `select_steps`, per request: experiments/2026-12-01-three-catalogs/judge.py): (catalog, the record
# folders its figures are in, later ones replacing earlier ones' figures, what the catalog is to the shipped models).
# Reason mode's are from after its rationale weight was refitted (2026-12-03). MetaTool is not shown: the
# embedder and the reranker read every MetaTool request, so none of its tools is unseen.
SERVED, REFITTED = "2026-12-02-rerank-served", "2026-12-03-rationale-weight-foreign"
SHOWN_RESULTS = [
    ("seal_tools:unseen-test:300", [f"{SERVED}/seal_tools-unseen", f"{REFITTED}/seal_tools-unseen"], "unseen tools"),
    ("apibank", [f"{SERVED}/fast", f"{REFITTED}/reason"], "a foreign catalog; the weights were fitted on it"),
    ("toolalpaca", [f"{SERVED}/fast", f"{REFITTED}/reason"], "a foreign catalog; the weights were fitted on it"),
]
SHOWN = {"bm25": "bm25", "dense-stock": "dense", "hybrid-stock": "hybrid", "fast": "fast", "reason": "reason"}


def results_lines() -> list[str]:
    """hit@1 per request from the committed evaluations of the served path, one line a catalog."""
    lines = []
    for catalog, folders, role in SHOWN_RESULTS:
        scores = {}
        for folder in folders:
            results = json.loads((RESULTS / folder / "results.json").read_text())
            scores.update(results["catalogs"][catalog]["measures"]["per-query"]["hit@1"])
        n = results["catalogs"][catalog]["queries"]
        cells = ", ".join(f"{label} {scores[m]:.3f}" for m, label in SHOWN.items())
        lines.append(f"  {catalog.partition(':')[0]} ({n} requests, {role}): {cells}")
    lines.append(f"  (experiments/{SERVED} and {REFITTED}; docs/results.md has the intervals)")
    return lines


@click.command(help=__doc__)
@click.option(
    "--bank",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Bank folder (default: $AUTOTOOL_HOME/bank).",
)
def main(bank: Path | None) -> None:
    tool_bank = build_bank(bank or default_bank_path())
    show_selections(tool_bank)
    show_searches(tool_bank)
    click.echo("On tools and catalogs it never trained on (hit@1 per request; committed results, not recomputed here):")
    for line in results_lines():
        click.echo(line)


if __name__ == "__main__":
    main()
