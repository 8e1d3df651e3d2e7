"""Print a policy's reason-mode choices for the first N requests of a catalog (seed 0 sample): the gold tools, the
shortlist the prompt listed (fast mode's best 5, best first), the rationale written and the tool chosen.

    python experiments/2026-12-02-shortlist/look.py apibank runs/sl-seal/policy-sft 24
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))
sys.path.insert(0, str(Path(__file__).parents[1] / "2026-12-01-three-catalogs"))

from judge import policy_for

from autotool.benchmarks import benchmark_bank, load_benchmark, load_split, select_queries
from autotool.select import select_steps
from autotool.selection import StepInput, embedded, shortlisted


def main(name: str, folder: str, n: int) -> None:
    bench = load_benchmark(name)
    queries = select_queries(bench, load_split(bench), "all", n)
    bank = benchmark_bank(bench, "tools")
    policy = policy_for(Path(folder), bank)
    items = [StepInput(q.text) for q in queries]
    chosen = select_steps(policy, bank, items, k=5, mode="reason", arguments=False, min_cosine=0)
    listed = shortlisted(policy.head_values, bank, items, embedded(bank.embedder, [i.query for i in items]), 5)
    hits = 0
    for query, selection, step in zip(queries, chosen, listed):
        hit = selection.tool.name in query.gold_tools
        hits += hit
        print(("OK " if hit else "XX ") + query.text[:100].replace("\n", " "))
        print("   gold:", list(query.gold_tools), "| listed:", [line.split(":")[0] for line in step.shortlist])
        print("   rationale:", selection.rationale[:150], "->", selection.tool.name)
    print(f"hit@1 {hits / len(queries):.3f} ({hits} of {len(queries)})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
