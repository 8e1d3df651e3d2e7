"""Reason-mode per-step hit@1 on validation when the rationale is combined with the request in other ways than
the shipped fixed sum (issue #23, lever 2), replayed from the rationales `rationales.py` wrote.

    python experiments/2026-12-01-rationale-fusion/fusion.py [--embedder default|tools] [CATALOGS...]

For a step with request embedding q, rationale embedding r, tool embeddings d_k and normalised BM25 scores
m_k (l = 0.1 at first steps, 0.7 at later ones, the shipped head's), the forms are:
- fast: d_k.q + l m_k (the shipped fast mode);
- sum b: d_k.unit(q + b r) + l m_k; b = 0.8 is the shipped reason mode (checked against the served choices);
- agree t: sum 0.8 when q.r >= t, else fast (a rationale far from its request is not read);
- shortlist K: sum 0.8, but only among the K best tools of fast mode (the rationale reorders what the
  request already supports; it cannot bring in a tool the request does not);
- rrf w: reciprocal-rank fusion (k = 60) of the fast ranking and the ranking by d_k.r, the latter weighted w.
Each form is also tried with the later-step BM25 weight at 0.1 and 0.3 (rows `... / later 0.3`) besides the
shipped 0.7. Every tool is scored; the tools called at earlier steps are excluded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import numpy as np

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, step_input
from autotool.metrics import paired_bootstrap
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY
from autotool.selection import embedded, normalised_bm25, unit

sys.path.insert(0, str(Path(__file__).parent))
from rationales import CATALOGS, HERE, validation_steps


def ranks(scores):
    order = np.argsort(-scores, kind="stable")
    out = np.empty(len(scores), dtype=np.int64)
    out[order] = np.arange(len(scores))
    return out


@click.command()
@click.argument("catalogs", nargs=-1)
@click.option("--embedder", default="default", show_default=True)
def main(catalogs, embedder):
    catalogs = catalogs or CATALOGS
    forms = ["fast"] + [f"sum {b}" for b in (0.4, 0.8, 1.2)]
    forms += [f"agree {t}" for t in (0.3, 0.4, 0.5, 0.6)]
    forms += [f"shortlist {k}" for k in (2, 3, 5, 10)]
    forms += [f"rrf {w}" for w in (0.5, 1.0)]
    forms += [f"{f} / later {ll}" for ll in (0.1, 0.3) for f in list(forms)]
    table, agreement = {}, {}
    for catalog in catalogs:
        bench, steps = validation_steps(catalog)
        saved = {
            r["step"]: r
            for r in map(json.loads, (HERE / f"rationales-{catalog}.jsonl").read_text().splitlines())
        }
        bank = benchmark_bank(bench, embedder=embedder)
        head = Policy.load(SHIPPED_POLICY, bank).head_values
        names = [t.qualified_name for t in bank]
        docs = bank.vectors(names)
        bm25 = bank._bm25_index()  # its scores are in store row-id order; `column` puts them in `names` order
        row = bank.store.ids_by_key(names)
        where = {int(i): j for j, i in enumerate(bm25.ids.tolist())}
        column = np.array([where[row[n]] for n in names])
        items = [step_input(bank, s) for s in steps]
        qv = embedded(bank.embedder, [i.query for i in items])
        rv = embedded(bank.embedder, [saved[s.id]["rationale"] for s in steps])
        hits = {f: [] for f in forms}
        same = []
        for item, step, q, r in zip(items, steps, qv, rv):
            gold = {step.gold} if isinstance(step.gold, str) else set(step.gold)
            allowed = np.array([n not in set(item.exclude) for n in names])
            lex = normalised_bm25(bm25.scores(item.query))[column]
            agree = float(q @ r)
            by_query = docs @ unit(head.a * q[None])[0]
            by_anchor = {}

            def summed(b):
                if b not in by_anchor:
                    by_anchor[b] = docs @ unit((head.a * q + b * r)[None])[0]
                return np.where(allowed, by_anchor[b] + lw * lex, -np.inf)

            for form in forms:
                form_only, _, later = form.partition(" / later ")
                lw = (float(later) if later else head.lexical_later) if item.later else head.lexical
                fast = np.where(allowed, by_query + lw * lex, -np.inf)
                shipped = summed(head.b)
                if form == "sum 0.8":
                    same.append(names[int(np.argmax(shipped))] == saved[step.id]["served"])
                kind, _, value = form_only.partition(" ")
                if kind == "fast":
                    s = fast
                elif kind == "sum":
                    s = summed(float(value))
                elif kind == "agree":
                    s = shipped if agree >= float(value) else fast
                elif kind == "shortlist":
                    keep = np.argsort(-fast, kind="stable")[: int(value)]
                    s = np.full(len(names), -np.inf)
                    s[keep] = shipped[keep]
                else:
                    by_r = np.where(allowed, docs @ r, -np.inf)
                    s = 1 / (60 + ranks(fast)) + float(value) / (60 + ranks(by_r))
                    s = np.where(allowed, s, -np.inf)
                hits[form].append(float(names[int(np.argmax(s))] in gold))
        agreement[catalog] = float(np.mean(same))
        print(
            f"{catalog}: {len(steps)} steps; replayed shipped reason {np.mean(hits['sum 0.8']):.3f}, "
            f"same first choice as served on {agreement[catalog]:.3f}",
            file=sys.stderr,
        )
        table[catalog] = (hits, [s.query.id for s in steps])
    print(f"reason-mode per-step hit@1 on validation, embedder {embedder}; paired 95% intervals against sum 0.8\n")
    print("| form | " + " | ".join(f"{c} ({len(table[c][1])})" for c in catalogs) + " | mean |")
    print("|---|" + "---:|" * (len(catalogs) + 1))
    for form in forms:
        cells = []
        for c in catalogs:
            hits, groups = table[c]
            if form == "sum 0.8":
                cells.append(f"**{np.mean(hits[form]):.3f}**")
            else:
                d = paired_bootstrap(hits[form], hits["sum 0.8"], groups=groups)
                cells.append(f"{np.mean(hits[form]):.3f} ({d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}])")
        mean = np.mean([np.mean(table[c][0][form]) for c in catalogs])
        print(f"| {form} | " + " | ".join(cells) + f" | {mean:.3f} |")


if __name__ == "__main__":
    main()
