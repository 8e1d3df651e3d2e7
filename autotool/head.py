"""The anchor head and the selection distribution in PyTorch, for training: gradients flow through them.

`AnchorHead` holds the head's values as parameters; `ToolTable` and `table_logits` give `p(t | e')` over every
tool of a table (AutoTool eq. 4; see autotool/selection.py for the formula). Choosing reads the same values
without PyTorch (`AnchorHead.values()`, `autotool.selection.HeadValues`), so a process that only chooses
never imports it; tests/autotool/test_selection.py holds the two equal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from autotool.prompts import tool_card
from autotool.selection import ANCHORS, HEAD_KEYS, HeadValues, StepInput, lexical_query, normalised_bm25
from toolbank import Tool, ToolBank
from toolbank.search import BM25Index


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


class AnchorHead(nn.Module):
    """`e' = normalize(W h + a q + b r)` (residual) or `normalize(W h)` (pure), and the sharpness g."""

    def __init__(self, hidden: int, dim: int, anchor: str = "residual", sharpness: float = 10.0):
        super().__init__()
        if anchor not in ANCHORS:
            raise ValueError(f"unknown anchor {anchor!r}; expected one of {', '.join(ANCHORS)}")
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
        # The share of the called tools' directions taken out of a later step's anchor (set, not trained).
        self.register_buffer("explain", torch.tensor(0.0))

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray], anchor: str) -> AnchorHead:
        """The head of a saved state (`HEAD_KEYS`, arrays as `anchor_head.safetensors` holds them)."""
        dim, hidden = state["W.weight"].shape
        head = cls(hidden, dim, anchor)
        head.load_state_dict({key: torch.from_numpy(np.array(state[key])) for key in HEAD_KEYS})
        return head

    def values(self) -> HeadValues:
        """Its current values, for choosing (`autotool.selection`)."""
        state = {k: v.detach().cpu().numpy().copy() for k, v in self.state_dict().items()}  # a snapshot, W included
        return HeadValues.from_state(state, self.anchor)

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

    def lexical(self, steps: Sequence[StepInput]) -> torch.Tensor:
        """(n, n_tools) normalised BM25 score of each step's `lexical_query` against each tool's text."""
        if self._bm25 is None:
            self._bm25 = BM25Index(list(range(len(self.tools))), [t.text for t in self.tools])
        text_of = {t.qualified_name: t.text for t in self.tools}.get
        queries = [lexical_query(step, text_of) for step in steps]
        return torch.from_numpy(np.stack([normalised_bm25(self._bm25.scores(q)) for q in queries]))

    def explaining(self, steps: Sequence[StepInput]) -> torch.Tensor:
        """(n, n_tools) bool: the distinct called tools whose directions each step's anchor is rid of
        (`StepInput.explaining`; none at a first step)."""
        return self._marked([step.explaining for step in steps])

    def excluded(self, steps: Sequence[StepInput]) -> torch.Tensor:
        """(n, n_tools) bool: the tools each step may not choose again."""
        return self._marked([step.exclude for step in steps])

    def _marked(self, names_per_row: Sequence[Sequence[str]]) -> torch.Tensor:
        """(rows, n_tools) bool: each row's named tools that the table holds."""
        out = torch.zeros(len(names_per_row), len(self.tools), dtype=torch.bool)
        for row, names in enumerate(names_per_row):
            out[row, [self.index[name] for name in names if name in self.index]] = True
        return out

    def __len__(self) -> int:
        return len(self.tools)


def explained(explain, anchors: torch.Tensor, tools: torch.Tensor, explaining: torch.Tensor) -> torch.Tensor:
    """`autotool.selection.explained_anchors` in PyTorch: each row of `anchors` with `explain` of the directions of
    the tools (rows of `tools`) that `explaining` (n, n_tools) marks taken out, then scaled to unit length; rows
    that mark none, or `explain` 0, as they are."""
    if not float(explain):
        return anchors
    marked = explaining.to(anchors.device)
    projection = ((anchors @ tools.T) * marked.to(anchors.dtype)) @ tools
    out = nn.functional.normalize(anchors - explain * projection, dim=-1)
    return torch.where(marked.any(dim=1, keepdim=True), out, anchors)


def table_logits(head: AnchorHead, table: ToolTable, anchors: torch.Tensor, steps: Sequence[StepInput]) -> torch.Tensor:
    """(batch, n_tools) logits of `p(t | e')` over every tool of `table` (with gradients through `anchors` and
    the head); excluded tools at -inf."""
    if float(head.explain):
        anchors = explained(head.explain, anchors, table.vectors.to(anchors.device), table.explaining(steps))
    lexical = table.lexical(steps) if head.uses_lexical else None
    later = torch.tensor([s.later for s in steps], device=anchors.device)
    logits = head.logits(anchors, table.vectors.to(anchors.device), lexical, later)
    return logits.masked_fill(table.excluded(steps).to(anchors.device), float("-inf"))
