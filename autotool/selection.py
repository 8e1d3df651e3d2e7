"""The selection distribution, written once: a step's anchor, its request and the tools on offer (a bank or
a tool table) in; candidates and their probabilities out.

`p(t_k | e') = softmax_k(2 g (e'.e_k + l bm25_k))` (AutoTool eq. 4 for unit vectors, where
`-g ||e' - e_k||^2 = 2 g e'.e_k` up to a per-row constant), with `bm25_k` the BM25 score of the request against
tool k over the best one's (in [0, 1]) and `l` the head's lexical weight (`l_later` at a step after earlier
calls; both 0 unless calibrated). Tools that earlier steps of the task called are not candidates.

Served (`top_k` set, the default 64): the candidates are the `top_k` tools by `e'.e_k` and, when the head
has a lexical prior, the `top_k` by BM25; the softmax runs over them, and a candidate outside the BM25 top-K
counts `bm25 = 0` (its score is not looked up). `top_k=None` gives every tool, the
exact distribution that training back-propagates through (`table_logits`). `select_tool`, the evaluation
and `ToolTable` all come here, so every figure measured is the distribution a user gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from autotool.prompts import tool_card
from toolbank import Tool, ToolBank
from toolbank.search import BM25Index

DEFAULT_TOP_K = 64


@dataclass
class StepInput:
    """Where a step starts: the request, the texts of the earlier steps, and tools it may not choose again (by
    qualified name)."""

    query: str
    context: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @property
    def later(self) -> bool:
        """The step follows earlier calls (its lexical prior is weighed by `l_later`)."""
        return bool(self.context)


@dataclass
class Candidate:
    tool: Tool
    probability: float
    cosine: float


def normalised_bm25(scores: np.ndarray) -> np.ndarray:
    """BM25 scores over the best one's (0..1); all zeros when no tool matches."""
    best = float(scores.max()) if len(scores) else 0.0
    return scores / best if best > 0 else np.zeros_like(scores)


def tool_scores(
    cosines: torch.Tensor, lexical: torch.Tensor | None, weight, later_weight, later: torch.Tensor | bool | None = None
) -> torch.Tensor:
    """`e'.e_k + l bm25_k` from cosines (n_tools,) or (batch, n_tools) and normalised BM25 scores of the same
    shape; `later_weight` in the rows that `later` (a bool, or one per row) marks. The logits are `2 g` times
    this; without `lexical` it is the cosines."""
    if lexical is None:
        return cosines
    later = torch.as_tensor(False if later is None else later, device=cosines.device)
    w = torch.where(
        later, torch.as_tensor(later_weight, device=cosines.device), torch.as_tensor(weight, device=cosines.device)
    )
    return cosines + (w[:, None] if w.dim() else w).to(cosines) * lexical.to(cosines)


@dataclass
class ToolTable:
    """The tools a policy chooses among, with their embeddings (the bank's, frozen) and the bank's embedder."""

    tools: list[Tool]
    vectors: torch.Tensor  # (n, dim), unit rows
    embedder: object

    @classmethod
    def from_bank(cls, bank: ToolBank, names: Sequence[str] | None = None) -> ToolTable:
        """The tools `names` (as `bank.get` takes them), or every tool sorted by name, then namespace (the order
        of a bank whose names are unique is the same as by name alone)."""
        if names is None:
            names = [t.qualified_name for t in sorted(bank, key=lambda t: (t.name, t.namespace or ""))]
        names = list(names)
        return cls(
            [bank.get(n) for n in names], torch.from_numpy(np.ascontiguousarray(bank.vectors(names))), bank.embedder
        )

    def __post_init__(self):
        self.index = {t.qualified_name: i for i, t in enumerate(self.tools)}
        self.cards = [tool_card(t) for t in self.tools]
        self._bm25: BM25Index | None = None

    def lexical(self, queries: Sequence[str]) -> torch.Tensor:
        """(n, n_tools) normalised BM25 score of each query against each tool's text."""
        if self._bm25 is None:
            self._bm25 = BM25Index(list(range(len(self.tools))), [t.text for t in self.tools])
        return torch.from_numpy(np.stack([normalised_bm25(self._bm25.scores(q)) for q in queries]))

    def excluded(self, steps: Sequence[StepInput]) -> torch.Tensor:
        """(n, n_tools) bool: the tools each step may not choose again."""
        out = torch.zeros(len(steps), len(self.tools), dtype=torch.bool)
        for row, step in enumerate(steps):
            out[row, [self.index[name] for name in step.exclude if name in self.index]] = True
        return out

    def __len__(self) -> int:
        return len(self.tools)


