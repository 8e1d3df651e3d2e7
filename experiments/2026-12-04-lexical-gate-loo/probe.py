"""Does a per-request gate on fast mode's BM25 prior carry across catalogs where one fixed weight cannot?

    OMP_NUM_THREADS=2 python experiments/2026-12-04-lexical-gate-loo/probe.py --out experiments/2026-12-04-lexical-gate-loo

Fast mode (no reranker) scores each candidate `cos_k + l prior_k`, where the served prior is BM25's score over its
best, `s_k / s_1` (`autotool.selection`). That prior is 1 for BM25's best match whether BM25 is sure of it or not.
The gates below scale it per request by how sure BM25 is, using nothing but the request and the catalog:

- `plain`: `s_k / s_1` (the served prior; its column reproduces the served path, checked against
  2026-12-04-lexical-weight-loo);
- `lead`: `s_k / s_1 * (1 - s_2 / s_1)`, how far BM25's best leads its second;
- `cover`: `s_k / s_1 * c`, c the share of the request's words (3 letters or more) found in BM25's best tool's
  text;
- `lead-cover`: both factors.

Candidates as served: the embedder's best 64 and BM25's best 64 (BM25's are the only ones with a prior), each
request one call, any gold tool a hit. Each gate's weight l is fitted on the mean hit@1 over API-Bank and ToolAlpaca
(ties to the smaller l), and the gate with the best fitted mean is the one chosen, all before the judged catalogs
are read; their figures are written after, for every gate, and choose nothing. Embedders as in
2026-12-04-lexical-weight-loo: `tools` (trained on MetaTool only) for the direction without Seal-Tools, stock for
the direction without MetaTool.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import time
from pathlib import Path

import click
import numpy as np

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from autotool.benchmarks import benchmark_bank, catalog_queries  # noqa: E402
from autotool.metrics import paired_bootstrap  # noqa: E402
from autotool.selection import DEFAULT_TOP_K, StepInput, embedded  # noqa: E402

_spec = importlib.util.spec_from_file_location("judge", ROOT / "experiments/2026-12-01-three-catalogs/judge.py")
judge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(judge)

GRID = (0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0)
GATES = ("plain", "lead", "cover", "lead-cover")
VALIDATION = ("apibank", "toolalpaca")
DIRECTIONS = {"without seal_tools": ("tools", "seal_tools:all:300"), "without metatool": ("stock", "metatool:all:300")}
WORD = re.compile(r"[a-z0-9]{3,}")


def words(text: str) -> set[str]:
    return set(WORD.findall(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text).lower().replace("_", " ")))


def candidates(spec: str, embedder: str) -> list[dict]:
    """Per request: candidate names (dense's best, then BM25's others), cosines, raw BM25 scores, gold, and the
    request's word coverage by BM25's best tool."""
    bench, queries = catalog_queries(spec)
    bank = benchmark_bank(bench, embedder)
    vectors = embedded(bank.embedder, [q.text for q in queries])
    out = []
    for query, vector in zip(queries, vectors):
        dense = bank.search(query.text, k=DEFAULT_TOP_K, mode="dense", query_vector=vector)
        lexical = bank.search(query.text, k=DEFAULT_TOP_K, mode="bm25")
        names = [h.name for h in dense] + [h.name for h in lexical if h.name not in {d.name for d in dense}]
        tools = {h.name: h.tool for h in [*dense, *lexical]}
        cosine = dict((h.name, h.score) for h in dense)
        extra = [n for n in names if n not in cosine]
        if extra:
            cosine.update(zip(extra, (bank.vectors(extra) @ vector).tolist()))
        bm25 = {h.name: h.score for h in lexical}
        best = lexical[0].tool.text if lexical else ""
        asked = words(query.text)
        out.append(
            {
                "names": [tools[n].name for n in names],
                "cos": [float(cosine[n]) for n in names],
                "bm25": [float(bm25.get(n, 0.0)) for n in names],
                "gold": sorted(query.gold_tools),
                "cover": len(asked & words(best)) / len(asked) if asked else 0.0,
            }
        )
    return out


def hits(requests: list[dict], gate: str, weight: float) -> list[float]:
    row = []
    for r in requests:
        cos, s = np.array(r["cos"], dtype=np.float32), np.array(r["bm25"], dtype=np.float32)
        ordered = np.sort(s)[::-1]
        s1 = float(ordered[0]) if len(s) else 0.0
        prior = s / s1 if s1 > 0 else np.zeros_like(s)
        if "lead" in gate and s1 > 0:
            prior = prior * (1 - float(ordered[1]) / s1 if len(s) > 1 else 1.0)
        if "cover" in gate:
            prior = prior * r["cover"]
        chosen = r["names"][int(np.argmax(cos + np.float32(weight) * prior))]  # the first of the best, as served
        row.append(float(chosen in r["gold"]))
    return row


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


@click.command(help=__doc__)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    results, lines = {}, ["# A per-request gate on fast mode's BM25 prior (no reranker), hit@1 per request", ""]
    for direction, (embedder, judged) in DIRECTIONS.items():
        began = time.perf_counter()
        validation = {spec: candidates(spec, embedder) for spec in VALIDATION}
        fitted = {}
        for gate in GATES:
            curve = {w: mean(mean(hits(validation[v], gate, w)) for v in VALIDATION) for w in GRID}
            weight = max(GRID, key=lambda w: (curve[w], -w))
            fitted[gate] = {"weight": weight, "validation_mean": curve[weight], "curve": curve}
        chosen = max(GATES, key=lambda g: (fitted[g]["validation_mean"], -GATES.index(g)))
        # chosen before the judged catalog is read
        requests = candidates(judged, embedder)
        bench, queries = catalog_queries(judged)
        stock, items = benchmark_bank(bench, "stock"), [StepInput(q.text, "", ()) for q in queries]
        golds = [set(q.gold_tools) for q in queries]
        baseline = {m: judge.searched(stock, items, golds, m) for m in ("bm25", "dense", "hybrid")}
        best = max(baseline, key=lambda m: mean(baseline[m]))
        judged_hits = {g: hits(requests, g, fitted[g]["weight"]) for g in GATES}
        results[direction] = {
            "embedder": embedder,
            "judged": judged,
            "chosen": chosen,
            "fitted": fitted,
            "validation": {g: {v: mean(hits(validation[v], g, fitted[g]["weight"])) for v in VALIDATION} for g in GATES},
            "baselines": {m: mean(r) for m, r in baseline.items()},
            "best_baseline": best,
            "judged_hit@1": {g: mean(r) for g, r in judged_hits.items()},
            "paired_vs_best": {g: paired_bootstrap(r, baseline[best]) for g, r in judged_hits.items()},
            "paired_vs_plain": {g: paired_bootstrap(r, judged_hits["plain"]) for g, r in judged_hits.items()},
            "per_item": {**judged_hits, **baseline},
            "ids": [q.id for q in queries],
            "seconds": round(time.perf_counter() - began, 1),
        }
        r = results[direction]
        lines += [
            f"## {direction}: embedder `{embedder}`, judged on {judged}",
            "",
            f"Chosen on validation: `{chosen}`. Stock baselines on {judged}: "
            + ", ".join(f"{m} {v:.3f}" for m, v in r["baselines"].items()),
            "",
            "| gate | fitted l | apibank | toolalpaca | validation mean | judged | minus best | minus plain |",
            "|---|---:|---:|---:|---:|---:|---|---|",
        ]
        for g in GATES:
            pb, pp = r["paired_vs_best"][g], r["paired_vs_plain"][g]
            lines.append(
                f"| {'**' + g + '**' if g == chosen else g} | {fitted[g]['weight']:g} | {r['validation'][g]['apibank']:.3f} "
                f"| {r['validation'][g]['toolalpaca']:.3f} | {fitted[g]['validation_mean']:.3f} "
                f"| {r['judged_hit@1'][g]:.3f} | {pb['mean']:+.3f} [{pb['ci_low']:+.3f}, {pb['ci_high']:+.3f}] "
                f"| {pp['mean']:+.3f} [{pp['ci_low']:+.3f}, {pp['ci_high']:+.3f}] |"
            )
        lines += ["", f"{r['seconds']:.0f} s.", ""]
        print("\n".join(lines[-len(GATES) - 8 :]), flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "results.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
