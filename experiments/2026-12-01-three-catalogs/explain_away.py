"""Replay: the BM25 prior at later steps reading only the words of the request that the earlier calls do not
explain (validation catalogs only, per step, every tool scored, the called tools excluded).

    python experiments/2026-12-01-three-catalogs/explain_away.py [--embedder tools] [CATALOGS...]

At a step after earlier calls, the shipped head adds `l_later bm25_k(request)` (0.7): the request names every
call, and its words say which are left. But the words that named the calls already made still count, so a
tool that shares them (another log-in tool, the same kind of search) is pulled up. Here `explained` drops from
the request the words of the called tools' texts (`Tool.text`: name parts, description, parameters; case
ignored) before BM25 scores it: `autotool.selection.lexical_query`, what the served path does since this record
(the first run of this replay had its own copy of the rule, with ASCII words only; same figures, below). Forms, each with l at first steps as shipped (0.1):
- `fast, later L`: d_k.q + L m_k(request);
- `fast, explained, later L`: d_k.q + L m_k(request less the called tools' words);
- `reason ...`: the same with the anchor unit(q + 0.8 r), from the shipped policy's rationales of
  ../2026-12-01-rationale-fusion/ (catalogs without saved rationales get no reason rows).
Validation only: every request of API-Bank and ToolAlpaca, the val splits of the three training catalogs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import numpy as np

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, load_benchmark, load_split, select_queries, step_input, steps_of
from autotool.metrics import paired_bootstrap
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY
from autotool.selection import embedded, lexical_query, normalised_bm25, unit

RATIONALES = Path(__file__).parents[1] / "2026-12-01-rationale-fusion"
CATALOGS = ("apibank", "toolalpaca", "seal_tools", "metatool", "bfcl")


def validation_steps(catalog):
    bench = load_benchmark(catalog)
    queries = bench.queries if catalog in ("apibank", "toolalpaca") else select_queries(bench, load_split(bench), "val")
    return bench, [s for q in queries for s in steps_of(q)]


@click.command()
@click.argument("catalogs", nargs=-1)
@click.option("--embedder", default="tools", show_default=True)
def main(catalogs, embedder):
    catalogs = catalogs or CATALOGS
    table = {}
    for catalog in catalogs:
        bench, steps = validation_steps(catalog)
        bank = benchmark_bank(bench, embedder=embedder)
        head = Policy.load(SHIPPED_POLICY, bank).head_values
        names = [t.qualified_name for t in bank]
        text = {t.qualified_name: t.text for t in bank}
        docs = bank.vectors(names)
        bm25 = bank._bm25_index()
        row = bank.store.ids_by_key(names)
        where = {int(i): j for j, i in enumerate(bm25.ids.tolist())}
        column = np.array([where[row[n]] for n in names])
        items = [step_input(bank, s) for s in steps]
        qv = embedded(bank.embedder, [i.query for i in items])
        saved_file = RATIONALES / f"rationales-{catalog}.jsonl"
        rv = None
        if saved_file.exists():
            saved = {r["step"]: r["rationale"] for r in map(json.loads, saved_file.read_text().splitlines())}
            rv = embedded(bank.embedder, [saved[s.id] for s in steps])
        forms = {}
        for i, (item, step) in enumerate(zip(items, steps)):
            allowed = np.array([n not in set(item.exclude) for n in names])
            full = normalised_bm25(bm25.scores(item.query))[column]
            rest = (
                normalised_bm25(bm25.scores(lexical_query(item, text.get)))[column] if item.later else full
            )
            anchors = {"fast": qv[i]} | ({"reason": unit((head.a * qv[i] + head.b * rv[i])[None])[0]} if rv is not None else {})
            for mode, anchor in anchors.items():
                dense = docs @ anchor
                for later in (0.1, 0.3, 0.7):
                    for label, lex in (("", full), ("explained, ", rest)):
                        weight = later if item.later else head.lexical
                        s = np.where(allowed, dense + weight * lex, -np.inf)
                        form = f"{mode}, {label}later {later}"
                        forms.setdefault(form, []).append(float(names[int(np.argmax(s))] == step.gold))
        table[catalog] = (forms, [s.query.id for s in steps], sum(s.index > 0 for s in steps))
        print(f"{catalog}: {len(steps)} steps, {table[catalog][2]} later", file=sys.stderr)
    all_forms = list(dict.fromkeys(f for c in catalogs for f in table[c][0]))
    print(f"per-step hit@1 on validation, embedder {embedder}; paired 95% intervals against the shipped form of the mode\n")
    print("| form | " + " | ".join(f"{c} ({len(table[c][1])}, {table[c][2]} later)" for c in catalogs) + " | mean |")
    print("|---|" + "---:|" * (len(catalogs) + 1))
    for form in all_forms:
        cells, means = [], []
        shipped = f"{form.split(',')[0]}, later 0.7"
        for c in catalogs:
            forms, groups, _ = table[c]
            if form not in forms:
                cells.append("")
                continue
            means.append(np.mean(forms[form]))
            if form == shipped:
                cells.append(f"**{np.mean(forms[form]):.3f}**")
            else:
                d = paired_bootstrap(forms[form], forms[shipped], groups=groups)
                cells.append(f"{np.mean(forms[form]):.3f} ({d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}])")
        print(f"| {form} | " + " | ".join(cells) + f" | {np.mean(means):.3f} |")


if __name__ == "__main__":
    main()
