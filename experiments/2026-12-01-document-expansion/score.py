"""Per-step hit@1 with and without the generated example requests as extra views of each tool (issue #23,
lever 4), on validation data: every request of API-Bank and ToolAlpaca (foreign validation) and MetaTool's val
split.

    python experiments/2026-12-01-document-expansion/score.py [--embedder default|tools] [CATALOGS...]

Each tool k has its document embedding d_k and the embeddings v_kj of its example requests
(`requests-<catalog>.jsonl`, from generate.py). A step's request q (the served path's fast-mode anchor: W = 0,
no rationale, so E(q)) scores each tool by one of:
- doc: q.d_k (no expansion: dense retrieval, and with the BM25 prior the shipped fast mode);
- max: max(q.d_k, max_j q.v_kj);
- mix b: (q.d_k + b max_j q.v_kj) / (1 + b);
- mean b: (q.d_k + b mean_j q.v_kj) / (1 + b);
- fold b: q.normalize(d_k + b mean_j v_kj), one vector per tool (what a bank could store in place of d_k).
Every tool of the catalog is scored (the catalogs here are smaller than the served path's 64 + 64 candidates
would make a difference for; `doc` with the prior is checked against `select_steps`). Fast mode adds the
shipped head's BM25 prior: score + l * bm25 / max bm25 (l = 0.1 at first steps, 0.7 at later ones); `+ bm25x`
rows index the document and its example requests together for BM25. Tools called at earlier steps are
excluded, as the served path excludes them.
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
from autotool.select import SHIPPED_POLICY, select_steps
from autotool.selection import embedded, normalised_bm25
from toolbank.search import BM25Index

HERE = Path(__file__).parent


def views(catalog):
    rows = [json.loads(line) for line in (HERE / f"requests-{catalog}.jsonl").read_text().splitlines()]
    return {r["name"]: r["requests"] for r in rows}


@click.command()
@click.argument("catalogs", nargs=-1)
@click.option("--embedder", default="default", show_default=True)
@click.option(
    "--round-trip",
    is_flag=True,
    help="Keep an example request only when its own tool's document is the nearest to it (round-trip filter).",
)
def main(catalogs, embedder, round_trip):
    catalogs = catalogs or ("apibank", "toolalpaca", "metatool")
    forms = {"doc": None, "max": ("max", None)}
    for b in (0.25, 0.5, 1.0):
        forms[f"mix {b}"] = ("mix", b)
        forms[f"mean {b}"] = ("mean", b)
        forms[f"fold {b}"] = ("fold", b)
    table = {}
    for catalog in catalogs:
        bench = load_benchmark(catalog)
        queries = select_queries(bench, load_split(bench, 0), "val") if catalog in ("metatool", "seal_tools") else bench.queries
        steps = [s for q in queries for s in steps_of(q)]
        bank = benchmark_bank(bench, embedder=embedder)
        policy = Policy.load(SHIPPED_POLICY, bank)
        head = policy.head_values
        tools = list(bank)
        names = [t.qualified_name for t in tools]
        docs = bank.vectors(names)  # (n, dim)
        examples = views(catalog)
        owner, texts = [], []
        for k, t in enumerate(tools):
            for text in examples.get(t.name, []):
                owner.append(k)
                texts.append(text)
        owner = np.array(owner)
        view_vectors = embedded(bank.embedder, texts)  # (m, dim)
        if round_trip and len(texts):
            keep = np.argmax(view_vectors @ docs.T, axis=1) == owner
            owner, view_vectors = owner[keep], view_vectors[keep]
            kept = {}
            for k, text in zip(owner.tolist(), np.array(texts, dtype=object)[keep].tolist()):
                kept.setdefault(tools[k].name, []).append(text)
            examples, texts = kept, [t for t, k in zip(texts, keep) if k]
        bm25_plain = BM25Index(range(len(tools)), [t.text for t in tools])
        bm25_expanded = BM25Index(
            range(len(tools)), [t.text + "\n" + "\n".join(examples.get(t.name, [])) for t in tools]
        )
        sums = np.zeros_like(docs)
        np.add.at(sums, owner, view_vectors)
        counts = np.maximum(np.bincount(owner, minlength=len(tools)), 1)[:, None]
        folded = {b: docs + b * sums / counts for b in (0.25, 0.5, 1.0)}
        folded = {b: f / np.linalg.norm(f, axis=1, keepdims=True) for b, f in folded.items()}
        items = [step_input(bank, s) for s in steps]
        qv = embedded(bank.embedder, [i.query for i in items])
        hits = {}
        for item, step, q in zip(items, steps, qv):
            gold = {step.gold} if isinstance(step.gold, str) else set(step.gold)
            allowed = np.array([n not in set(item.exclude) for n in names])
            d = docs @ q
            v = view_vectors @ q
            vmax = np.full(len(tools), -1.0, dtype=np.float32)
            np.maximum.at(vmax, owner, v)
            vsum = np.bincount(owner, weights=v, minlength=len(tools))
            vcount = np.maximum(np.bincount(owner, minlength=len(tools)), 1)
            vmean = vsum / vcount
            has = np.bincount(owner, minlength=len(tools)) > 0
            vmax = np.where(has, vmax, d)
            vmean = np.where(has, vmean, d)
            l = head.lexical_later if item.later else head.lexical
            lex = {"": normalised_bm25(bm25_plain.scores(item.query)), " + bm25x": normalised_bm25(bm25_expanded.scores(item.query))}
            for form, spec in forms.items():
                if spec is None:
                    s = d
                elif spec[0] == "max":
                    s = np.maximum(d, vmax)
                elif spec[0] == "mix":
                    s = (d + spec[1] * vmax) / (1 + spec[1])
                elif spec[0] == "mean":
                    s = (d + spec[1] * vmean) / (1 + spec[1])
                else:
                    s = folded[spec[1]] @ q
                for label, score in [(f"dense, {form}", s)] + [
                    (f"fast, {form}{suffix}", s + l * b) for suffix, b in lex.items()
                ]:
                    masked = np.where(allowed, score, -np.inf)
                    hits.setdefault(label, []).append(float(names[int(np.argmax(masked))] in gold))
            b = lex[""]
            hits.setdefault("bm25", []).append(float(names[int(np.argmax(np.where(allowed, b, -np.inf)))] in gold))
        served = []
        for start in range(0, len(items), 64):
            for sel, step in zip(
                select_steps(policy, bank, items[start : start + 64], k=1, mode="fast", arguments=False, min_cosine=0.0),
                steps[start : start + 64],
            ):
                served.append(float(sel.candidates[0][0].name in step.gold))
        print(
            f"{catalog}: {len(steps)} steps, {len(texts)} example requests for {len(tools)} tools; "
            f"served fast {np.mean(served):.3f}, replayed {np.mean(hits['fast, doc']):.3f}",
            file=sys.stderr,
        )
        table[catalog] = (hits, [s.query.id for s in steps])
    print(f"per-step hit@1, embedder {embedder}, round-trip filter {'on' if round_trip else 'off'}; paired 95% intervals against the same mode without expansion\n")
    labels = list(table[catalogs[0]][0])
    print("| scoring | " + " | ".join(catalogs) + " | mean |")
    print("|---|" + "---:|" * (len(catalogs) + 1))
    for label in labels:
        cells = []
        for c in catalogs:
            hits, groups = table[c]
            base = hits["fast, doc"] if label.startswith("fast") else hits["dense, doc"]
            value = np.mean(hits[label])
            if label in ("fast, doc", "dense, doc", "bm25"):
                cells.append(f"{value:.3f}")
            else:
                d = paired_bootstrap(hits[label], base, groups=groups)
                cells.append(f"{value:.3f} ({d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}])")
        mean = np.mean([np.mean(table[c][0][label]) for c in catalogs])
        print(f"| {label} | " + " | ".join(cells) + f" | {mean:.3f} |")


if __name__ == "__main__":
    main()
