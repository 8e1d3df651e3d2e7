"""The hidden-state anchor W h trained on several catalogs, with a low rank and weight decay (issue #23, lever 3);
fast mode, a replay of the served path.

1. For each training request (`--train` specs, `autotool.benchmarks.catalog_queries`'s), the policy's last-layer
   state h at `<tool_anchor>` in fast mode (the prompt, `</think>`, `<tool_anchor>`: what `select_steps` reads when
   W is not zero) and the request's embedding q.
2. W = U V (rank `--rank`) is trained with AdamW (`--weight-decay`) so that `unit(q + W unit(h))` picks the gold tool
   among all its catalog's tools: cross-entropy over `2 g e'.e_k`, g the policy's. Nothing else moves.
3. On each judged catalog (`--judge` specs; `metatool-fresh` is fresh.py's 1,000 of
   2026-12-07-loo-metatool-cfb-rerank), fast mode's first choice per request with the head's W set to s W for each
   s of SCALES: the anchor, the candidates and the reranker's reordering run as `select_steps` runs them (the
   functions of `training.fit_rationale.grid_hits`, with h in place of a rationale).

    python experiments/2026-12-07-hidden-anchor-catalogs/probe.py --policy P --embedder E --out DIR \\
        --train seal_tools:all:1000,bfcl:all:1000 --judge apibank,toolalpaca

`DIR/results.md`: the training loss and each judged catalog's hit@1 at each s; `DIR/results.json`: every judged
request's hit at each s.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import click
import numpy as np
import torch
from tqdm import tqdm

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from autotool.benchmarks import benchmark_bank, catalog_queries  # noqa: E402
from autotool.policy import Policy  # noqa: E402
from autotool.rerank import Remembered, rerank_candidates  # noqa: E402
from autotool.rollout import decoder_hidden, prompt_ids, think  # noqa: E402
from autotool.selection import DEFAULT_TOP_K, StepInput, candidates, embedded  # noqa: E402

SCALES = (0.0, 0.25, 0.5, 1.0, 2.0)


def queries_of(spec: str):
    if spec == "metatool-fresh":
        path = ROOT / "experiments/2026-12-07-loo-metatool-cfb-rerank/fresh.py"
        module_spec = importlib.util.spec_from_file_location("fresh", path)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        return module.fresh_metatool_requests()
    return catalog_queries(spec)


def states(policy: Policy, queries, batch: int, label: str) -> np.ndarray:
    """(n, hidden) last-layer states at fast mode's `<tool_anchor>`, as `hidden_at_anchor` reads them."""
    out = []
    for start in tqdm(range(0, len(queries), batch), desc=f"{label}: states", unit="batch"):
        prompts = [prompt_ids(policy, StepInput(q.text)) for q in queries[start : start + batch]]
        heads = think(policy, prompts, "fast", 0)[3]
        with torch.inference_mode():
            hidden, mask = decoder_hidden(policy, heads)
            out.append(hidden[torch.arange(len(heads)), mask.sum(1) - 1].float().numpy())
    return np.concatenate(out)


