"""Ranking: BM25 over tool texts and reciprocal rank fusion of two rankings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from toolbank.tool import Tool

MODES = ("dense", "bm25", "hybrid")
RRF_K = 60  # Cormack et al. 2009


@dataclass(frozen=True)
class SearchHit:
    """One ranked tool. `score` is cosine (dense), BM25 score (bm25) or the RRF sum (hybrid)."""

    tool: Tool
    score: float

    @property
    def name(self) -> str:
        return self.tool.name


class BM25Index:
    """bm25s over tool texts, English stopwords, no stemming; ids are the store's row ids."""

    def __init__(self, ids: Sequence[int], texts: Sequence[str]):
        import bm25s

        self.ids = np.asarray(ids, dtype=np.int64)
        self.retriever = bm25s.BM25()
        corpus = bm25s.tokenize(list(texts), stopwords="en", show_progress=False) if len(texts) else None
        self.indexed = corpus is not None and bool(corpus.vocab)  # bm25s fails on a corpus without a word
        if self.indexed:
            self.retriever.index(corpus, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """(n,) BM25 score of every tool, in `self.ids` order."""
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        tokens = [t for t in tokens if t in self.retriever.vocab_dict] if self.indexed else []
        if not tokens:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self.retriever.get_scores(tokens), dtype=np.float32)

    def search(self, query: str, k: int, allowed_ids: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (scores, ids) with a positive score, best first."""
        scores = self.scores(query)
        if allowed_ids is not None:
            scores = np.where(np.isin(self.ids, np.asarray(allowed_ids, dtype=np.int64)), scores, 0.0)
        candidates = np.flatnonzero(scores > 0)
        order = candidates[np.lexsort((self.ids[candidates], -scores[candidates]))][:k]  # ties: lower id first
        return scores[order], self.ids[order]


def reciprocal_rank_fusion(*rankings: Sequence[int], k: int = RRF_K) -> list[tuple[int, float]]:
    """Fuse rankings of ids: score(id) = sum over rankings of 1 / (k + rank), rank from 1. Best first."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
