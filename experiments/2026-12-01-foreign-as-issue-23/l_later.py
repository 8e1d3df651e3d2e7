"""Diagnostic: the shipped policy in fast mode, per step (the evaluation's protocol, no arguments), with the
head's lexical weight at later steps `l_later` as shipped (0.7), set to `l` (0.1), and set to 0.

    OMP_NUM_THREADS=1 nice -n 19 python experiments/2026-12-01-foreign-as-issue-23/l_later.py apibank toolalpaca

Fast mode with W = 0 and no arguments runs no language model, so this takes seconds.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, load_benchmark, step_input, steps_of
from autotool.metrics import selection_metrics
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY, select_steps

for name in sys.argv[1:]:
    bench = load_benchmark(name)
    bank = benchmark_bank(bench)
    policy = Policy.load(SHIPPED_POLICY, bank)
    steps = [s for q in bench.queries for s in steps_of(q)]
    items = [step_input(bank, s) for s in steps]
    shipped = float(policy.head.lexical_later)
    print(f"{name}: l {float(policy.head.lexical):.2f}, l_later {shipped:.2f}")
    for label, value in (("l_later as shipped", shipped), ("l_later = l", float(policy.head.lexical)),
                         ("l_later = 0", 0.0)):
        with torch.no_grad():
            policy.head.lexical_later.fill_(value)
        hits = []
        for start in range(0, len(items), 64):
            selections = select_steps(policy, bank, items[start:start + 64], k=10, mode="fast", arguments=False)
            for selection, step in zip(selections, steps[start:start + 64]):
                ranking = [t.name for t, _ in selection.candidates]
                hits.append(selection_metrics(ranking, step.gold, [p for _, p in selection.candidates])["hit@1"])
        later = [h for h, s in zip(hits, steps) if s.index > 0]
        print(f"  {label}: hit@1 all {len(hits)} steps {sum(hits) / len(hits):.3f}, "
              f"later {len(later)} steps {sum(later) / len(later):.3f}")
