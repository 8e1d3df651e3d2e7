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
Format versions: 3 (this one) always stores `lexical`, `lexical_later` and `explain` in the head. A version 2
head lacks `explain` (0: later steps' anchors as they are). A version 1 head may lack the lexical weights too:
without `lexical` the prior is 0, without `lexical_later` it takes `lexical` (one weight for every step), as the
policy was trained and calibrated.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from autotool.backbone import DEFAULT_BACKBONE, SPECIAL_TOKENS, cache_keyword, load_backbone
from autotool.prompts import prompt, shared_prefix
from autotool.rerank import Rerank, Reranker, RerankerError, load_reranker
from autotool.selection import ANCHORS, HEAD_KEYS, HeadValues, embedded
from toolbank import STOCK_EMBEDDER, TUNED_EMBEDDER, ToolBank, atomic_path

if TYPE_CHECKING:
    import torch

    from autotool.grammar import ArgumentGrammar
    from autotool.head import AnchorHead

FORMAT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
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
    """The embedders a policy reads: the one it was trained with (`embedder`), any others its manifest lists
    under `also_reads` (embedders of the same dimension it was measured with, not trained with), and, for a
    policy trained on stock all-MiniLM-L6-v2, the fine-tuned one new banks get (the same network with a LoRA
    adapter merged in; the shipped policy was measured on both, docs/results.md)."""
    out = [manifest["embedder"], *manifest.get("also_reads", [])]
    if manifest["embedder"] == STOCK_EMBEDDER and TUNED_EMBEDDER not in out:
        out.append(TUNED_EMBEDDER)
    return out


def reads_embeddings_of(manifest: dict, bank: ToolBank) -> bool:
    return bank.embedder_id in readable_embedders(manifest) and manifest["dim"] == bank.dim


class Policy:
    """Backbone (+ LoRA) and anchor head; see the module docstring."""

    def __init__(
        self,
        model,
        tokenizer,
        head: AnchorHead | None,
        backbone: str,
        embedder: str,
        dim: int,
        trained: bool = False,
        info: dict | None = None,
    ):
        self._model, self._tokenizer, self._head = model, tokenizer, head
        self._saved_head: tuple[dict[str, np.ndarray], str] | None = None  # a frozen load's (arrays, anchor)
        self._saved_values: HeadValues | None = None
        self.backbone, self.embedder, self.dim = backbone, embedder, dim
        self.trained, self.info = trained, info or {}
        self._prefix_cache = None  # (ids, KV cache) of the prompts' shared start; see `prefix_cache`
        self._load_lm = None  # a frozen `Policy.load` reads the language model on first use (see `model`)
        self._argument_grammar = None
        self._reranker: Reranker | None = None

    @property
    def head(self) -> AnchorHead:
        """The anchor head as PyTorch parameters (training, and `training.calibrate`, change it). A policy from
        `Policy.load` builds it from the saved arrays on first use: choosing reads `head_values` instead."""
        if self._head is None:
            from autotool.head import AnchorHead

            self._head = AnchorHead.from_state(*self._saved_head)
        return self._head

    @head.setter
    def head(self, value: AnchorHead) -> None:
        self._head = value

    @property
    def head_values(self) -> HeadValues:
        """The head's current values, as choosing reads them (numpy; `autotool.selection`): the saved arrays of a
        frozen load until something builds `head`, then the head's own."""
        if self._head is None:
            if self._saved_values is None:
                self._saved_values = HeadValues.from_state(*self._saved_head)
            return self._saved_values
        return self._head.values()

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
            from autotool.grammar import ArgumentGrammar

            self._argument_grammar = ArgumentGrammar(self.tokenizer)
        return self._argument_grammar

    @property
    def shortlist(self) -> int:
        """How many tools the prompt lists before the rationale (the manifest's `shortlist`; 0: none, the
        protocol of policies trained before it): the best in fast mode, `autotool.selection.shortlisted`."""
        return int(self.info.get("shortlist", 0))

    @property
    def rerank(self) -> Rerank | None:
        """The manifest's `rerank` (`autotool.rerank`): the reranker and how many of each step's best candidates
        it reorders at what weight; None for a policy without one."""
        value = self.info.get("rerank")
        return None if value is None else Rerank.from_manifest(value, Path("manifest.json"))

    @property
    def reranker(self) -> Reranker | None:
        """The cross-encoder `rerank` names, loaded on first use (None without `rerank`)."""
        if self.rerank is None:
            return None
        if self._reranker is None:
            self._reranker = load_reranker(self.rerank.reranker)
        return self._reranker

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

        from autotool.head import AnchorHead

        if anchor not in ANCHORS:
            raise PolicyError(f"unknown anchor {anchor!r}; expected one of {', '.join(ANCHORS)}")
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
        from safetensors.numpy import load_file

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

        if manifest.get("anchor") not in ANCHORS:
            raise PolicyError(
                f"{path / 'manifest.json'}: field 'anchor' is {manifest.get('anchor')!r}; expected one of "
                f"{', '.join(ANCHORS)}"
            )
        state = load_file(path / "anchor_head.safetensors")
        if version == 1:  # heads from before the lexical prior (none), or before l_later (one weight for every step)
            state.setdefault("lexical", np.array(0.0, dtype=np.float32))
            state.setdefault("lexical_later", state["lexical"])
        if version in (1, 2):  # heads from before the explained anchor
            state.setdefault("explain", np.array(0.0, dtype=np.float32))
        missing = sorted(set(HEAD_KEYS) - set(state))
        if missing:
            raise PolicyError(
                f"{path / 'anchor_head.safetensors'} lacks {', '.join(missing)} (format version {version})"
            )
        expected = (manifest["dim"], manifest["hidden"])
        if state["W.weight"].shape != expected:
            raise PolicyError(
                f"{path / 'anchor_head.safetensors'}: W.weight has shape {state['W.weight'].shape}; the manifest "
                f"says (dim, hidden) = {expected}"
            )
        if "rerank" in manifest:
            try:
                Rerank.from_manifest(manifest["rerank"], path / "manifest.json")
                load_reranker(manifest["rerank"]["reranker"])  # reads its configuration; runs nothing
            except RerankerError as e:
                raise PolicyError(str(e)) from None
        info = {
            k: v
            for k, v in manifest.items()
            if k not in ("format_version", "backbone", "embedder", "dim", "anchor", "hidden")
        }
        policy = cls(None, None, None, manifest["backbone"], manifest["embedder"], manifest["dim"], True, info)
        policy._saved_head = ({key: state[key] for key in HEAD_KEYS}, manifest["anchor"])
        policy._load_lm = load_lm
        if trainable:
            policy.model  # noqa: B018 - loads it: training needs it at once
            policy.head  # noqa: B018 - and the head's parameters
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
        import torch

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
        import torch

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

    def hidden_at_end(self, text: str) -> torch.Tensor:
        """(hidden,) last-layer hidden state at the last token of `text` (the `<tool_anchor>`)."""
        import torch

        ids, cache = self.encode(text).to(self.device), None
        with torch.inference_mode():
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
        import torch

        from autotool.grammar import ConstrainedLogits

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
        hidden: torch.Tensor | np.ndarray | None = None,
        query_vectors: np.ndarray | None = None,
    ) -> np.ndarray:
        """(n, dim) unit anchors of n steps from their requests, rationales ("" for none: no rationale term) and
        (n, hidden) hidden states at `<tool_anchor>` (None while W is zero), from `head_values` (numpy).
        `query_vectors`: the requests' embeddings when already made (`autotool.selection.embedded`)."""
        if query_vectors is None:
            vectors = embedded(embedder, list(queries) + list(rationales))
            query_vectors, rationale_vectors = vectors[: len(queries)], vectors[len(queries) :]
        else:
            rationale_vectors = embedded(embedder, rationales)
        if hidden is not None and not isinstance(hidden, np.ndarray):
            hidden = hidden.detach().float().cpu().numpy()
        return self.head_values.anchors(hidden, query_vectors, rationale_vectors)


def embed(embedder, texts: Sequence[str]) -> torch.Tensor:
    """`autotool.selection.embedded` as a tensor, for training."""
    import torch

    return torch.from_numpy(embedded(embedder, texts))
