"""The policy: a causal LM with LoRA, and an anchor head that maps it into the tool bank's embedding space.

Anchor (residual form, the default): `e' = normalize(W h + a E(query) + b E(rationale))`, h the LM's last
hidden state at `<tool_anchor>` scaled to unit length (its raw norm is in the hundreds, and would swamp the
unit embeddings after a few steps), E the bank's embedder; W starts at zero, a at 1, b at 0, so an untrained
policy selects exactly like dense retrieval on the query. Pure form (`e' = normalize(W h)`, as in AutoTool):
`anchor="pure"`.

Selection: `p(t_k | e') = softmax_k(2 g (e'.e_k + l * bm25_k))` (autotool/selection.py, where the
candidates are chosen). The lexical weights l (a first step) and `l_later` (a step after earlier calls: there
the request names every call, and which of its parts are left is what the earlier steps settle) are 0 unless
`training.calibrate` fits them on val, so the design's distribution is the default.

A saved policy is a folder:
```
policy/  manifest.json {format_version, backbone, embedder, dim, anchor, ...}  adapter/  anchor_head.safetensors
```
Format versions: 2 (this one) always stores `lexical` and `lexical_later` in the head; a version 1 head may
lack them: without `lexical` the prior is 0, without `lexical_later` it takes `lexical` (one weight for every
step), as the policy was trained and calibrated.
"""

from __future__ import annotations

import copy
import json
import math
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from autotool.backbone import DEFAULT_BACKBONE, SPECIAL_TOKENS, cache_keyword, load_backbone
from autotool.grammar import ArgumentGrammar, ConstrainedLogits
from autotool.prompts import prompt, shared_prefix
from autotool.selection import tool_scores
from toolbank import ToolBank, atomic_path

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
ANCHORS = ("residual", "pure")
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]


