"""Which terms of a trained anchor head help on tools it never trained on? (val split; no test split read)

    python experiments/2026-11-29-diagnostics/head_terms.py POLICY [--bench metatool] [--limit 80]

Writes the policy's own greedy rationale for each val query, then scores hit@1 (whole catalog) of the
anchor built from subsets of its terms: E(query) alone (dense retrieval), E(rationale) alone, W h alone,
the trained head, and E(query) + b E(rationale) for a range of b.
"""

from __future__ import annotations

import argparse

import torch

from autotool.policy import Policy
from training.calibrate import write_rationales


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("policy")
    parser.add_argument("--bench", default="metatool")
    parser.add_argument("--limit", type=int, default=80)
    args = parser.parse_args()
    policy = Policy.load(args.policy)
    val = write_rationales(policy, args.bench, args.limit)
    steps, written, table, q, r, wh, gold = (
        val.steps,
        val.written,
        val.table,
        val.query,
        val.rationale,
        val.hidden_term,
        val.gold,
    )
    head = policy.head
    with torch.no_grad():

        def hit(anchor: torch.Tensor) -> float:
            return float(
                ((torch.nn.functional.normalize(anchor, dim=-1) @ table.vectors.T).argmax(1) == gold).float().mean()
            )

        print(
            f"{args.policy} on {args.bench} val ({len(steps)} queries): a = {head.a.item():.3f}, "
            f"b = {head.b.item():.3f}, g = {head.log_g.exp().item():.2f}, |W| = {head.W.weight.norm():.2f}\n"
        )
        print("| anchor | val hit@1 |\n|---|---:|")
        rows = [
            ("E(query) (dense retrieval)", q),
            ("E(rationale)", r),
            ("W h", wh),
            ("trained head: a E(query) + W h + b E(rationale)", head.a * q + wh + head.b * r),
        ]
        rows += [(f"E(query) + {b:g} E(rationale)", q + b * r) for b in (0.25, 0.5, 1.0, 2.0)]
        for name, anchor in rows:
            print(f"| {name} | {hit(anchor):.3f} |")
    print("\nfirst rationales:")
    for s, w in list(zip(steps, written))[:5]:
        print(f"  {s.query.text[:70]!r} -> {w.rationale[:90]!r} (gold {s.gold})")


if __name__ == "__main__":
    main()
