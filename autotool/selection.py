"""The selection distribution, written once: a step's anchor, its request and the tools on offer (a bank or
a tool table) in; candidates and their probabilities out.

`p(t_k | e') = softmax_k(2 g (e'.e_k + l bm25_k))` (AutoTool eq. 4 for unit vectors, where
`-g ||e' - e_k||^2 = 2 g e'.e_k` up to a per-row constant), with `bm25_k` the BM25 score of the request against
tool k over the best one's (in [0, 1]) and `l` the head's lexical weight (`l_later` at a step after earlier
calls; both 0 unless calibrated). At a step after earlier calls, BM25 reads only the request's words that the
called tools' texts do not contain (`lexical_query`): the words that named those calls are explained, and they
no longer pull up the tools that share them. The anchor can be explained the same way: with the head's `explain`
weight x (0 unless set), a later step's anchor is `unit(e' - x sum_c (e'.e_c) e_c)` over the distinct called
tools' vectors e_c (`explained_anchors`), so it no longer points at what was called. Tools that earlier steps of
the task called are not candidates.

Served (`top_k` set, the default 64): the candidates are the `top_k` tools by `e'.e_k` and, when the head
has a lexical prior, the `top_k` by BM25; the softmax runs over them, and a candidate outside the BM25 top-K
counts `bm25 = 0` (its score is not looked up). `top_k=None` gives every tool, the
exact distribution that training back-propagates through (`autotool.head.table_logits`). `select_tool`, the
evaluation and a `ToolTable` all come here, so every figure measured is the distribution a user gets.

Choosing needs no gradients, so this module is numpy: it reads the head's values (`HeadValues`), and a process
that only chooses (`autotool select --mode fast`) never imports PyTorch. Training computes the same
distribution in PyTorch (autotool/head.py); tests/autotool/test_selection.py holds the two equal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from autotool.prompts import shortlist_line
from toolbank import Tool, ToolBank

DEFAULT_TOP_K = 64
ANCHORS = ("residual", "pure")
HEAD_KEYS = ("W.weight", "a", "b", "log_g", "lexical", "lexical_later", "explain")  # anchor_head.safetensors


@dataclass
class StepInput:
    """Where a step starts: the request, the texts of the earlier steps, and tools it may not choose again (by
    qualified name)."""

    query: str
    context: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    called: tuple[str, ...] | None = None  # the tools earlier steps called; None: `exclude`
    shortlist: tuple[str, ...] = ()  # lines (`prompts.shortlist_line`) of the tools the prompt lists (`shortlisted`)

    @property
    def later(self) -> bool:
        """The step follows earlier calls (its lexical prior is weighed by `l_later`)."""
        return bool(self.context)

    @property
    def called_tools(self) -> tuple[str, ...]:
        return self.exclude if self.called is None else self.called

    @property
    def explaining(self) -> tuple[str, ...]:
        """The distinct tools whose directions `explained_anchors` takes out of this step's anchor (none at a
        first step)."""
        return tuple(dict.fromkeys(self.called_tools)) if self.later else ()


_WORD = re.compile(r"[^\W_]+")  # letters and digits, any script


def words(text: str) -> set[str]:
    """Lower-cased words of `text`, names split at case changes, `_`, `.` and `-` (`GetUserToken`: get, user,
    token)."""
    return set(_WORD.findall(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text).lower()))


def lexical_query(step: StepInput, text_of: Callable[[str], str | None]) -> str:
    """The text BM25 scores for `step`: the request, less, at a step after earlier calls, the words that the texts
    of the called tools (`text_of(name)`, None for a tool no longer there) contain."""
    texts = [t for t in map(text_of, step.called_tools) if t] if step.later else []
    if not texts:
        return step.query
    known = set().union(*map(words, texts))
    return " ".join(w for w in _WORD.findall(step.query.lower()) if w not in known)


@dataclass
class Candidate:
    tool: Tool
    probability: float
    cosine: float


def unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (as `torch.nn.functional.normalize`: a zero row stays zero)."""
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


