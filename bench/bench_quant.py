"""Would int8 dynamic quantisation make the query embedding (#2) or the policy's decoding (#4) fast enough?

    .venv/bin/python bench/bench_quant.py [--queries 200] [--prompts 8] [--tokens 32]

`torch.ao.quantization.quantize_dynamic` on every `nn.Linear` (int8 weights, activations quantised per call),
against the float32 model, in the same run (float32 timed before and after, to show the noise):

- all-MiniLM-L6-v2: single-query `encode` p50/p95 over real MetaTool queries, and how far the int8
  embeddings move: cosine to the float32 embedding, and agreement of the top-1 and top-10 tools over the
  MetaTool catalog.
- SmolLM2-135M-Instruct (the default backbone): milliseconds per generated token (greedy, a fixed number
  of new tokens) and how many greedy continuations stay identical.

Run it alone (two jobs on 2 cores slow torch several-fold). Prints a Markdown table; writes bench/out/quant.json.
"""

from __future__ import annotations

import copy
import json
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import click
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parents[1]))
from training.cli import doc_help

DATA = Path(__file__).parents[1] / "autotool" / "data" / "metatool"
OUT = Path(__file__).parent / "out"


def int8(model):
    return torch.ao.quantization.quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8)


def p50_p95(seconds: list[float], scale: float = 1000.0) -> tuple[float, float]:
    return float(np.percentile(seconds, 50) * scale), float(np.percentile(seconds, 95) * scale)


def bench_embedder(queries: list[str]) -> dict:
    from sentence_transformers import SentenceTransformer

    from toolbank.embed import default_model_folder

    fp32 = SentenceTransformer(str(default_model_folder()), device="cpu", local_files_only=True)
    q8 = int8(fp32)
    tools = [json.loads(line) for line in open(DATA / "tools.jsonl")]
    catalog = fp32.encode([f"{t['name']}: {t['description']}" for t in tools], normalize_embeddings=True)

    def latency(model) -> tuple[float, float]:
        for q in queries[:10]:
            model.encode([q])
        seconds = []
        for q in queries:
            began = time.perf_counter()
            model.encode([q], normalize_embeddings=True)
            seconds.append(time.perf_counter() - began)
        return p50_p95(seconds)

    timings = {"float32": latency(fp32), "int8": latency(q8), "float32 again": latency(fp32)}
    a = fp32.encode(queries, normalize_embeddings=True)
    b = q8.encode(queries, normalize_embeddings=True)
    cos = (a * b).sum(1)
    top_a, top_b = np.argsort(-a @ catalog.T, 1)[:, :10], np.argsort(-b @ catalog.T, 1)[:, :10]
    return {
        "timings_ms": timings,
        "cos_mean": float(cos.mean()),
        "cos_min": float(cos.min()),
        "top1_agree": float((top_a[:, 0] == top_b[:, 0]).mean()),
        "top10_overlap": float(np.mean([len(set(x) & set(y)) / 10 for x, y in zip(top_a, top_b)])),
    }


def bench_backbone(prompts: list[str], tokens: int) -> dict:
    from autotool.backbone import load_backbone

    fp32, tokenizer = load_backbone(None)
    q8 = int8(fp32)

    def run(model) -> tuple[list[str], float]:
        outs, per_token = [], []
        for text in prompts:
            ids = tokenizer.apply_chat_template(
                [{"role": "user", "content": text}], add_generation_prompt=True, return_tensors="pt", return_dict=True
            )["input_ids"]
            began = time.perf_counter()
            with torch.inference_mode():
                out = model.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=tokens,
                    min_new_tokens=tokens,
                    do_sample=False,
                    pad_token_id=tokenizer.eos_token_id,
                )
            per_token.append((time.perf_counter() - began) / tokens)
            outs.append(tokenizer.decode(out[0, ids.shape[1] :]))
        return outs, float(np.median(per_token) * 1000)

    a, fp32_ms = run(fp32)
    b, int8_ms = run(q8)
    _, again_ms = run(fp32)
    return {
        "ms_per_token": {"float32": fp32_ms, "int8": int8_ms, "float32 again": again_ms},
        "identical": sum(x == y for x, y in zip(a, b)),
        "prompts": len(prompts),
        "example": {"float32": a[0][:160], "int8": b[0][:160]},
    }


@click.command(help=doc_help(__doc__))
@click.option("--queries", type=int, default=200, show_default=True, help="Real MetaTool queries embedded.")
@click.option("--prompts", type=int, default=8, show_default=True, help="Prompts the backbone continues.")
@click.option("--tokens", type=int, default=32, show_default=True, help="New tokens per greedy continuation.")
@click.pass_context
def main(ctx: click.Context, **_) -> None:
    args = SimpleNamespace(**ctx.params)
    warnings.filterwarnings("ignore")
    lines = [json.loads(line)["query"] for line in open(DATA / "queries.jsonl")]
    queries = lines[:: max(1, len(lines) // args.queries)][: args.queries]
    embedder = bench_embedder(queries)
    backbone = bench_backbone(queries[: args.prompts], args.tokens)

    e, g = embedder["timings_ms"], backbone["ms_per_token"]
    print("\n| model | measure | float32 | int8 | float32 again | int8 / float32 |\n|---|---|---:|---:|---:|---:|")
    print(
        f"| all-MiniLM-L6-v2 | one query, p50 ms | {e['float32'][0]:.1f} | {e['int8'][0]:.1f} | "
        f"{e['float32 again'][0]:.1f} | {e['int8'][0] / e['float32'][0]:.2f} |"
    )
    print(
        f"| all-MiniLM-L6-v2 | one query, p95 ms | {e['float32'][1]:.1f} | {e['int8'][1]:.1f} | "
        f"{e['float32 again'][1]:.1f} | {e['int8'][1] / e['float32'][1]:.2f} |"
    )
    print(
        f"| SmolLM2-135M | ms per token (greedy, {args.tokens} new) | {g['float32']:.1f} | {g['int8']:.1f} | "
        f"{g['float32 again']:.1f} | {g['int8'] / g['float32']:.2f} |"
    )
    print(
        f"\nFidelity of int8: MiniLM cosine to float32 mean {embedder['cos_mean']:.3f} (min {embedder['cos_min']:.3f}); "
        f"top-1 tool agrees on {embedder['top1_agree']:.0%} of {len(queries)} queries, top-10 overlap "
        f"{embedder['top10_overlap']:.0%}. SmolLM2: {backbone['identical']} of {backbone['prompts']} greedy "
        f"continuations identical.\n  float32: {backbone['example']['float32']!r}\n  int8:    "
        f"{backbone['example']['int8']!r}"
    )
    OUT.mkdir(exist_ok=True)
    (OUT / "quant.json").write_text(
        json.dumps({"embedder": embedder, "backbone": backbone, "args": ctx.params}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
