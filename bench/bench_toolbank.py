"""Tool-bank benchmark: embedding throughput, search latency at 1k/10k/100k tools, HNSW recall against Flat.

    .venv/bin/python bench/bench_toolbank.py [--sizes 1000,10000,100000] [--queries 200]   # or: make bench

Run it alone (two jobs on 2 cores slow torch several-fold). Tool texts are real: the bundled catalogs
(4,275 tools), replicated with perturbed names and descriptions (words dropped, neighbours swapped, a word
borrowed from another tool) up to the largest size. Embeddings of the replicas are computed once with the
real model and cached in bench/out/, so a second run measures search without re-embedding. Queries are
real benchmark queries. Prints a Markdown table and writes bench/out/toolbank.json.
"""

from __future__ import annotations

import hashlib
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1]))
from toolbank import Tool, ToolBank, load_embedder, load_file
from training.cli import doc_help

DATA = Path(__file__).parents[1] / "autotool" / "data"
OUT = Path(__file__).parent / "out"


def catalog(n: int, seed: int = 0) -> list[Tool]:
    """The bundled tools, then perturbed replicas of them, n in all."""
    base = load_file(DATA / "metatool" / "tools.jsonl")[0] + load_file(DATA / "seal_tools" / "tools.jsonl")[0]
    rng = random.Random(seed)
    vocabulary = sorted({w for t in base for w in t.description.split()})
    tools, copy = list(base[:n]), 0
    while len(tools) < n:
        copy += 1
        for tool in base:
            if len(tools) == n:
                break
            words = tool.description.split() or [tool.name]
            for _ in range(min(2, len(words) - 1)):
                words.pop(rng.randrange(len(words)))
            if len(words) > 2:
                i = rng.randrange(len(words) - 1)
                words[i], words[i + 1] = words[i + 1], words[i]
            words.insert(rng.randrange(len(words) + 1), rng.choice(vocabulary))
            tools.append(Tool(f"{tool.name[:58]}_v{copy}", " ".join(words), tool.parameters))
    return tools


def queries(n: int, seed: int = 0) -> list[str]:
    rows = [
        json.loads(line)["query"] for name in ("metatool", "seal_tools") for line in open(DATA / name / "queries.jsonl")
    ]
    return random.Random(seed).sample(rows, n)


class CachedEmbedder:
    """The real embedder, with tool-text embeddings cached on disk across runs (queries are never cached),
    keyed by the embedder's id and the text."""

    def __init__(self, inner, cache_file: Path):
        self.inner, self.id, self.dim, self.file = inner, inner.id, inner.dim, cache_file
        self.cache: dict[str, np.ndarray] = {}
        if cache_file.exists():
            data = np.load(cache_file)
            self.cache = dict(zip(data["keys"].tolist(), data["vectors"]))

    def remember(self, texts: list[str]) -> None:
        """Embed the texts not cached yet and save the cache."""
        todo = sorted({t for t in texts if self.key(t) not in self.cache})
        if todo:
            self.cache.update(zip(map(self.key, todo), self.inner.encode(todo, progress=True)))
            np.savez(self.file, keys=np.array(list(self.cache)), vectors=np.stack(list(self.cache.values())))

    def key(self, text: str) -> str:
        """The cache key of one text under this embedder (a cache file can hold several embedders' vectors)."""
        return hashlib.sha1(f"{self.id}\0{text}".encode()).hexdigest()

    def encode(self, texts, *, progress=False):
        if all(self.key(t) in self.cache for t in texts):
            return np.stack([self.cache[self.key(t)] for t in texts])
        return self.inner.encode(texts, progress=progress)  # queries: always the real model


def percentiles(seconds: list[float]) -> tuple[float, float]:
    ms = np.array(seconds) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def time_searches(bank: ToolBank, qs: list[str], mode: str, k: int = 10) -> tuple[float, float]:
    bank.search(qs[0], k=k, mode=mode)  # warm: builds BM25, loads the index
    times = []
    for q in qs:
        started = time.perf_counter()
        bank.search(q, k=k, mode=mode)
        times.append(time.perf_counter() - started)
    return percentiles(times)


