"""Can a map learned on the train tools' queries move the anchor closer to unseen tools? (MetaTool, seed 0)

    python experiments/2026-11-29-diagnostics/anchor_maps.py [--bench metatool]

Fits maps on E(query) of the train split (the softmax over the train tools, as the SFT selection term) and
reports hit@1 on the val split (val tools, never trained on; the whole catalog as candidates) after each
epoch, against the query embedding alone (dense retrieval). Maps: full (q + M q), low rank (q + q A B, rank
4), diagonal (q * (1 + d)); "query" applies the map to the query only (the residual anchor's shape), "both"
to queries and tools (a change of metric). Frozen features, CPU seconds; no test split is read.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from autotool.benchmarks import benchmark_bank, load_benchmark, load_split, select_queries, steps_of
from autotool.head import ToolTable
from autotool.policy import embed


def features(bench_name: str, split_name: str, table: ToolTable, bench, split):
    steps = [s for q in select_queries(bench, split, split_name) for s in steps_of(q) if s.index == 0]
    steps = [s for s in steps if s.gold in table.index]
    return embed(table.embedder, [s.query.text for s in steps]), torch.tensor([table.index[s.gold] for s in steps])


def fit(kind: str, side: str, lr: float, wd: float, train, val, tools, train_tools, epochs: int = 10) -> list[float]:
    torch.manual_seed(0)
    dim = tools.shape[1]
    if kind == "full":
        m = torch.nn.Parameter(torch.zeros(dim, dim))
        params, f = [m], lambda x: x + x @ m
    elif kind == "lowrank":
        a, b = torch.nn.Parameter(torch.randn(dim, 4) * 0.01), torch.nn.Parameter(torch.zeros(4, dim))
        params, f = [a, b], lambda x: x + x @ a @ b
    else:
        d = torch.nn.Parameter(torch.zeros(dim))
        params, f = [d], lambda x: x * (1 + d)
    log_g = torch.nn.Parameter(torch.tensor(float(np.log(10.0))))
    optimizer = torch.optim.AdamW(
        [{"params": params, "weight_decay": wd}, {"params": [log_g], "weight_decay": 0.0}], lr=lr
    )
    unit = torch.nn.functional.normalize
    (q, y), (vq, vy) = train, val
    targets = torch.tensor([train_tools.index(int(t)) for t in y])
    out = []
    for _ in range(epochs):
        for batch in torch.randperm(len(y)).split(64):
            candidates = unit(f(tools[train_tools]), dim=-1) if side == "both" else tools[train_tools]
            logits = 2 * log_g.exp() * unit(f(q[batch]), dim=-1) @ candidates.T
            loss = torch.nn.functional.cross_entropy(logits, targets[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            catalog = unit(f(tools), dim=-1) if side == "both" else tools
            out.append(float(((unit(f(vq), dim=-1) @ catalog.T).argmax(1) == vy).float().mean()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default="metatool")
    args = parser.parse_args()
    bench = load_benchmark(args.bench)
    split = load_split(bench, 0)
    table = ToolTable.from_bank(benchmark_bank(bench))
    train, val = features(args.bench, "train", table, bench, split), features(args.bench, "val", table, bench, split)
    tools = table.vectors
    train_tools = sorted({int(t) for t in train[1]})
    dense = float(((val[0] @ tools.T).argmax(1) == val[1]).float().mean())
    print(
        f"{args.bench}: {len(train[1])} train queries on {len(train_tools)} tools; {len(val[1])} val queries on "
        f"{len(set(val[1].tolist()))} other tools\n"
    )
    print(
        "| map | applied to | lr | weight decay | val hit@1 after epochs 1..10 | best |\n|---|---|---:|---:|---|---:|"
    )
    print(f"| none (dense retrieval) | | | | {dense:.3f} | {dense:.3f} |")
    for kind, side, lr, wd in [
        ("full", "query", 1e-3, 0.0),
        ("full", "query", 1e-3, 1.0),
        ("full", "query", 1e-2, 0.0),
        ("lowrank", "query", 1e-3, 0.0),
        ("lowrank", "both", 1e-3, 0.0),
        ("lowrank", "both", 1e-4, 0.0),
        ("diagonal", "query", 1e-3, 0.0),
        ("diagonal", "both", 1e-3, 0.0),
    ]:
        curve = fit(kind, side, lr, wd, train, val, tools, train_tools)
        print(
            f"| {kind} | {side} | {lr:g} | {wd:g} | {' '.join(f'{v:.3f}' for v in curve)} | {max(curve):.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
