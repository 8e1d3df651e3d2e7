"""The 8 Seal-Tools steps whose fast-mode arguments failed the schema in results.md's fast-grammar row, written
again through the served path, with the policy's text and the reasons.

    python experiments/2026-12-01-argument-grammar/failures.py > experiments/2026-12-01-argument-grammar/failures.txt
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, load_benchmark, step_input, steps_of
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY, select_steps

bench = load_benchmark("seal_tools")
bank = benchmark_bank(bench)
policy = Policy.load(SHIPPED_POLICY, bank)
want = ['dev-difficult-276#4', 'dev-difficult-280#0', 'dev-difficult-280#1', 'dev-difficult-280#2', 'test_in_domain-easy-53#0', 'test_in_domain-difficult-449#0', 'test_out_domain-difficult-510#0', 'test_out_domain-difficult-653#2']
steps = [s for q in bench.queries for s in steps_of(q) if s.id in want]
sel = select_steps(policy, bank, [step_input(bank, s) for s in steps], k=10, mode="fast", min_cosine=0.0)
for s, x in zip(steps, sel):
    m, why = policy.argument_grammar.matcher(x.tool.parameters)
    print(s.id, x.tool.name, "grammar" if m else f"NO GRAMMAR: {why[:150]}")
    print("   raw:", x.raw_arguments[:200].replace("\n", " "))
    print("   errors:", x.argument_errors[:2])