def unit(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(x, dim=-1)


def train_map(data, g: float, rank: int, weight_decay: float, epochs: int, lr: float, seed: int):
    """W (dim, hidden) = U V, trained on `data`: per catalog (h, q, gold index, tool matrix). Returns W and the
    mean loss of each epoch."""
    torch.manual_seed(seed)
    hidden, dim = data[0][0].shape[1], data[0][1].shape[1]
    U = torch.zeros(dim, rank, requires_grad=True)
    V = torch.nn.Parameter(torch.randn(rank, hidden) / hidden**0.5)
    optimizer = torch.optim.AdamW([U, V], lr=lr, weight_decay=weight_decay)
    batches = [
        (c, idx)
        for c, (h, _, _, _) in enumerate(data)
        for idx in np.array_split(np.arange(len(h)), max(1, len(h) // 32))
    ]
    tensors = [
        (unit(torch.from_numpy(h)), torch.from_numpy(q), torch.from_numpy(gold), torch.from_numpy(tools))
        for h, q, gold, tools in data
    ]
    losses = []
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        total = 0.0
        for i in rng.permutation(len(batches)):
            c, idx = batches[i]
            h, q, gold, tools = tensors[c]
            anchor = unit(q[idx] + h[idx] @ (U @ V).T)
            loss = torch.nn.functional.cross_entropy(2 * g * anchor @ tools.T, gold[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        losses.append(total / sum(len(h) for h, _, _, _ in data))
    return (U @ V).detach().numpy(), losses


@click.command()
@click.option("--policy", "policy_path", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--embedder", required=True)
@click.option("--train", "train_specs", required=True, help="Comma-separated training catalog specs.")
@click.option("--judge", "judge_specs", required=True, help="Comma-separated judged catalog specs.")
@click.option("--fit", "fit_specs", default="apibank,toolalpaca", show_default=True, help="The judged specs that fit s.")
@click.option("--rank", type=int, default=16, show_default=True)
@click.option("--weight-decay", type=float, default=0.01, show_default=True)
@click.option("--epochs", type=int, default=3, show_default=True)
@click.option("--lr", type=float, default=1e-3, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--batch", type=int, default=32, show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
def main(policy_path, embedder, train_specs, judge_specs, fit_specs, rank, weight_decay, epochs, lr, seed, batch, out):
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    data, counts, policy = [], {}, None
    for spec in train_specs.split(","):
        bench, queries = queries_of(spec)
        bank = benchmark_bank(bench, embedder)
        policy = Policy.load(policy_path, bank)
        names = [t.name for t in bank]
        index = {n: i for i, n in enumerate(names)}
        kept = [q for q in queries if any(t in index for t in q.gold_tools)]
        gold = np.array([next(index[t] for t in q.gold_tools if t in index) for q in kept])
        h = states(policy, kept, batch, spec)
        q = embedded(bank.embedder, [x.text for x in kept])
        data.append((h, q, gold, bank.vectors(names).astype(np.float32)))
        counts[spec] = len(kept)
    g = policy.head_values.g
    W, losses = train_map(data, g, rank, weight_decay, epochs, lr, seed)
    trained_s = time.perf_counter() - began
    kept, means = {}, {}
    for spec in judge_specs.split(","):
        bench, queries = queries_of(spec)
        bank = benchmark_bank(bench, embedder)
        policy = Policy.load(policy_path, bank)
        steps = [StepInput(q.text) for q in queries]
        vectors = embedded(bank.embedder, [q.text for q in queries])
        h = states(policy, queries, batch, spec)
        reranker = None if policy.rerank is None else Remembered(policy.reranker)
        hits = {}
        for s in SCALES:
            values = replace(policy.head_values, W=np.float32(s) * W)
            ranked = candidates(values, bank, values.anchors(h, vectors, None), steps, DEFAULT_TOP_K, None, ())
            if reranker is not None:
                ranked = [rerank_candidates(reranker, policy.rerank, q.text, r) for q, r in zip(queries, ranked)]
            hits[f"{s:g}"] = [float(r[0].tool.name in q.gold_tools) for q, r in zip(queries, ranked)]
        means[spec] = {s: float(np.mean(v)) for s, v in hits.items()}
        kept[spec] = [{"id": q.id, "hit": {s: v[i] for s, v in hits.items()}} for i, q in enumerate(queries)]
    (out / "results.json").write_text(json.dumps({"losses": losses, "counts": counts, "judged": kept}) + "\n")
    np.save(out / "W.npy", W)
    specs, fitting = list(kept), fit_specs.split(",")
    fit_mean = {f"{s:g}": float(np.mean([means[spec][f"{s:g}"] for spec in fitting])) for s in SCALES}
    fitted = max(SCALES, key=lambda s: (round(fit_mean[f"{s:g}"], 9), -s))
    lines = [
        f"# W h trained on several catalogs: {policy_path}, embedder `{embedder}`",
        "",
        f"Trained on {counts} requests (rank {rank}, weight decay {weight_decay:g}, {epochs} epochs, lr {lr:g}, "
        f"seed {seed}) in {trained_s:.0f} s; loss by epoch: " + ", ".join(f"{x:.3f}" for x in losses) + ". "
        f"|W| (Frobenius) {np.linalg.norm(W):.3f}. Fast mode's hit@1 per request, W scaled by s; reranker at "
        f"c = {policy.rerank.weight:g}. {time.perf_counter() - began:.0f} s in all. s fitted on the mean of "
        f"{', '.join(fitting)} (ties to the smaller): **{fitted:g}**.",
        "",
        "| s | " + " | ".join(specs) + " | fit mean |",
        "|---:|" + "---:|" * (len(specs) + 1),
    ]
    for s in SCALES:
        row = [means[spec][f"{s:g}"] for spec in specs]
        lines.append(f"| {s:g} | " + " | ".join(f"{x:.3f}" for x in row) + f" | {fit_mean[f'{s:g}']:.4f} |")
    report = "\n".join(lines) + "\n"
    (out / "results.md").write_text(report)
    click.echo(report)


if __name__ == "__main__":
    main()
