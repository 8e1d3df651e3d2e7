"""Example requests for every tool of a catalog, written by the stock backbone (SmolLM2-135M-Instruct) from the
tool's name and description with four fixed examples from MetaTool's train split. Issue #23, lever 4
(Re-Invoke's document expansion), measured before anything ships.

    python experiments/2026-12-01-document-expansion/generate.py apibank toolalpaca metatool

Writes `requests-<catalog>.jsonl` here: one line per tool, {"name", "requests": [...]}.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
import torch

sys.path.insert(0, str(Path(__file__).parents[2]))

from autotool.backbone import load_backbone
from autotool.benchmarks import load_benchmark, load_split

HERE = Path(__file__).parent


def shots() -> list[tuple[str, str]]:
    """Four (tool line, request) pairs: the first single-tool MetaTool train queries of four distinct tools."""
    bench = load_benchmark("metatool")
    split = load_split(bench, 0)
    train = set(split.query_ids("train"))
    tools = {t.name: t for t in bench.tools}
    out, used = [], set()
    for q in bench.queries:
        if q.id in train and len(q.gold_tools) == 1 and q.gold_tools[0] not in used and len(q.text) < 120:
            used.add(q.gold_tools[0])
            out.append((tool_line(tools[q.gold_tools[0]]), q.text))
        if len(out) == 4:
            return out
    raise RuntimeError("fewer than four MetaTool train tools")


def tool_line(tool) -> str:
    return f"Tool: {tool.name}: {tool.description[:200]}"


@click.command()
@click.argument("catalogs", nargs=-1, required=True)
@click.option("--per-tool", default=4, show_default=True)
@click.option("--batch", default=8, show_default=True)
@click.option("--seed", default=0, show_default=True)
def main(catalogs, per_tool, batch, seed):
    model, tok = load_backbone()
    tok.padding_side = "left"
    head = "".join(f"{line}\nRequest: {text}\n\n" for line, text in shots())
    for catalog in catalogs:
        torch.manual_seed(seed)
        tools = load_benchmark(catalog).tools
        start, rows = time.time(), []
        for i in range(0, len(tools), batch):
            chunk = tools[i : i + batch]
            enc = tok([head + tool_line(t) + "\nRequest:" for t in chunk], return_tensors="pt", padding=True)
            with torch.no_grad():
                out = model.generate(
                    **enc,
                    max_new_tokens=40,
                    do_sample=True,
                    temperature=0.7,
                    top_p=0.95,
                    num_return_sequences=per_tool,
                    stop_strings=["\n"],
                    tokenizer=tok,
                    pad_token_id=tok.pad_token_id,
                )
            texts = tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
            for j, tool in enumerate(chunk):
                found = [t.strip().split("\n")[0].strip() for t in texts[j * per_tool : (j + 1) * per_tool]]
                rows.append({"name": tool.name, "requests": [t for t in found if t]})
            print(f"{catalog}: {len(rows)}/{len(tools)} tools, {time.time() - start:.0f} s", file=sys.stderr)
        (HERE / f"requests-{catalog}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"{catalog}: {len(tools)} tools in {time.time() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
