"""The FAISS index: derived from the store, keyed by its row ids, rebuilt when missing, corrupt or stale.

`index.faiss` is the index; `index.json` records the store generation it was built from and the sha256 of
`index.faiss`. Both are written to a temporary file and renamed, the JSON last, so a reader sees a matching
pair or rebuilds; a body that no longer matches its checksum (a damaged disk or copy) is rebuilt, with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path

import faiss
import numpy as np

from toolbank.paths import atomic_path, atomic_write

INDEX_ALIASES = {"flat": "IDMap2,Flat", "hnsw": "IDMap2,HNSW32"}
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 256  # recall@10 against Flat at 100k real tool texts: 0.975 (128: 0.943), 0.95 ms a search

log = logging.getLogger(__name__)


class IndexFactoryError(ValueError):
    """An index factory string FAISS cannot build."""


def resolve_factory(factory: str) -> str:
    """`flat`/`hnsw` or a FAISS factory string -> a factory string that starts with `IDMap2,`."""
    factory = INDEX_ALIASES.get(factory.lower(), factory)
    return factory if factory.startswith("IDMap2,") else f"IDMap2,{factory}"


class VectorIndex:
    """Inner-product search over unit vectors, keyed by int64 ids."""

    def __init__(self, index: faiss.Index, factory: str, generation: int):
        self.index, self.factory, self.generation = index, factory, generation
        inner = faiss.downcast_index(faiss.downcast_index(index).index)
        if isinstance(inner, faiss.IndexHNSW):  # built here or saved by any version: the same breadths
            inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            inner.hnsw.efSearch = HNSW_EF_SEARCH

    @classmethod
    def build(cls, factory: str, dim: int, ids: np.ndarray, vectors: np.ndarray, generation: int) -> VectorIndex:
        factory = resolve_factory(factory)
        try:
            index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as e:
            reason = re.sub(r"^Error in .* at \S+:\d+: ", "", str(e).strip().splitlines()[-1])  # FAISS's C++ location
            raise IndexFactoryError(f"FAISS cannot build index {factory!r}: {reason}") from None
        out = cls(index, factory, generation)
        out.add(ids, vectors, generation)
        return out

    @property
    def ntotal(self) -> int:
        return self.index.ntotal

    def add(self, ids: np.ndarray, vectors: np.ndarray, generation: int) -> None:
        if len(ids):
            if not self.index.is_trained:
                self.index.train(vectors)
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), ids.astype(np.int64))
        self.generation = generation

    def search(self, query: np.ndarray, k: int, allowed_ids: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (scores, ids) for one (dim,) query; ids of -1 (padding) are dropped."""
        k = min(k, self.ntotal)
        if k <= 0:
            return np.zeros(0, np.float32), np.zeros(0, np.int64)
        params = None
        if allowed_ids is not None:
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(np.asarray(allowed_ids, dtype=np.int64)))
        scores, ids = self.index.search(query.reshape(1, -1).astype(np.float32), k, params=params)
        keep = ids[0] >= 0
        return scores[0][keep], ids[0][keep]

    def save(self, folder: Path) -> None:
        with atomic_path(folder / "index.faiss") as tmp:
            faiss.write_index(self.index, str(tmp))
            with open(tmp, "rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
        atomic_write(
            folder / "index.json",
            json.dumps(
                {"generation": self.generation, "factory": self.factory, "ntotal": self.ntotal, "sha256": digest}
            ),
        )

    @classmethod
    def load(cls, folder: Path, factory: str, generation: int, count: int, warn: bool = True) -> VectorIndex | None:
        """The saved index if it is present, readable, matches its checksum and was built from `generation` with
        `factory`; else None (a checksum mismatch is logged as a warning when `warn`)."""
        try:
            meta = json.loads((folder / "index.json").read_text())
            if (meta.get("generation"), meta.get("factory"), meta.get("ntotal")) != (generation, factory, count):
                return None
            data = (folder / "index.faiss").read_bytes()
            if hashlib.sha256(data).hexdigest() != meta.get("sha256"):
                if warn and "sha256" in meta:  # an index saved before checksums is rebuilt without a word
                    log.warning(
                        "warning: %s does not match the checksum in index.json (damaged); rebuilding it "
                        "from bank.sqlite",
                        folder / "index.faiss",
                    )
                return None
            index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        except (OSError, ValueError, RuntimeError, AttributeError):  # AttributeError: index.json not an object
            return None
        if index.ntotal != count:
            return None
        return cls(index, factory, generation)
