"""Ranking: BM25 over tool texts and reciprocal rank fusion of two rankings."""

from __future__ import annotations

import json
import logging
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolbank.paths import atomic_path
from toolbank.tool import Tool

MODES = ("dense", "bm25", "hybrid")
RRF_K = 60  # Cormack et al. 2009


@dataclass(frozen=True)
class SearchHit:
    """One ranked tool. `score` is the cosine with the request (dense), the BM25 score (bm25), or (hybrid) the
    reciprocal-rank-fusion sum over its best possible value, in (0, 1] (1: first in both rankings), the same
    scale for every request. `cosine` is the request's cosine with the tool (dense and hybrid; None for bm25):
    how well the tool fits, comparable across requests, to threshold on."""

    tool: Tool
    score: float
    cosine: float | None = None

    @property
    def name(self) -> str:
        """The tool's qualified name (`namespace/name`; its name when it has no namespace)."""
        return self.tool.qualified_name


class BM25Index:
    """bm25s over tool texts, English stopwords, no stemming; ids are the store's row ids.

    bm25s computes every (word, tool) score when it indexes (its eager "lucene" BM25); a query's scores are
    sums of those. The index is kept as those arrays, so it can be saved (`save`) and a saved one loaded and
    queried (`load`) without importing bm25s (and scipy), with the scores bm25s would give.
    """

    def __init__(self, ids: Sequence[int], texts: Sequence[str]):
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.NOTSET)  # bm25s sets DEBUG on import; take the application's
        self.ids = np.asarray(ids, dtype=np.int64)
        corpus = bm25s.tokenize(list(texts), stopwords="en", show_progress=False) if len(texts) else None
        self.vocab: dict[str, int] = {}
        self.data = np.zeros(0, np.float32)
        self.indices = np.zeros(0, np.int32)
        self.indptr = np.zeros(1, np.int32)
        if corpus is not None and corpus.vocab:  # bm25s fails on a corpus without a word
            retriever = bm25s.BM25()
            retriever.index(corpus, show_progress=False)
            self.vocab = dict(retriever.vocab_dict)
            self.data, self.indices, self.indptr = (retriever.scores[k] for k in ("data", "indices", "indptr"))

    @property
    def indexed(self) -> bool:
        return bool(self.vocab)

    def scores(self, query: str) -> np.ndarray:
        """(n,) BM25 score of every tool, in `self.ids` order."""
        # bm25s.tokenize's words (lower-cased, `\b\w\w+\b`); a stopword is never in the vocabulary
        columns = [self.vocab[t] for t in _WORD.findall(query.lower()) if t in self.vocab]
        scores = np.zeros(len(self.ids), dtype=np.float32)
        for column in columns:  # as bm25s sums them: word by word, in the query's order
            start, end = self.indptr[column], self.indptr[column + 1]
            np.add.at(scores, self.indices[start:end], self.data[start:end])
        return scores

    def search(self, query: str, k: int, allowed_ids: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (scores, ids) with a positive score, best first."""
        scores = self.scores(query)
        if allowed_ids is not None:
            scores = np.where(np.isin(self.ids, np.asarray(allowed_ids, dtype=np.int64)), scores, 0.0)
        candidates = np.flatnonzero(scores > 0)
        order = candidates[np.lexsort((self.ids[candidates], -scores[candidates]))][:k]  # ties: lower id first
        return scores[order], self.ids[order]

    def save(self, path: Path, generation: int) -> None:
        """Write the index (for the store's `generation`) to `path` through `atomic_path`."""
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            np.savez(
                f,
                version=np.int64(_SAVED_VERSION),
                generation=np.int64(generation),
                ids=self.ids,
                data=self.data,
                indices=self.indices,
                indptr=self.indptr,
                vocab=np.array(json.dumps(self.vocab, ensure_ascii=False)),
            )

    @classmethod
    def load(cls, path: Path, generation: int, count: int) -> BM25Index | None:
        """The index saved at `path` when it is readable and was built from `generation` with `count` tools; else None."""
        try:
            with np.load(path, allow_pickle=False) as saved:
                if (int(saved["version"]), int(saved["generation"]), len(saved["ids"])) != (
                    _SAVED_VERSION,
                    generation,
                    count,
                ):
                    return None
                index = object.__new__(cls)
                index.ids, index.data, index.indices, index.indptr = (
                    saved[k] for k in ("ids", "data", "indices", "indptr")
                )
                index.vocab = json.loads(str(saved["vocab"]))
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
            return None
        if not isinstance(index.vocab, dict) or len(index.indptr) < 1:
            return None
        return index


_WORD = re.compile(r"(?u)\b\w\w+\b")  # bm25s.tokenize's default token pattern
_SAVED_VERSION = 1


def reciprocal_rank_fusion(*rankings: Sequence[int], k: int = RRF_K) -> list[tuple[int, float]]:
    """Fuse rankings of ids: score(id) = sum over rankings of 1 / (k + rank), rank from 1. Best first."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
