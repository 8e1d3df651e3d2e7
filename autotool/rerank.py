"""The reranker: a cross-encoder that reads a request and a tool's text together and scores the pair.

A policy whose folder holds `reranker/` (with the manifest's `rerank: {"top": N, "weight": c}`) reorders each
step's N best candidates: their probabilities become `P_N softmax_k(log p_k + c s_k)`, with `s_k` the
cross-encoder's score of (request, tool k's text) and `P_N` the probability the N held before, so the tools below
them keep theirs. The bi-encoder behind the anchor embeds the request and the tool apart and cannot weigh one
against the other; the cross-encoder reads them together (experiments/2026-12-02-reranker). It is trained by
`python -m training.reranker`: a LoRA adapter and a new scoring layer over all-MiniLM-L6-v2, a few MB.

It runs on ONNX Runtime: the adapter is merged into the base and exported to ONNX once, with PyTorch and peft
(a few seconds), kept under `$AUTOTOOL_HOME/models/onnx/`, keyed by a digest of the adapter's files; after that,
scoring imports neither PyTorch nor sentence-transformers, so fast mode stays free of them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from autotool.selection import Candidate
from toolbank.embed import STOCK_EMBEDDER, default_model_folder, export_bert
from toolbank.paths import autotool_home

log = logging.getLogger(__name__)
RERANKER_CONFIG = "reranker.json"  # {"base": STOCK_EMBEDDER, "max_length": tokens of a pair}
SHIPPED_RERANKER = "autotool/all-MiniLM-L6-v2-rerank"  # trained by `make train-reranker`
SHIPPED_RERANKERS = {SHIPPED_RERANKER: Path(__file__).parent / "rerankers" / "all-MiniLM-L6-v2-rerank"}
_FILES = ("adapter_config.json", "adapter_model.safetensors", RERANKER_CONFIG)


class RerankerError(ValueError):
    """A reranker folder is missing, unreadable or not over the stock model."""


def _config(folder: Path) -> dict:
    path = folder / RERANKER_CONFIG
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise RerankerError(f"{path}: expected JSON naming the reranker's base and max_length ({e})") from None
    if not isinstance(config, dict) or config.get("base") != STOCK_EMBEDDER:
        raise RerankerError(f"{path}: field 'base' must be {STOCK_EMBEDDER!r}, got {config.get('base')!r}")
    if not isinstance(config.get("max_length"), int) or config["max_length"] < 8:
        raise RerankerError(f"{path}: field 'max_length' must be an integer of at least 8")
    return config


def _digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in _FILES:
        try:
            digest.update((folder / name).read_bytes())
        except OSError as e:
            raise RerankerError(f"{folder / name} cannot be read ({e.strerror})") from None
    return digest.hexdigest()[:16]


def merged_model(folder: Path):
    """The PyTorch cross-encoder (a `BertForSequenceClassification`) with the adapter of `folder` merged in."""
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()  # "some weights newly initialised": the adapter brings them
    base = AutoModelForSequenceClassification.from_pretrained(str(default_model_folder()), num_labels=1)
    try:
        return PeftModel.from_pretrained(base, str(folder)).merge_and_unload().eval()
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise RerankerError(
            f"{folder}: not a cross-encoder adapter over {STOCK_EMBEDDER} ({type(e).__name__}: {e})"
        ) from None


def _export(folder: Path, target: Path) -> None:
    """Merge the adapter of `folder` and write the network to `target/model.onnx` (one writer wins)."""
    model = merged_model(folder)
    log.warning("exporting the reranker %s to ONNX in %s (once; a few seconds)", folder, target.parent)
    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        export_bert(model, lambda out: out.logits[:, 0], staging / "model.onnx", "scores", 1)
        try:
            os.rename(staging, target)
        except OSError:  # another process finished first
            if not (target / "model.onnx").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class Reranker:
    """The cross-encoder of a reranker folder (`python -m training.reranker` writes one): `scores(query, texts)`."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.max_length = _config(self.folder)["max_length"]
        self.id = f"{self.folder.resolve().name}-{_digest(self.folder)}"
        self._session = None
        self._tokenizer = None

    def _load(self) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        target = autotool_home() / "models" / "onnx" / f"reranker-{self.id}"
        if not (target / "model.onnx").is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            _export(self.folder, target)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # as the embedder's session
        self._session = onnxruntime.InferenceSession(
            str(target / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(default_model_folder() / "tokenizer.json"))
        tokenizer.enable_truncation(self.max_length, strategy="longest_first")  # as the trainer's tokenizer
        tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"), pad_token="[PAD]")
        self._tokenizer = tokenizer

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """(len(texts),) float32: the cross-encoder's score of each (query, text) pair, higher is a better fit."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        if self._session is None:
            self._load()
        encodings = self._tokenizer.encode_batch([(query.strip(), t.strip()) for t in texts])
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        return np.asarray(self._session.run(None, feed)[0], dtype=np.float32).reshape(len(texts))


class Remembered:
    """A reranker that scores each (request, tool text) once, for fits that replay the served path over a grid:
    each point of the grid reorders mostly the same tools."""

    def __init__(self, reranker: Reranker):
        self.reranker, self.seen = reranker, {}

    def scores(self, query: str, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if (query, t) not in self.seen]
        if missing:
            self.seen.update(zip([(query, t) for t in missing], self.reranker.scores(query, missing)))
        return np.array([self.seen[(query, t)] for t in texts], dtype=np.float32)


def reranker_folder(spec: str | Path) -> Path:
    """The folder a reranker spec names: a shipped reranker's id (`SHIPPED_RERANKER`) or a folder's path."""
    folder = SHIPPED_RERANKERS.get(str(spec), Path(spec))
    if not folder.is_dir():
        raise RerankerError(f"{folder}: no such reranker folder (expected {SHIPPED_RERANKER} or a folder's path)")
    return folder


def load_reranker(spec: str | Path) -> Reranker:
    """The reranker `spec` names (`reranker_folder`); `RerankerError` naming the file when it is not one. Nothing
    is run yet."""
    return Reranker(reranker_folder(spec))


def reranker_trained_on(spec: str | Path) -> list[dict]:
    """What the reranker `spec` names was trained on, from its `manifest.json` (`trained_on`; [] without one)."""
    path = reranker_folder(spec) / "manifest.json"
    try:
        return json.loads(path.read_text()).get("trained_on") or []
    except (OSError, ValueError, AttributeError):
        return []


@dataclass(frozen=True)
class Rerank:
    """A policy manifest's `rerank`: which reranker reorders each step's `top` best candidates, at what `weight`
    (c above)."""

    reranker: str
    top: int
    weight: float

    @classmethod
    def from_manifest(cls, value, where: Path) -> Rerank:
        """From the manifest's `rerank` object; `RerankerError` naming `where` and the field when it is not one."""
        if not isinstance(value, dict):
            raise RerankerError(f"{where}: field 'rerank' must be an object {{reranker, top, weight}}")
        if not isinstance(value.get("reranker"), str):
            raise RerankerError(f"{where}: field 'rerank.reranker' must be a reranker's id or folder")
        if not isinstance(value.get("top"), int) or value["top"] < 2:
            raise RerankerError(f"{where}: field 'rerank.top' must be an integer of at least 2")
        if not isinstance(value.get("weight"), (int, float)) or not value["weight"] >= 0:
            raise RerankerError(f"{where}: field 'rerank.weight' must be a number of at least 0")
        return cls(value["reranker"], value["top"], float(value["weight"]))


def rerank_candidates(reranker: Reranker, setting: Rerank, query: str, ranked: list[Candidate]) -> list[Candidate]:
    """`ranked` (best first) with its `setting.top` best reordered by `reranker`'s scores against `query`."""
    head, tail = ranked[: setting.top], ranked[setting.top :]
    if len(head) < 2 or setting.weight == 0:
        return ranked
    scores = reranker.scores(query, [c.tool.text for c in head])
    probabilities = reranked(np.array([c.probability for c in head]), scores, setting.weight)
    out = [replace(c, probability=float(p)) for c, p in zip(head, probabilities)] + tail
    return sorted(out, key=lambda c: -c.probability)  # stable: ties keep their order


def reranked(probabilities: np.ndarray, scores: np.ndarray, weight: float) -> np.ndarray:
    """The probabilities of the best `len(scores)` candidates reordered by the cross-encoder: `P softmax(log p + c
    s)`, with `P` their total before (the candidates below keep theirs)."""
    p = np.asarray(probabilities, dtype=np.float64)
    total = p.sum()
    logits = np.log(np.maximum(p, 1e-30)) + weight * np.asarray(scores, dtype=np.float64)
    out = np.exp(logits - logits.max())
    return (total * out / out.sum()).astype(np.float32)
