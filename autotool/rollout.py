"""Rollouts: selection steps written by the policy, batched, with the token bookkeeping training needs.

One step's token sequence, and who writes each part:
```
prompt (system, query, earlier steps, "<think>")                    given
rationale "... </think>"                                            policy (sampled or greedy)
["</think>" if the policy did not close it] "<tool_anchor>" card     inserted; the tool is drawn from
                                                                    p(t | e'), e' from the hidden state at <tool_anchor>
'<tool_call>{"name": ..., "arguments": {...}}</tool_call>'          policy
```
The actions of a step are the rationale tokens, the tool choice and the call tokens: `logprobs` scores all
three under the current parameters, which is what SFT, GRPO and the Plackett-Luce loss are built on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from autotool.calls import CallError, parse_call
from autotool.head import ToolTable, table_logits
from autotool.policy import Policy, embed
from autotool.prompts import TokenBudget, prompt
from autotool.selection import StepInput

TRAINING_BUDGET = TokenBudget(call=64)  # a rollout writes the whole call, name included


@dataclass
class Rollout:
    """One written step. Token lists are ids; `tool` indexes the `ToolTable` it was drawn from."""

    input: StepInput
    prompt_ids: list[int]
    rationale_ids: list[int]  # written by the policy, ending with </think> when it closed the thought
    inserted_ids: list[int]  # [</think>] <tool_anchor> card
    call_ids: list[int]  # written by the policy
    tool: int
    rationale: str
    call_text: str
    closed_think: bool
    tool_logp: float = 0.0  # log p(tool) when it was drawn
    ranking: list[tuple[int, float]] = field(default_factory=list)  # (tool, probability), best first
    query_vector: torch.Tensor | None = None
    rationale_vector: torch.Tensor | None = None

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.rationale_ids + self.inserted_ids + self.call_ids

    @property
    def anchor_position(self) -> int:
        """Index of `<tool_anchor>` in `ids`."""
        return len(self.prompt_ids) + len(self.rationale_ids) + (0 if self.closed_think else 1)

    @property
    def action_mask(self) -> list[bool]:
        """True at the tokens the policy wrote (rationale and call)."""
        return (
            [False] * len(self.prompt_ids)
            + [True] * len(self.rationale_ids)
            + [False] * len(self.inserted_ids)
            + [True] * len(self.call_ids)
        )

    @property
    def selection_mask(self) -> list[bool]:
        """True at the rationale tokens: with the tool choice, the selection segments of Phase II."""
        return (
            [False] * len(self.prompt_ids)
            + [True] * len(self.rationale_ids)
            + [False] * (len(self.inserted_ids) + len(self.call_ids))
        )

    @property
    def call(self) -> dict | None:
        """The parsed call, or None when the text between the call tags is not a call."""
        body = self.call_text.strip()
        if not (body.startswith("<tool_call>") and body.endswith("</tool_call>")):
            return None
        try:
            return parse_call(body[len("<tool_call>") : -len("</tool_call>")])
        except CallError:
            return None

    @property
    def format_ok(self) -> bool:
        """ToolRL's format check: the tags in order (thought closed, call wrapped) and the call parses."""
        return self.closed_think and self.call is not None


def _token(policy: Policy, text: str) -> int:
    return policy.tokenizer.convert_tokens_to_ids(text)


def _padded(sequences: Sequence[list[int]], pad: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in sequences)
    ids = torch.tensor([list(s) + [pad] * (width - len(s)) for s in sequences], device=device)
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in sequences], device=device)
    return ids, mask