def table_logits(head, table: ToolTable, anchors: torch.Tensor, steps: Sequence[StepInput]) -> torch.Tensor:
    """(batch, n_tools) logits of `p(t | e')` over every tool of `table` (with gradients through `anchors` and
    the head); excluded tools at -inf."""
    lexical = table.lexical([s.query for s in steps]) if head.uses_lexical else None
    later = torch.tensor([s.later for s in steps], device=anchors.device)
    logits = head.logits(anchors, table.vectors.to(anchors.device), lexical, later)
    return logits.masked_fill(table.excluded(steps).to(anchors.device), float("-inf"))


def candidates(
    head,
    tools: ToolBank | ToolTable,
    anchors: np.ndarray | torch.Tensor,
    steps: Sequence[StepInput],
    top_k: int | None = DEFAULT_TOP_K,
    namespace: str | tuple[str, ...] | None = None,
    tags: Sequence[str] = (),
) -> list[list[Candidate]]:
    """For each step's unit anchor (rows of `anchors`), its candidates with their selection probabilities,
    best first (ties: the order of `tools`, the bank's dense order). `namespace`: one, several (a tuple), or
    None for every tool; `tags`: only tools carrying all of them. See the module docstring."""
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    anchors = torch.as_tensor(np.asarray(anchors, dtype=np.float32) if not torch.is_tensor(anchors) else anchors)
    if isinstance(tools, ToolTable):
        if namespace is not None or tags:
            raise ValueError("a ToolTable has no namespaces or tags; filter its tools instead")
        return _table_candidates(head, tools, anchors, steps, top_k)
    return [
        _bank_candidates(head, tools, anchor.numpy(), step, top_k, namespace, tuple(tags))
        for anchor, step in zip(anchors, steps)
    ]


def _ranked(
    head, tools: list[Tool], cosines: torch.Tensor, lexical: torch.Tensor | None, later: bool
) -> list[Candidate]:
    with torch.no_grad():
        probs = torch.softmax(head.sharpen(cosines, lexical, later), dim=0)
    order = torch.argsort(probs, descending=True, stable=True).tolist()
    return [Candidate(tools[i], float(probs[i]), float(cosines[i])) for i in order]


def _table_candidates(
    head, table: ToolTable, anchors: torch.Tensor, steps: Sequence[StepInput], top_k: int | None
) -> list[list[Candidate]]:
    cosines = anchors.to(table.vectors) @ table.vectors.T  # (n, n_tools)
    lexical = table.lexical([s.query for s in steps]) if head.uses_lexical else None
    excluded = table.excluded(steps)
    out = []
    for row, step in enumerate(steps):
        allowed = (~excluded[row]).nonzero()[:, 0]
        keep = allowed
        if top_k is not None:
            by_cosine = allowed[torch.argsort(cosines[row, allowed], descending=True, stable=True)[:top_k]]
            keep = by_cosine
            if lexical is not None:
                matching = allowed[lexical[row, allowed] > 0]
                by_bm25 = matching[torch.argsort(lexical[row, matching], descending=True, stable=True)[:top_k]]
                keep = torch.cat([by_cosine, by_bm25[~torch.isin(by_bm25, by_cosine)]])
                prior = torch.where(torch.isin(keep, by_bm25), lexical[row, keep], 0.0)
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
    head,
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
        hits = bank.search(step.query, k=depth, mode="bm25", namespace=namespace, tags=tags)
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
        torch.tensor([cosine[n] for n in names]),
        torch.tensor([lexical.get(n, 0.0) for n in names]) if lexical else None,
        step.later,
    )
