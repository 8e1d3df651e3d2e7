"""Two embedders as two views: fast mode's score with the stock embedder's cosine mixed in, judged both ways.

    OMP_NUM_THREADS=2 python experiments/2026-12-04-two-embedders/probe.py --out experiments/2026-12-04-two-embedders

Fast mode without the reranker chooses by `cos_tuned + l bm25` (the served path's logits, up to the softmax).
This probe scores every tool of the catalog by

    (1 - m) cos_tuned + m cos_stock + l bm25

where cos_stock is the request's cosine with the tool under stock all-MiniLM-L6-v2 and bm25 is the request's BM25
score over the best one's (as `normalised_bm25`). m = 0 is fast mode; m = 1, l = 0 is stock dense. One call per
request, no context, any gold tool a hit, ties at their expected value. (m, l) is fitted on the mean hit@1 over
API-Bank and ToolAlpaca (every request; ties go to the smaller m, then the smaller l); the judged catalog's
300 requests (seed 0, those of the leave-one-out records) choose nothing. Its figures are paired against the
best of BM25, stock dense and hybrid (through `bank.search`, as in the other leave-one-out records) and against
fast mode without the reranker at the l fitted the same way with m = 0.

Every tool is scored (the served path scores the dense and BM25 top 64; `--check` compares m = 0 with it).

Directions:
- without Seal-Tools: the `tools` embedder (fine-tuned on MetaTool only), judged on seal_tools:all:300;
- without MetaTool: the embedder of 2026-12-04-name-word-dropout without dropout (Seal-Tools and BFCL,
  `runs/embedder-no-metatool-dropout-0/adapter`, retrained as 2026-12-03-loo-metatool-full's), judged on
  metatool:all:300.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import click
import numpy as np

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from autotool.benchmarks import benchmark_bank, catalog_queries  # noqa: E402
from autotool.metrics import paired_bootstrap  # noqa: E402
from autotool.select import SHIPPED_POLICY  # noqa: E402
from autotool.selection import StepInput, normalised_bm25  # noqa: E402

_spec = importlib.util.spec_from_file_location("judge", ROOT / "experiments/2026-12-01-three-catalogs/judge.py")
judge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(judge)

MIX = tuple(round(x * 0.1, 1) for x in range(11))
LEXICAL = (0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5)
VALIDATION = ("apibank", "toolalpaca")
BASELINES = ("bm25", "dense", "hybrid")
DIRECTIONS = {
    "without seal_tools": ("tools", "seal_tools:all:300"),
    "without metatool": (str(ROOT / "runs/embedder-no-metatool-dropout-0/adapter"), "metatool:all:300"),
}


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def hit(scores: np.ndarray, gold: np.ndarray) -> float:
    """hit@1 with ties at their expected value."""
    top = scores >= scores.max() - 1e-6
    return float((top & gold).sum() / top.sum())


def grid(spec: str, embedder: str, check: bool) -> dict:
    """hit@1 per request of `spec` for every (m, l), and the stock baselines on the same requests."""
    bench, queries = catalog_queries(spec)
    stock, tuned = benchmark_bank(bench, "stock"), benchmark_bank(bench, embedder)
    tools = list(tuned)
    names = [t.name for t in tools]
    qualified = [t.qualified_name for t in tools]
    texts = [q.text for q in queries]
    cos = {
        label: unit(bank.embedder.encode(texts)) @ bank.vectors(qualified).T for label, bank in
        (("tuned", tuned), ("stock", stock))
    }
    bm25 = np.zeros_like(cos["tuned"])
    where = {n: i for i, n in enumerate(qualified)}
    for row, text in enumerate(texts):
        found = tuned.search(text, k=len(tools), mode="bm25")
        bm25[row, [where[h.name] for h in found]] = normalised_bm25(np.array([h.score for h in found]))
    golds = np.array([[n in q.gold_tools for n in names] for q in queries])
    items = [StepInput(t, "", ()) for t in texts]
    gold_sets = [set(q.gold_tools) for q in queries]
    hits = {m: judge.searched(stock, items, gold_sets, m) for m in BASELINES}
    for m in MIX:
        for lexical in LEXICAL:
            scores = (1 - m) * cos["tuned"] + m * cos["stock"] + lexical * bm25
            hits[f"m={m:g},l={lexical:g}"] = [hit(s, g) for s, g in zip(scores, golds)]
    if check:  # the served path, m = 0, at the shipped policy's head with l replaced
        import dataclasses

        policy = judge.policy_for(SHIPPED_POLICY, tuned)
        head = policy.head_values
        for lexical in (0.0, 0.1):
            policy._saved_values = dataclasses.replace(head, lexical=lexical, lexical_later=lexical)
            served = judge.selected(policy, tuned, items, gold_sets, "fast:norerank", 32)
            ours = hits[f"m=0,l={lexical:g}"]
            print(f"check {spec} l={lexical:g}: served {np.mean(served):.3f}, probe {np.mean(ours):.3f}, "
                  f"{sum(a != b for a, b in zip(served, ours))} requests differ", flush=True)
    return {"ids": [q.id for q in queries], "per_item": hits}


def mean(values) -> float:
    return float(np.mean(values))


@click.command(help=__doc__)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Folder for results.json and results.md.")
@click.option("--check", is_flag=True, help="Also run the served path at m = 0 (l = 0, 0.1) and compare.")
def main(out: Path, check: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    results, lines = {}, ["# fast mode's score with the stock embedder's cosine mixed in, per request", ""]
    for direction, (embedder, judged) in DIRECTIONS.items():
        began = time.perf_counter()
        specs = [*VALIDATION, judged]
        grids = {spec: grid(spec, embedder, check) for spec in specs}

        def validation(key: str) -> float:
            return mean([mean(grids[v]["per_item"][key]) for v in VALIDATION])

        fitted = max(((m, x) for m in MIX for x in LEXICAL), key=lambda p: (validation(f"m={p[0]:g},l={p[1]:g}"),
                                                                         -p[0], -p[1]))
        fast_l = max(LEXICAL, key=lambda x: (validation(f"m=0,l={x:g}"), -x))
        dense_m = max(MIX, key=lambda m: (validation(f"m={m:g},l=0"), -m))
        hits = grids[judged]["per_item"]
        best = max(BASELINES, key=lambda m: mean(hits[m]))
        chosen = {"fitted (m, l)": f"m={fitted[0]:g},l={fitted[1]:g}", "fast (m = 0, l fitted)": f"m=0,l={fast_l:g}",
                  "dense mix (l = 0, m fitted)": f"m={dense_m:g},l=0", "tuned dense (m = 0, l = 0)": "m=0,l=0"}
        paired = {label: {"key": key, "hit@1": {s: mean(grids[s]["per_item"][key]) for s in specs},
                          "minus_best": paired_bootstrap(hits[key], hits[best]),
                          "minus_fast": paired_bootstrap(hits[key], hits[chosen["fast (m = 0, l fitted)"]])}
                  for label, key in chosen.items()}
        results[direction] = {"embedder": embedder, "judged": judged, "best_baseline": best, "chosen": paired,
                              "seconds": round(time.perf_counter() - began, 1), "grids": grids}
        lines += [f"## {direction}: embedder `{Path(embedder).name if '/' in embedder else embedder}`, judged on "
                  f"{judged}", "", "Stock baselines: " + "; ".join(
                      f"{s}: " + ", ".join(f"{m} {mean(grids[s]['per_item'][m]):.3f}" for m in BASELINES)
                      for s in specs), "",
                  "| chosen on validation | m, l | " + " | ".join(specs) + f" | {judged} minus {best} | "
                  "minus fast |", "|---|---|" + "---:|" * len(specs) + "---|---|"]
        for label, p in paired.items():
            b, f = p["minus_best"], p["minus_fast"]
            lines.append(f"| {label} | {p['key']} | " + " | ".join(f"{p['hit@1'][s]:.3f}" for s in specs)
                         + f" | {b['mean']:+.3f} [{b['ci_low']:+.3f}, {b['ci_high']:+.3f}]"
                         f" | {f['mean']:+.3f} [{f['ci_low']:+.3f}, {f['ci_high']:+.3f}] |")
        lines += ["", f"hit@1 on {judged} (rows m, columns l; not used to choose):", "",
                  "| m | " + " | ".join(f"l={x:g}" for x in LEXICAL) + " |", "|---:|" + "---:|" * len(LEXICAL)]
        lines += [f"| {m:g} | " + " | ".join(f"{mean(hits[f'm={m:g},l={x:g}']):.3f}" for x in LEXICAL) + " |"
                  for m in MIX]
        lines += ["", "Validation mean (API-Bank, ToolAlpaca):", "",
                  "| m | " + " | ".join(f"l={x:g}" for x in LEXICAL) + " |", "|---:|" + "---:|" * len(LEXICAL)]
        lines += [f"| {m:g} | " + " | ".join(f"{validation(f'm={m:g},l={x:g}'):.3f}" for x in LEXICAL) + " |"
                  for m in MIX]
        lines += ["", f"{results[direction]['seconds']:.0f} s.", ""]
        print("\n".join(lines), flush=True)
    (out / "results.json").write_text(json.dumps(results, separators=(",", ":")) + "\n")  # 99 grid points
    (out / "results.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
