"""Fast-mode per-step hit@1 of the shipped policy when the BM25 prior's weight follows the request (a gate),
against the shipped constant weights, on validation data of four catalogs: the val splits of Seal-Tools and
MetaTool and every request of API-Bank and ToolAlpaca (foreign validation). Issue #23, lever 2.

    python experiments/2026-12-01-lexical-gate/gates.py [--embedder default|tools] > experiments/2026-12-01-lexical-gate/gates-default.txt

Each step's candidates are computed once, as the served path computes them (`autotool.selection`: the dense
top 64 by the anchor, which in fast mode with W = 0 is the request's embedding, and the BM25 top 64,
normalised over every tool, the called ones excluded); then each gate gives the step's weight w and the
choice is the first most probable candidate of softmax(2 g (cos + w bm25)). The row `constant 0.1 / 0.7`
is the shipped head and must equal the served path's figures (checked against `select_steps` here).

Gates (L: the weight at full confidence; s1, s2: the best two raw BM25 scores of the step):
- constant l / l_later: the shipped form, one weight at first steps and one at later steps;
- peak L: w = L (s1 - s2) / s1, BM25's margin over its runner-up;
- agree L: w = L when BM25's best tool is among the dense top 3, else 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
import numpy as np

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, load_benchmark, load_split, select_queries, step_input, steps_of
from autotool.metrics import paired_bootstrap
from autotool.policy import Policy
from autotool.select import SHIPPED_POLICY, select_steps
from autotool.selection import DEFAULT_TOP_K, embedded, normalised_bm25

CATALOGS = ("seal_tools", "metatool", "apibank", "toolalpaca")


def step_candidates(bank, item, query_vector):
    """(names, cosines, normalised BM25, raw BM25 top two) of one step, in the served path's order."""
    called = set(item.exclude)
    depth = DEFAULT_TOP_K + len(called)
    dense = [
        h for h in bank.search(item.query, k=depth, mode="dense", query_vector=query_vector) if h.name not in called
    ]
    dense = dense[:DEFAULT_TOP_K]
    cosine = {h.name: h.score for h in dense}
    hits = bank.search(item.query, k=depth, mode="bm25")
    raw = np.array([h.score for h in hits], dtype=np.float32)
    scores = normalised_bm25(raw)
    kept = [(h, s) for h, s in zip(hits, scores) if h.name not in called][:DEFAULT_TOP_K]
    lexical = {h.name: float(s) for h, s in kept}
    names = list(cosine) + [h.name for h, _ in kept if h.name not in cosine]
    extra = [n for n in names if n not in cosine]
    if extra:
        cosine.update(zip(extra, (bank.vectors(extra) @ query_vector).tolist()))
    top = sorted(raw.tolist(), reverse=True)[:2] + [0.0, 0.0]
    return (
        names,
        np.array([cosine[n] for n in names]),
        np.array([lexical.get(n, 0.0) for n in names]),
        top[:2],
        [h.name for h in dense[:3]],
        kept[0][0].name if kept else None,
    )


def choose(names, cos, bm25, g, w):
    scores = cos + w * bm25
    return names[int(np.argmax(2 * g * scores))]


@click.command()
@click.option(
    "--embedder", default="default", show_default=True, help="Bank embedder: default (stock) or tools (tuned)."
)
def main(embedder):
    gates = {"constant 0.1 / 0.7 (shipped)": lambda c, later: 0.7 if later else 0.1}
    for l_first in (0.0, 0.1, 0.3):
        for l_later in (0.0, 0.3, 0.7, 1.0):
            gates[f"constant {l_first} / {l_later}"] = lambda c, later, a=l_first, b=l_later: b if later else a
    for full in (0.3, 0.5, 1.0, 2.0):
        gates[f"peak {full}"] = lambda c, later, full=full: (
            full * (c["top"][0] - c["top"][1]) / c["top"][0] if c["top"][0] > 0 else 0.0
        )
        gates[f"agree {full}"] = lambda c, later, full=full: full if c["bm25_best"] in c["dense3"] else 0.0
    hits = {name: {} for name in gates}
    counts, groups = {}, {}
    for catalog in CATALOGS:
        bench = load_benchmark(catalog)
        queries = (
            select_queries(bench, load_split(bench, 0), "val")
            if catalog in ("seal_tools", "metatool")
            else bench.queries
        )
        steps = [s for q in queries for s in steps_of(q)]
        bank = benchmark_bank(bench, embedder=embedder)
        policy = Policy.load(SHIPPED_POLICY, bank)  # it reads both embedders (`also_reads`)
        values = policy.head_values
        items = [step_input(bank, s) for s in steps]
        vectors = embedded(bank.embedder, [i.query for i in items])
        cases = []
        for item, step, vector in zip(items, steps, vectors):
            anchor = values.anchors(None, vector[None], None)[0]
            names, cos, bm25, top, dense3, bm25_best = step_candidates(bank, item, anchor)
            cases.append(
                {
                    "names": names,
                    "cos": cos,
                    "bm25": bm25,
                    "top": top,
                    "dense3": dense3,
                    "bm25_best": bm25_best,
                    "gold": {step.gold} if isinstance(step.gold, str) else set(step.gold),
                    "later": item.later,
                    "query": step.query.id,
                }
            )
        for name, gate in gates.items():
            hits[name][catalog] = [
                float(choose(c["names"], c["cos"], c["bm25"], values.g, gate(c, c["later"])) in c["gold"])
                for c in cases
            ]
        served = []
        for start in range(0, len(items), 64):
            for selection, step in zip(
                select_steps(
                    policy, bank, items[start : start + 64], k=1, mode="fast", arguments=False, min_cosine=0.0
                ),
                steps[start : start + 64],
            ):
                served.append(float(selection.candidates[0][0].name in step.gold))
        shipped = hits["constant 0.1 / 0.7 (shipped)"][catalog]
        assert abs(np.mean(served) - np.mean(shipped)) < 0.01, (catalog, np.mean(served), np.mean(shipped))
        counts[catalog] = (len(cases), sum(c["later"] for c in cases))
        groups[catalog] = [c["query"] for c in cases]
        print(
            f"{catalog}: {len(cases)} steps, served path {np.mean(served):.3f}, replayed {np.mean(shipped):.3f}",
            file=sys.stderr,
        )
    print(f"fast-mode per-step hit@1 on validation, embedder {embedder}; shipped l = 0.1, l_later = 0.7\n")
    print(
        "| gate | "
        + " | ".join(f"{c} ({counts[c][0]} / {counts[c][1]} later)" for c in CATALOGS)
        + " | mean | minus shipped, apibank [95%] |"
    )
    print("|---|" + "---:|" * (len(CATALOGS) + 2))
    base = hits["constant 0.1 / 0.7 (shipped)"]
    for name in gates:
        cells = [f"{np.mean(hits[name][c]):.3f}" for c in CATALOGS]
        d = paired_bootstrap(hits[name]["apibank"], base["apibank"], groups=groups["apibank"])
        mean = np.mean([np.mean(hits[name][c]) for c in CATALOGS])
        print(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {mean:.3f} | {d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] |"
        )


if __name__ == "__main__":
    main()