def decoder_hidden(policy: Policy, sequences: Sequence[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(batch, width, hidden) last-layer states (after the final norm) of right-padded sequences, and the mask."""
    ids, mask = _padded(sequences, policy.tokenizer.pad_token_id, policy.device)
    decoder = policy.model.get_base_model().get_decoder()
    return decoder(input_ids=ids, attention_mask=mask).last_hidden_state, mask


def selection_logits(
    policy: Policy, table: ToolTable, hidden: torch.Tensor, rollouts: Sequence[Rollout]
) -> torch.Tensor:
    """(batch, n_tools) logits of p(t | e') over `table` for each rollout's anchor (from `hidden`, its states at
    `<tool_anchor>`); excluded tools at -inf."""
    queries = torch.stack([r.query_vector for r in rollouts]).to(hidden.device)
    rationales = torch.stack([r.rationale_vector for r in rollouts]).to(hidden.device)
    return table_logits(policy.head, table, policy.head(hidden, queries, rationales), [r.input for r in rollouts])


def logprobs(
    policy: Policy, table: ToolTable, rollouts: Sequence[Rollout]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probabilities of each rollout's actions under the policy's current parameters (with gradients).

    Returns:
        token_logp (batch, width): log p of each token given the tokens before it, 0 where `mask` is False;
        mask (batch, width): the policy-written tokens (`Rollout.action_mask`);
        tool_logp (batch,): log p(tool | e').
    """
    sequences = [r.ids for r in rollouts]
    hidden, _ = decoder_hidden(policy, sequences)
    device = hidden.device
    actions = torch.tensor([r.action_mask + [False] * (hidden.shape[1] - len(r.ids)) for r in rollouts], device=device)
    targets, _ = _padded(sequences, policy.tokenizer.pad_token_id, device)
    predict = actions.clone()
    predict[:, 0] = False  # the first token has nothing before it (never an action anyway)
    rows, cols = predict.nonzero(as_tuple=True)
    lm_head = policy.model.get_base_model().get_output_embeddings()
    logits = lm_head(hidden[rows, cols - 1])  # the state before each action token predicts it
    token_logp = torch.zeros(actions.shape, dtype=hidden.dtype, device=device)
    token_logp[rows, cols] = torch.log_softmax(logits.float(), dim=-1).gather(1, targets[rows, cols][:, None])[:, 0]
    rows = torch.arange(len(rollouts), device=device)
    anchors = hidden[rows, torch.tensor([r.anchor_position for r in rollouts], device=device)]
    tool_logits = selection_logits(policy, table, anchors, rollouts)
    tool_logp = torch.log_softmax(tool_logits, dim=-1)[rows, torch.tensor([r.tool for r in rollouts], device=device)]
    return token_logp, predict, tool_logp


def prompt_ids(policy: Policy, step: StepInput) -> list[int]:
    return policy.encode(prompt(policy.tokenizer, step.query, step.context, step.shortlist))[0].tolist()


def decode(policy: Policy, ids: list[int]) -> str:
    return policy.tokenizer.decode(ids, skip_special_tokens=False)


def think(
    policy: Policy,
    prompts: Sequence[list[int]],
    mode: str,
    max_new_tokens: int,
    sample: bool = False,
    temperature: float = 1.0,
) -> tuple[list[list[int]], list[bool], list[str], list[list[int]]]:
    """The rationale part of each step: what the policy wrote (ending with `</think>` when it closed the
    thought; `fast` mode closes it at once), whether it closed it, the rationale text, and the prompt up to and
    including `<tool_anchor>` (a `</think>` inserted where the policy did not write one)."""
    think_end, anchor_id = _token(policy, "</think>"), _token(policy, "<tool_anchor>")
    if mode == "reason":
        written = policy.generate_ids(prompts, max_new_tokens, "</think>", sample, temperature)
    elif mode == "fast":
        written = [[think_end] for _ in prompts]
    else:
        raise ValueError(f"unknown mode {mode!r}; expected reason or fast")
    closed = [bool(w) and w[-1] == think_end for w in written]
    rationales = [decode(policy, w[:-1] if c else w).strip() for w, c in zip(written, closed)]
    heads = [list(p) + w + ([] if c else [think_end]) + [anchor_id] for p, w, c in zip(prompts, written, closed)]
    return written, closed, rationales, heads


def hidden_at_anchor(policy: Policy, heads: Sequence[list[int]]) -> torch.Tensor | None:
    """(n, hidden) last-layer states at the last token of each sequence (its `<tool_anchor>`); None while the
    head's W is zero (the state cannot move the anchor)."""
    if not policy.head_values.uses_hidden:
        return None
    with torch.inference_mode():
        hidden, mask = decoder_hidden(policy, heads)
        return hidden[torch.arange(len(heads), device=hidden.device), mask.sum(1) - 1].float().clone()


def rollout(
    policy: Policy,
    table: ToolTable,
    steps: Sequence[StepInput],
    group: int = 1,
    sample: bool = True,
    temperature: float = 1.0,
    mode: str = "reason",
    budget: TokenBudget = TRAINING_BUDGET,
    keep: int = 10,
) -> list[list[Rollout]]:
    """Write `group` rollouts for each step: rationale, tool drawn from p(t | e'), call.

    Args:
        table: The tools to choose among (training: the train tools only; evaluation: the whole bank).
        sample: Sample tokens and tool (training); else greedy (evaluation).
        mode: `reason` writes a rationale; `fast` closes the thought at once.
        keep: How many of the most probable tools to record in `Rollout.ranking`.
    """
    think_end, anchor_id = _token(policy, "</think>"), _token(policy, "<tool_anchor>")
    prompts = [prompt_ids(policy, s) for s in steps for _ in range(group)]
    inputs = [s for s in steps for _ in range(group)]
    written, closed, rationales, heads = think(policy, prompts, mode, budget.rationale, sample, temperature)
    query_vectors = embed(table.embedder, [s.query for s in inputs])
    rationale_vectors = embed(table.embedder, rationales)
    rollouts = [
        Rollout(s, p, w, [], [], -1, r, "", c, query_vector=q, rationale_vector=v)
        for s, p, w, r, c, q, v in zip(inputs, prompts, written, rationales, closed, query_vectors, rationale_vectors)
    ]
    with torch.inference_mode():
        hidden, mask = decoder_hidden(policy, heads)
        last = hidden[torch.arange(len(heads), device=hidden.device), mask.sum(1) - 1]
        probs = torch.softmax(selection_logits(policy, table, last, rollouts), dim=-1)
    chosen = torch.multinomial(probs, 1)[:, 0] if sample else probs.argmax(dim=-1)
    top = probs.topk(min(keep, len(table)), dim=-1)
    for i, r in enumerate(rollouts):
        r.tool = int(chosen[i])
        r.tool_logp = float(probs[i, r.tool].log())
        r.ranking = [
            (int(t), float(p))
            for t, p in zip(top.indices[i], top.values[i])
            if table.tools[int(t)].qualified_name not in r.input.exclude
        ]
        r.inserted_ids = (
            ([] if r.closed_think else [think_end]) + [anchor_id] + policy.encode(table.cards[r.tool])[0].tolist()
        )
    calls = policy.generate_ids(
        [r.prompt_ids + r.rationale_ids + r.inserted_ids for r in rollouts],
        budget.call,
        "</tool_call>",
        sample,
        temperature,
    )
    for r, c in zip(rollouts, calls):
        r.call_ids, r.call_text = c, decode(policy, c)
    return [rollouts[i * group : (i + 1) * group] for i in range(len(steps))]


def teacher_rollout(
    policy: Policy,
    table: ToolTable,
    step: StepInput,
    rationale: str,
    tool: str,
    call: str,
    query_vector: torch.Tensor,
    rationale_vector: torch.Tensor,
) -> Rollout:
    """The gold step as a rollout, for supervised training: the same tokens a policy would have written."""
    think_end, anchor_id = _token(policy, "</think>"), _token(policy, "<tool_anchor>")
    encode = lambda text: policy.encode(text)[0].tolist()
    index = table.index[tool]
    return Rollout(
        step,
        prompt_ids(policy, step),
        encode(rationale) + [think_end],
        [anchor_id] + encode(table.cards[index]),
        encode(f"<tool_call>{call}</tool_call>"),
        index,
        rationale,
        f"<tool_call>{call}</tool_call>",
        True,
        query_vector=query_vector,
        rationale_vector=rationale_vector,
    )