@dataclass(frozen=True)
class HeadValues:
    """The anchor head's values, as choosing reads them: `e' = normalize(W h + a q + b r)` (the pure anchor has
    a = b = 0) and the logits `2 g (e'.e_k + l bm25_k)`, with `l_later` at a step after earlier calls, where
    `explain` of the called tools' directions is first taken out of e' (`explained_anchors`).
    `autotool.head.AnchorHead` holds the same values as parameters, for training."""

    anchor: str
    W: np.ndarray  # (dim, hidden)
    a: float
    b: float
    g: float
    lexical: float = 0.0
    lexical_later: float = 0.0
    explain: float = 0.0

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray], anchor: str) -> HeadValues:
        """From a saved head's arrays (`HEAD_KEYS`)."""
        return cls(
            anchor,
            np.asarray(state["W.weight"], dtype=np.float32),
            float(state["a"]),
            float(state["b"]),
            math.exp(float(state["log_g"])),
            float(state["lexical"]),
            float(state["lexical_later"]),
            float(state["explain"]),
        )

    @property
    def uses_lexical(self) -> bool:
        return self.lexical != 0 or self.lexical_later != 0

    @property
    def uses_hidden(self) -> bool:
        """False while W is exactly zero: the LM's hidden state cannot change the anchor."""
        return bool(np.abs(self.W).max() > 0)

    def anchors(self, hidden: np.ndarray | None, queries: np.ndarray, rationales: np.ndarray | None) -> np.ndarray:
        """(n, dim) unit anchors from (n, hidden) states at `<tool_anchor>` (None: no W term), and the requests'
        and rationales' (n, dim) embeddings (a rationale of zeros, or None: no rationale term)."""
        out = np.float32(self.a) * queries
        if hidden is not None:
            out = out + unit(np.asarray(hidden, dtype=np.float32)) @ self.W.T
        if rationales is not None:
            out = out + np.float32(self.b) * rationales
        return unit(out.astype(np.float32))

    def logits(self, cosines: np.ndarray, lexical: np.ndarray | None = None, later: bool = False) -> np.ndarray:
        """Logits of one step's candidates from their cosines `e'.e_k` and normalised BM25 scores (or None)."""
        scores = (
            cosines
            if lexical is None
            else cosines + np.float32(self.lexical_later if later else self.lexical) * lexical
        )
        return np.float32(2.0 * self.g) * scores


def embedded(embedder, texts: Sequence[str]) -> np.ndarray:
    """(n, dim) float32 embeddings of `texts` with a bank's embedder; an empty text embeds as zeros."""
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    present = [i for i, t in enumerate(texts) if t.strip()]
    if present:
        out[present] = embedder.encode([texts[i] for i in present])
    return out


def explained_anchors(
    explain: float, anchors: np.ndarray, steps: Sequence[StepInput], vectors_of: Callable[[list[str]], np.ndarray]
) -> np.ndarray:
    """Each later step's unit anchor (rows of `anchors`) with `explain` of each called tool's direction taken out:
    `unit(a - explain sum_c (a.e_c) e_c)` over the step's distinct called tools (`StepInput.explaining`), whose
    unit vectors `vectors_of(names)` gives (a tool no longer there is skipped by it). `explain` 0 or a first step:
    the anchor as it is."""
    anchors = np.asarray(anchors, dtype=np.float32)
    if not explain:
        return anchors
    out = anchors.copy()
    for row, step in enumerate(steps):
        vectors = vectors_of(list(step.explaining)) if step.explaining else None
        if vectors is not None and len(vectors):
            out[row] = unit(anchors[row] - np.float32(explain) * (vectors.T @ (vectors @ anchors[row])))
    return out


def _stored_vectors(bank: ToolBank, names: list[str]) -> np.ndarray:
    """(n, dim) stored vectors of the named tools still in `bank` (none: an empty array)."""
    present = [n for n in names if n in bank]
    return bank.vectors(present) if present else np.zeros((0, bank.dim), dtype=np.float32)


def normalised_bm25(scores: np.ndarray) -> np.ndarray:
    """BM25 scores over the best one's (0..1); all zeros when no tool matches."""
    best = float(scores.max()) if len(scores) else 0.0
    return scores / best if best > 0 else np.zeros_like(scores)


def candidates(
    head: HeadValues,
    tools,
    anchors: np.ndarray,
    steps: Sequence[StepInput],
    top_k: int | None = DEFAULT_TOP_K,
    namespace: str | tuple[str, ...] | None = None,
    tags: Sequence[str] = (),
) -> list[list[Candidate]]:
    """For each step's unit anchor (rows of `anchors`), its candidates with their selection probabilities,
    best first (ties: the order of `tools`, the bank's dense order). `tools` is a `ToolBank` or an
    `autotool.head.ToolTable`. `namespace`: one, several (a tuple), or None for every tool; `tags`: only tools
    carrying all of them. See the module docstring."""
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    anchors = np.asarray(anchors, dtype=np.float32)
    if not isinstance(tools, ToolBank):
        if namespace is not None or tags:
            raise ValueError("a ToolTable has no namespaces or tags; filter its tools instead")
        anchors = explained_anchors(
            head.explain,
            anchors,
            steps,
            lambda names: tools.vectors.cpu().numpy()[[tools.index[n] for n in names if n in tools.index]],
        )
        return _table_candidates(head, tools, anchors, steps, top_k)
    anchors = explained_anchors(head.explain, anchors, steps, lambda names: _stored_vectors(tools, names))
    return [
        _bank_candidates(head, tools, anchor, step, top_k, namespace, tuple(tags))
        for anchor, step in zip(anchors, steps)
    ]