@click.command(help=doc_help(__doc__))
@click.option("--sizes", default="1000,10000,100000", show_default=True, help="Bank sizes in tools, comma-separated.")
@click.option("--queries", "n_queries", type=int, default=200, show_default=True, help="Real benchmark queries timed.")
def main(sizes: str, n_queries: int) -> None:
    sizes = [int(s) for s in sizes.split(",")]
    OUT.mkdir(exist_ok=True)
    model = load_embedder()
    qs = queries(n_queries)
    rows, results = [], {"sizes": {}}

    # Embedding throughput: a bulk add of 1,000 real tool texts through ToolBank.add (nothing cached).
    tools = catalog(max(sizes))
    with tempfile.TemporaryDirectory() as tmp:
        bank = ToolBank.create(Path(tmp) / "b", model)
        started = time.perf_counter()
        bank.add(tools[:1000])
        results["embed_tools_per_s"] = 1000 / (time.perf_counter() - started)

    # One query at a time, as an agent asks: ONNX Runtime (the library's path for short batches) against
    # sentence-transformers on PyTorch, PyTorch timed before and after to show the noise.
    def time_queries(encode) -> tuple[float, float]:
        seconds = []
        for q in qs:
            started = time.perf_counter()
            encode([q])
            seconds.append(time.perf_counter() - started)
        return percentiles(seconds)

    def torch_encode(texts):
        return model.model.encode(texts, normalize_embeddings=True)

    model.encode(qs[:5])  # warm-up (and the one-time ONNX export)
    torch_encode(qs[:5])
    results["query_embedding_ms"] = {
        "pytorch": time_queries(torch_encode),
        "onnxruntime": time_queries(model.encode),
        "pytorch again": time_queries(torch_encode),
    }
    for what, (p50, p95) in results["query_embedding_ms"].items():
        rows.append((0, f"query embedding only, {what}", p50, p95))
    print(
        f"bulk add: {results['embed_tools_per_s']:.0f} tools/s; query embedding p50/p95 (ms): "
        + json.dumps(results["query_embedding_ms"]),
        flush=True,
    )

    embedder = CachedEmbedder(model, OUT / "embeddings.npz")
    embedder.remember([t.text for t in tools])  # once; cached for later runs
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            bank = ToolBank.create(Path(tmp) / "flat", embedder)
            started = time.perf_counter()
            bank.add(tools[:n])
            add_s = time.perf_counter() - started
            entry = {"add_s_cached_embeddings": add_s}
            for mode in ("dense", "bm25", "hybrid"):
                entry[mode] = time_searches(bank, qs, mode)
                rows.append((n, f"{mode} (Flat)", *entry[mode]))
            vectors = model.encode(qs)  # (q, dim)
            index_times, flat_ids = [], []
            for v in vectors:
                started = time.perf_counter()
                _, ids = bank.index().search(v, 10)
                index_times.append(time.perf_counter() - started)
                flat_ids.append(set(ids.tolist()))
            entry["flat_index_only"] = percentiles(index_times)
            rows.append((n, "FAISS Flat only (no embedding)", *entry["flat_index_only"]))
            if n == max(sizes):
                started = time.perf_counter()
                bank.reindex(index="hnsw")
                entry["hnsw_build_s"] = time.perf_counter() - started
                hnsw_times, recalls = [], []
                for v, truth in zip(vectors, flat_ids):
                    started = time.perf_counter()
                    _, ids = bank.index().search(v, 10)
                    hnsw_times.append(time.perf_counter() - started)
                    recalls.append(len(truth & set(ids.tolist())) / len(truth))
                entry["hnsw_index_only"] = percentiles(hnsw_times)
                entry["hnsw_recall@10"] = float(np.mean(recalls))
                entry["dense_hnsw"] = time_searches(bank, qs, "dense")
                rows.append((n, "FAISS HNSW32 only (no embedding)", *entry["hnsw_index_only"]))
                rows.append((n, "dense (HNSW32)", *entry["dense_hnsw"]))
            results["sizes"][n] = entry
            print(f"{n:,} tools done: " + json.dumps(entry), flush=True)

    results["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (OUT / "toolbank.json").write_text(json.dumps(results, indent=2))
    print("\n| tools | search | p50 ms | p95 ms |\n|---:|---|---:|---:|")
    for n, what, p50, p95 in rows:
        print(f"| {f'{n:,}' if n else '-'} | {what} | {p50:.2f} | {p95:.2f} |")
    big = results["sizes"][max(sizes)]
    print(
        f"\nbulk add with embedding: {results['embed_tools_per_s']:.0f} tools/s; HNSW recall@10 vs Flat at "
        f"{max(sizes):,}: {big['hnsw_recall@10']:.3f} (build {big['hnsw_build_s']:.0f} s); peak RSS {results['peak_rss_mib']:.0f} MiB"
    )


if __name__ == "__main__":
    main()