@contextmanager
def _quiet_peft():
    """peft calls a transformers method that transformers has deprecated; the notice is for peft, not for users."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        yield


class PolicyError(ValueError):
    """A policy folder cannot be loaded, or does not fit the bank it is used with."""


def readable_embedders(manifest: dict) -> list[str]:
    """The embedders a policy reads: the one it was trained with (`embedder`), and any others its manifest lists
    under `also_reads` (embedders of the same dimension it was measured with, not trained with)."""
    return [manifest["embedder"], *manifest.get("also_reads", [])]


def reads_embeddings_of(manifest: dict, bank: ToolBank) -> bool:
    return bank.embedder_id in readable_embedders(manifest) and manifest["dim"] == bank.dim


class AnchorHead(nn.Module):
    """`e' = normalize(W h + a q + b r)` (residual) or `normalize(W h)` (pure), and the sharpness g."""

    def __init__(self, hidden: int, dim: int, anchor: str = "residual", sharpness: float = 10.0):
        super().__init__()
        if anchor not in ANCHORS:
            raise PolicyError(f"unknown anchor {anchor!r}; expected one of {', '.join(ANCHORS)}")
        self.anchor = anchor
        self.W = nn.Linear(hidden, dim, bias=False)
        if anchor == "residual":
            nn.init.zeros_(self.W.weight)
        else:
            nn.init.normal_(self.W.weight, std=1.0 / math.sqrt(hidden))
        trainable_mix = anchor == "residual"
        self.a = nn.Parameter(torch.tensor(1.0 if trainable_mix else 0.0), requires_grad=trainable_mix)
        self.b = nn.Parameter(torch.tensor(0.0), requires_grad=trainable_mix)
        self.log_g = nn.Parameter(torch.tensor(math.log(sharpness)))
        # The lexical prior's weights (fitted, not trained): l at a first step, l_later after earlier calls.
        self.register_buffer("lexical", torch.tensor(0.0))
        self.register_buffer("lexical_later", torch.tensor(0.0))

    @property
    def uses_lexical(self) -> bool:
        return bool(self.lexical != 0 or self.lexical_later != 0)

    @property
    def uses_hidden(self) -> bool:
        """False while W is exactly zero: the LM's hidden state cannot change the anchor."""
        return bool(self.W.weight.detach().abs().max() > 0)

    def forward(
        self, h: torch.Tensor | None, query: torch.Tensor, rationale: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(batch, dim) unit anchors from h (batch, hidden) or None, query and rationale (batch, dim) embeddings."""
        out = self.a * query
        if h is not None:
            out = out + self.W(nn.functional.normalize(h.to(self.W.weight.dtype), dim=-1))
        if rationale is not None:
            out = out + self.b * rationale
        return nn.functional.normalize(out, dim=-1)

    def logits(
        self,
        anchors: torch.Tensor,
        tools: torch.Tensor,
        lexical: torch.Tensor | None = None,
        later: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(batch, n_tools) `-g ||e' - e_k||^2` up to a per-row constant, i.e. `2 g e'.e_k` for unit vectors,
        plus `2 g l lexical` when `lexical` (batch, n_tools), the normalised BM25 scores, is given; `later`
        (batch,) bool marks the rows of steps after earlier calls, weighed by `l_later`."""
        return self.sharpen(anchors @ tools.T, lexical, later)

    def sharpen(
        self, cosines: torch.Tensor, lexical: torch.Tensor | None = None, later: torch.Tensor | bool | None = None
    ) -> torch.Tensor:
        """Logits from cosines `e'.e_k` (n_tools,) or (batch, n_tools): `2 g tool_scores(...)`, with
        `l_later` in the rows `later` marks (a bool, or one per row); without the prior when `lexical` is None."""
        return 2.0 * self.log_g.exp() * tool_scores(cosines, lexical, self.lexical, self.lexical_later, later)


class Policy:
    """Backbone (+ LoRA) and anchor head; see the module docstring."""

    def __init__(
        self,
        model,
        tokenizer,
        head: AnchorHead,
        backbone: str,
        embedder: str,
        dim: int,
        trained: bool = False,
        info: dict | None = None,
    ):
        self._model, self._tokenizer, self.head = model, tokenizer, head
        self.backbone, self.embedder, self.dim = backbone, embedder, dim
        self.trained, self.info = trained, info or {}
        self._prefix_cache = None  # (ids, KV cache) of the prompts' shared start; see `prefix_cache`
        self._load_lm = None  # a frozen `Policy.load` reads the language model on first use (see `model`)
        self._argument_grammar = None

    @property
    def model(self):
        """The language model (with its adapters). A policy from `Policy.load` (not trainable) reads it from disk
        on first use: choosing in fast mode while W is zero, without arguments, never needs it."""
        if self._model is None and self._load_lm is not None:
            self._model, self._tokenizer = self._load_lm()
            self._load_lm = None
        return self._model

    @model.setter
    def model(self, value) -> None:
        self._model = value

    @property
    def tokenizer(self):
        if self._tokenizer is None and self._load_lm is not None:
            self.model  # noqa: B018 - loads both
        return self._tokenizer

    @tokenizer.setter
    def tokenizer(self, value) -> None:
        self._tokenizer = value

    @property
    def argument_grammar(self) -> ArgumentGrammar:
        """Builds the schema grammars the served path writes arguments through (made on first use)."""
        if self._argument_grammar is None:
            self._argument_grammar = ArgumentGrammar(self.tokenizer)
        return self._argument_grammar

    @property
    def lm_loaded(self) -> bool:
        """Whether the language model is in memory (see `model`)."""
        return self._model is not None

    def warm(self) -> None:
        """Load the language model now and, for a frozen policy, fold its adapters in, compute the system prompt's
        keys and values, build the argument grammars' tokenizer and generate one token (the first generation's
        set-up), so that the first call does not
        wait for them (e.g. `autotool serve --preload`)."""
        self.model  # noqa: B018 - loads it
        self.argument_grammar  # noqa: B018 - reads the tokenizer into the grammar library
        if self.frozen:
            self.generate_ids([self.encode(prompt(self.tokenizer, "warm up"))[0].tolist()], 1, "</think>")

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def create(
        cls, bank: ToolBank, backbone: str | Path | None = None, anchor: str = "residual", lora_rank: int = 8
    ) -> Policy:
        """An untrained policy for `bank`'s embedding space: LoRA adapters at zero, W at zero."""
        from peft import LoraConfig, get_peft_model

        model, tokenizer = load_backbone(backbone)
        # The protocol's tokens are new to the backbone: their embedding rows train with the adapters.
        special = tokenizer.convert_tokens_to_ids(SPECIAL_TOKENS)
        with _quiet_peft():
            model = get_peft_model(
                model,
                LoraConfig(
                    r=lora_rank,
                    lora_alpha=2 * lora_rank,
                    lora_dropout=0.0,
                    target_modules=LORA_TARGETS,
                    task_type="CAUSAL_LM",
                    trainable_token_indices={"embed_tokens": special},
                ),
            )
        model.eval()
        head = AnchorHead(model.config.hidden_size, bank.dim, anchor)
        backbone_id = DEFAULT_BACKBONE if backbone in (None, "default") else str(backbone)
        return cls(model, tokenizer, head, backbone_id, bank.embedder_id, bank.dim)

    def save(self, path: str | Path) -> None:
        """Write the policy folder; the manifest goes last, so a folder with a manifest is complete."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.mkdir()
            # The special tokens' rows are in the adapter; the rest of the embedding matrix is the backbone's.
            self.model.save_pretrained(tmp / "adapter", safe_serialization=True, save_embedding_layers=False)
            self.save_head(tmp)
            manifest = {
                "format_version": FORMAT_VERSION,
                "backbone": self.backbone,
                "embedder": self.embedder,
                "dim": self.dim,
                "anchor": self.head.anchor,
                "hidden": self.head.W.in_features,
                **self.info,
            }
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")

    def save_head(self, path: str | Path) -> None:
        """Write (or atomically replace) `anchor_head.safetensors` in the policy folder `path`."""
        from safetensors.torch import save_file

        with atomic_path(Path(path) / "anchor_head.safetensors") as tmp:
            save_file({k: v.detach().cpu().contiguous() for k, v in self.head.state_dict().items()}, tmp)

    @classmethod
    def load(cls, path: str | Path, bank: ToolBank | None = None, trainable: bool = False) -> Policy:
        """Load a policy folder (safetensors only); with `bank`, check it shares the bank's embedder.

        `trainable=True` leaves the adapter's parameters trainable (to resume or continue training). Otherwise
        the manifest and the anchor head are read now and the language model on first use (`model`).
        """
        from safetensors.torch import load_file

        path = Path(path)
        try:
            manifest = json.loads((path / "manifest.json").read_text())
        except (OSError, ValueError):
            raise PolicyError(f"{path} is not a policy folder (no readable manifest.json)") from None
        version = manifest.get("format_version")
        if version not in READABLE_VERSIONS:
            raise PolicyError(
                f"{path / 'manifest.json'}: field 'format_version' is {version!r}; this autotool "
                f"reads versions {', '.join(map(str, READABLE_VERSIONS))}"
            )
        if bank is not None and not reads_embeddings_of(manifest, bank):
            raise PolicyError(
                f"policy {path} reads embeddings of {' or '.join(readable_embedders(manifest))} (dim "
                f"{manifest['dim']}), but bank {bank.path} uses {bank.embedder_id} (dim {bank.dim}); re-embed "
                f"the bank with `toolbank --bank {bank.path} reindex --embedder {manifest['embedder']}`"
            )
        if not (path / "anchor_head.safetensors").is_file():
            raise PolicyError(f"{path / 'anchor_head.safetensors'} is missing")
        if not (path / "adapter" / "adapter_config.json").is_file():
            raise PolicyError(f"{path / 'adapter' / 'adapter_config.json'} is missing")
        backbone = None if manifest["backbone"] == DEFAULT_BACKBONE else manifest["backbone"]

        def load_lm():
            from peft import PeftModel

            model, tokenizer = load_backbone(backbone)
            with _quiet_peft():
                model = PeftModel.from_pretrained(model, path / "adapter", is_trainable=trainable)
            model.eval()
            return model, tokenizer

        head = AnchorHead(manifest["hidden"], manifest["dim"], manifest["anchor"])
        state = load_file(path / "anchor_head.safetensors")
        if version == 1:  # heads from before the lexical prior (none), or before l_later (one weight for every step)
            state.setdefault("lexical", torch.tensor(0.0))
            state.setdefault("lexical_later", state["lexical"])
        missing = sorted(set(head.state_dict()) - set(state))
        if missing:
            raise PolicyError(
                f"{path / 'anchor_head.safetensors'} lacks {', '.join(missing)} (format version {version})"
            )
        head.load_state_dict(state)
        info = {
            k: v
            for k, v in manifest.items()
            if k not in ("format_version", "backbone", "embedder", "dim", "anchor", "hidden")
        }
        policy = cls(None, None, head, manifest["backbone"], manifest["embedder"], manifest["dim"], True, info)
        policy._load_lm = load_lm
        if trainable:
            policy.model  # noqa: B018 - loads it: training needs it at once
        return policy

    @property
    def device(self) -> torch.device:
        if not self.lm_loaded:  # the head goes where the model goes (`to`)
            return self.head.W.weight.device
        return next(self.model.parameters()).device

    def to(self, device: str | torch.device) -> Policy:
        """Move the backbone and the anchor head to `device` (e.g. "cuda"); returns the policy."""
        self.model.to(device)
        self.head.to(device)
        self._prefix_cache = None
        return self

    # -- the language model ---------------------------------------------------------------------
    @property
    def frozen(self) -> bool:
        """No trainable parameters (a policy from `Policy.load`): nothing will change its weights."""
        return not any(p.requires_grad for p in self.model.parameters())

    @property
    def adapters_merged(self) -> bool:
        """True while the adapters are folded into the weights (see `merged`)."""
        from peft.tuners.tuners_utils import BaseTunerLayer

        return any(m.merged for m in self.model.modules() if isinstance(m, BaseTunerLayer))

    @contextmanager
    def merged(self):
        """Fold the adapters into the weights while generating (a third faster per token).

        A policy in training gets them taken out again afterwards, so its adapters keep their gradients; a
        frozen one keeps them folded (folding and unfolding cost ~0.2 s a call on a laptop CPU).
        """
        model = self.model
        if self.adapters_merged:
            yield
            return
        with torch.no_grad():
            model.merge_adapter()
        if self.frozen:
            yield
            return
        try:
            yield
        finally:
            with torch.no_grad():
                model.unmerge_adapter()

    def cache_kwargs(self, cache) -> dict:
        """`{keyword: cache}` for the backbone's forward and generate; empty for no cache."""
        return {} if cache is None else {cache_keyword(self.model.get_base_model()): cache}

    def prefix_cache(self, ids: torch.Tensor):
        """A copy of the KV cache of the prompts' shared start (system prompt) when `ids` (1, n) begin with it.

        Only for a frozen policy with merged adapters, whose keys and values cannot change; else None.
        """
        if not (self.frozen and self.adapters_merged):
            return None
        if self._prefix_cache is None:
            from transformers import DynamicCache

            prefix = self.encode(shared_prefix(self.tokenizer)).to(self.device)
            cache = DynamicCache(config=self.model.config)
            with torch.inference_mode():
                self.model(input_ids=prefix, use_cache=True, logits_to_keep=1, **self.cache_kwargs(cache))
            self._prefix_cache = (prefix[0], cache)
        prefix, cache = self._prefix_cache
        if ids.shape[1] <= len(prefix) or not torch.equal(ids[0, : len(prefix)], prefix):
            return None
        return copy.deepcopy(cache)  # generate extends the cache it is given

    def encode(self, text: str) -> torch.Tensor:
        return self.tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]

    @torch.inference_mode()
    def hidden_at_end(self, text: str) -> torch.Tensor:
        """(hidden,) last-layer hidden state at the last token of `text` (the `<tool_anchor>`)."""
        ids, cache = self.encode(text).to(self.device), None
        if self.frozen:  # adapters folded in once, and the system prompt's keys and values reused
            with self.merged():
                cache = self.prefix_cache(ids)
        start = 0 if cache is None else cache.get_seq_length()
        out = self.model(
            input_ids=ids[:, start:],
            use_cache=cache is not None,
            output_hidden_states=True,
            logits_to_keep=1,
            **self.cache_kwargs(cache),
        )
        return out.hidden_states[-1][0, -1]

    def generate_ids(
        self,
        prompts: Sequence[list[int]],
        max_new_tokens: int,
        stop: str,
        sample: bool = False,
        temperature: float = 1.0,
        constraints: Sequence | None = None,
    ) -> list[list[int]]:
        """Continue each prompt (token ids, left-padded into one batch); each result is cut after the special
        token `stop` (kept) or before eos. A single prompt of a frozen policy reuses the system prompt's cache.
        `constraints` gives each prompt a grammar matcher (`autotool.grammar`) or None (unconstrained)."""
        tokenizer, stop_id = self.tokenizer, self.tokenizer.convert_tokens_to_ids(stop)
        pad, width = tokenizer.pad_token_id, max(len(p) for p in prompts)
        ids = torch.tensor([[pad] * (width - len(p)) + list(p) for p in prompts], device=self.device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device)
        options = dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0) if sample else dict(do_sample=False)
        with self.merged(), torch.inference_mode():
            cache = self.prefix_cache(ids) if len(prompts) == 1 else None
            out = self.model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=max_new_tokens,
                eos_token_id=[stop_id, tokenizer.eos_token_id],
                pad_token_id=pad,
                logits_processor=None
                if constraints is None
                else [ConstrainedLogits(list(constraints), width, stop_id)],
                **self.cache_kwargs(cache),
                **options,
            )
        results = []
        for row in out[:, width:].tolist():
            cut = []
            for token in row:
                if token == tokenizer.eos_token_id:
                    break
                cut.append(token)
                if token == stop_id:
                    break
            results.append(cut)
        return results

    def generate(self, text: str, max_new_tokens: int, stop: str, sample: bool = False) -> str:
        """Continue `text`, stopping after the special token `stop` (not included) or `max_new_tokens`."""
        (ids,) = self.generate_ids([self.encode(text)[0].tolist()], max_new_tokens, stop, sample)
        return self.tokenizer.decode(ids, skip_special_tokens=False).removesuffix(stop)

    # -- selection ------------------------------------------------------------------------------
    def anchors(
        self,
        embedder,
        queries: Sequence[str],
        rationales: Sequence[str],
        hidden: torch.Tensor | None = None,
        query_vectors: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(n, dim) unit anchors of n steps from their requests, rationales ("" for none: no rationale term) and
        (n, hidden) hidden states at `<tool_anchor>` (None while W is zero). `query_vectors`: the requests'
        embeddings when already made (`embed`)."""
        if query_vectors is None:
            vectors = embed(embedder, list(queries) + list(rationales)).to(self.device)
            query_vectors, rationale_vectors = vectors[: len(queries)], vectors[len(queries) :]
        else:
            query_vectors, rationale_vectors = (
                query_vectors.to(self.device),
                embed(embedder, rationales).to(self.device),
            )
        with torch.no_grad():
            return self.head(hidden, query_vectors, rationale_vectors)


def embed(embedder, texts: Sequence[str]) -> torch.Tensor:
    """(n, dim) embeddings of `texts` with a bank's embedder; an empty text embeds as zeros."""
    out = torch.zeros(len(texts), embedder.dim)
    present = [i for i, t in enumerate(texts) if t.strip()]
    if present:
        out[present] = torch.from_numpy(embedder.encode([texts[i] for i in present]))
    return out