def shortlisted(
    head: HeadValues,
    tools,
    steps: Sequence[StepInput],
    queries: np.ndarray,
    n: int,
    namespace: str | tuple[str, ...] | None = None,
    tags: Sequence[str] = (),
) -> list[StepInput]:
    """`steps` with their shortlists: the lines of each step's `n` best tools in fast mode (the anchor E(query),
    explained at a later step, with the head's lexical prior; `queries` are the requests' embeddings), best first,
    which a policy with a shortlist reads before it writes its rationale. `tools`, `namespace` and `tags` as in
    `candidates`; `n` 0 gives the steps as they are."""
    if n <= 0:
        return list(steps)
    ranked = candidates(
        head, tools, unit(np.asarray(queries, dtype=np.float32)), steps, max(DEFAULT_TOP_K, n), namespace, tags
    )
    return [replace(s, shortlist=tuple(shortlist_line(c.tool) for c in r[:n])) for s, r in zip(steps, ranked)]


def _descending(values: np.ndarray) -> np.ndarray:
    """Indices that sort `values` from the largest, ties in their order."""
    return np.argsort(-values, kind="stable")


def _ranked(head: HeadValues, tools: list[Tool], cosines: np.ndarray, lexical: np.ndarray | None, later: bool):
    if not tools:
        return []
    logits = head.logits(cosines, lexical, later).astype(np.float64)
    probs = np.exp(logits - logits.max())
    probs = (probs / probs.sum()).astype(np.float32)
    return [Candidate(tools[i], float(probs[i]), float(cosines[i])) for i in _descending(probs).tolist()]


def _table_candidates(
    head: HeadValues, table, anchors: np.ndarray, steps: Sequence[StepInput], top_k: int | None
) -> list[list[Candidate]]:
    vectors = table.vectors.cpu().numpy()
    cosines = anchors @ vectors.T  # (n, n_tools)
    lexical = table.lexical(steps).numpy().astype(np.float32) if head.uses_lexical else None
    excluded = table.excluded(steps).numpy()
    out = []
    for row, step in enumerate(steps):
        allowed = np.flatnonzero(~excluded[row])
        keep = allowed
        if top_k is not None:
            by_cosine = allowed[_descending(cosines[row, allowed])[:top_k]]
            keep = by_cosine
            if lexical is not None:
                matching = allowed[lexical[row, allowed] > 0]
                by_bm25 = matching[_descending(lexical[row, matching])[:top_k]]
                keep = np.concatenate([by_cosine, by_bm25[~np.isin(by_bm25, by_cosine)]])
                prior = np.where(np.isin(keep, by_bm25), lexical[row, keep], np.float32(0.0))
        elif lexical is not None:
            prior = lexical[row, keep]
        out.append(
            _ranked(
                head,
                [table.tools[i] for i in keep.tolist()],
                cosines[row, keep],
                None if lexical is None else prior,
                step.later,
            )
        )
    return out


def _bank_candidates(
    head: HeadValues,
    bank: ToolBank,
    anchor: np.ndarray,
    step: StepInput,
    top_k: int | None,
    namespace: str | tuple[str, ...] | None,
    tags: tuple[str, ...] = (),
) -> list[Candidate]:
    called = set(step.exclude)
    depth = (top_k or len(bank)) + len(called)
    dense = bank.search(step.query, k=depth, mode="dense", namespace=namespace, tags=tags, query_vector=anchor)
    dense = [h for h in dense if h.name not in called][:top_k]
    tools = {h.name: h.tool for h in dense}
    cosine = {h.name: h.score for h in dense}
    lexical: dict[str, float] = {}
    if head.uses_lexical:
        text = lexical_query(step, lambda name: bank.get(name).text if name in bank else None)
        hits = bank.search(text, k=depth, mode="bm25", namespace=namespace, tags=tags) if text.strip() else []
        # normalised over every tool, called ones too, as in training
        scores = normalised_bm25(np.array([h.score for h in hits], dtype=np.float32))
        kept = [(h, s) for h, s in zip(hits, scores) if h.name not in called][:top_k]
        lexical = {h.name: float(s) for h, s in kept}
        tools.update((h.name, h.tool) for h, _ in kept)
        extra = [h.name for h, _ in kept if h.name not in cosine]  # outside the dense top-K: cosine from the store
        if extra:
            cosine.update(zip(extra, (bank.vectors(extra) @ anchor.astype(np.float32)).tolist()))
    names = list(tools)
    if not names:
        return []
    return _ranked(
        head,
        [tools[n] for n in names],
        np.array([cosine[n] for n in names], dtype=np.float32),
        np.array([lexical.get(n, 0.0) for n in names], dtype=np.float32) if lexical else None,
        step.later,
    )
