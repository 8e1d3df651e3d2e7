"""Query likelihood as a reranker (UPR, Sachan et al. 2022): does log p(request | tool) under the policy's own
language model reorder fast mode's best candidates better than fast mode alone?

    python experiments/2026-12-02-query-likelihood/score.py apibank toolalpaca --out runs/ql

For each request (one call per request, as issue #23 counts), fast mode's candidates through the served path
(`select_steps(..., mode="fast", arguments=False)`, the default tuned embedder); for the best `--depth` of them,
the mean log-probability of the request's tokens after `TEMPLATE` with the tool's line (`prompts.shortlist_line`),
under the language model (`--lm backbone`: SmolLM2-135M-Instruct as published; `--lm shipped`: the shipped
policy's, adapters folded in). Writes every candidate's fast probability and likelihood, so the combination
`log p_fast + c * (ql - mean ql)` can be replayed for any c (`--grid`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.benchmarks import benchmark_bank, catalog_queries
from autotool.policy import Policy
from autotool.prompts import shortlist_line
from autotool.select import SHIPPED_POLICY, select_steps
from autotool.selection import StepInput

TEMPLATE = "Tool: {line}\nA user's request that needs this tool: "


def language_model(which: str):
    if which == "shipped":
        policy = Policy.load(SHIPPED_POLICY)
        return policy.model, policy.tokenizer
    from autotool.backbone import load_backbone

    model, tokenizer = load_backbone(None)
    return model.eval(), tokenizer


def likelihoods(model, tokenizer, pairs: list[tuple[str, str]], batch: int = 16) -> list[float]:
    """Mean log p(request tokens | TEMPLATE with the tool's line) for each (line, request). The logits are taken
    at the request's positions only (the vocabulary is 49k wide)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder, head = base.get_decoder(), base.get_output_embeddings()
    heads = [tokenizer(TEMPLATE.format(line=line))["input_ids"] for line, _ in pairs]
    tails = [tokenizer(request[:600])["input_ids"][:96] for _, request in pairs]
    order = sorted(range(len(pairs)), key=lambda i: len(heads[i]) + len(tails[i]))
    out = [0.0] * len(pairs)
    pad = tokenizer.pad_token_id or 0
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        seqs = [heads[i] + tails[i] for i in rows]
        width = max(map(len, seqs))
        ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs])
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
        with torch.inference_mode():
            hidden = decoder(input_ids=ids, attention_mask=mask).last_hidden_state
            for j, i in enumerate(rows):
                h, t = len(heads[i]), tails[i]
                logp = torch.log_softmax(head(hidden[j, h - 1 : h + len(t) - 1]).float(), dim=-1)
                out[i] = float(logp[torch.arange(len(t)), torch.tensor(t)].mean())
    return out


@click.command(help=__doc__)
@click.argument("catalogs", nargs=-1, required=True)
@click.option("--lm", type=click.Choice(["backbone", "shipped"]), default="backbone", show_default=True)
@click.option("--depth", default=5, show_default=True, help="Fast mode's best candidates reranked.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
def main(catalogs, lm, depth, out):
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(2)
    model, tokenizer = language_model(lm)
    for spec in catalogs:
        bench, queries = catalog_queries(spec)
        bank = benchmark_bank(bench, "tools")
        policy = Policy.load(SHIPPED_POLICY, bank)
        began = time.perf_counter()
        rows = []
        for start in range(0, len(queries), 32):
            chunk = queries[start : start + 32]
            chosen = select_steps(policy, bank, [StepInput(q.text) for q in chunk], k=depth, mode="fast", arguments=False, min_cosine=0)
            pairs = [(shortlist_line(t), q.text) for q, s in zip(chunk, chosen) for t, _ in s.candidates]
            scores = iter(likelihoods(model, tokenizer, pairs))
            for q, s in zip(chunk, chosen):
                rows.append(
                    {
                        "id": q.id,
                        "gold": list(q.gold_tools),
                        "candidates": [t.name for t, _ in s.candidates],
                        "p_fast": [p for _, p in s.candidates],
                        "ql": [next(scores) for _ in s.candidates],
                    }
                )
        seconds = time.perf_counter() - began
        (out / f"{spec.replace(':', '_')}.json").write_text(json.dumps({"seconds": seconds, "lm": lm, "rows": rows}))
        print(spec, len(rows), f"{seconds:.0f} s", report(rows), flush=True)


def report(rows, grid=(0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 1000.0)) -> str:
    cells = []
    for c in grid:
        hits = []
        for r in rows:
            ql = np.array(r["ql"])
            score = np.log(np.maximum(r["p_fast"], 1e-12)) + c * (ql - ql.mean())
            hits.append(r["candidates"][int(np.argmax(score))] in r["gold"])
        cells.append(f"c={c:g} {np.mean(hits):.3f}")
    return ", ".join(cells)


if __name__ == "__main__":
    main()
