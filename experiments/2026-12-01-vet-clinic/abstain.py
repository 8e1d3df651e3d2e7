"""The vet-clinic catalog (examples/vet_clinic) as a user meets it: one `select_tool` call per request, with
the default abstention threshold, in fast and reason mode; each request's first choice (or "no tool fits"),
scored against its gold tools (answerable requests) or against abstaining (requests needing no tool).

    python experiments/2026-12-01-vet-clinic/abstain.py --out runs/vet-abstain.json
"""

import json
import sys
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool import select_tool
from autotool.benchmarks import benchmark_bank, load_benchmark, load_no_tool
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY, fitted_min_cosine

FOLDER = Path(__file__).parents[2] / "examples" / "vet_clinic"


@click.command()
@click.option("--out", type=click.Path(dir_okay=False), required=True)
def main(out):
    bench, no_tool = load_benchmark(FOLDER), load_no_tool(FOLDER / "no_tool")
    bank = benchmark_bank(bench)
    policy = Policy.load(SHIPPED_POLICY, bank)
    rows = []
    for mode in ("fast", "reason"):
        for query in list(bench.queries) + list(no_tool.queries):
            selection = select_tool(query.text, bank, policy, mode=mode, arguments=False)
            rows.append(
                {
                    "mode": mode,
                    "id": query.id,
                    "gold": list(query.gold_tools),
                    "tool": None if selection.tool is None else selection.tool.name,
                    "closest": selection.candidates[0][0].name,
                    "cosine": selection.cosine,
                    "rationale": selection.rationale,
                }
            )
    summary = {"min_cosine": fitted_min_cosine(bank)}
    for mode in ("fast", "reason"):
        answerable = [r for r in rows if r["mode"] == mode and r["gold"]]
        none = [r for r in rows if r["mode"] == mode and not r["gold"]]
        abstained_right = sum(r["tool"] is None for r in none)
        abstained_wrong = sum(r["tool"] is None for r in answerable)
        summary[mode] = {
            "answerable": len(answerable),
            "no_tool": len(none),
            "hit@1 never abstaining": sum(r["closest"] in r["gold"] for r in answerable) / len(answerable),
            "hit@1 abstaining": sum(r["tool"] in r["gold"] for r in answerable) / len(answerable),
            "abstention precision": abstained_right / max(1, abstained_right + abstained_wrong),
            "abstention recall": abstained_right / len(none),
        }
        print(mode, json.dumps(summary[mode]))
    Path(out).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
