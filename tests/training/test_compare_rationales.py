"""Paired val comparison of two policies' rationales (the script in experiments/2026-11-29-diagnostics/)."""

import importlib.util
import json
from pathlib import Path

from helpers import write_bench

from autotool.benchmarks import load_benchmark

SCRIPT = Path(__file__).parents[2] / "experiments" / "2026-11-29-diagnostics" / "compare_rationales.py"
_spec = importlib.util.spec_from_file_location("compare_rationales", SCRIPT)
compare_rationales = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_rationales)


def write(folder, bench, rows):
    folder.mkdir()
    with open(folder / f"rationales-{bench.name}.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


def test_a_rationale_that_restates_the_gold_tool_wins_and_mismatched_queries_are_refused(tmp_path, capsys):
    bench = load_benchmark(write_bench(tmp_path / "tiny"))
    queries = [("tell me something", t) for t in bench.tools]  # the query alone points nowhere in particular
    write(tmp_path / "before", bench, [{"query": q, "gold": t.name, "rationale": ""} for q, t in queries])
    later = [{"query": "then more", "index": 1, "gold": t.name, "rationale": ""} for t in bench.tools]  # skipped
    write(tmp_path / "after", bench, [{"query": q, "gold": t.name, "rationale": t.text} for q, t in queries] + later)
    args = ["--bench", str(bench.folder), "--b", "10", "--embedder", "hash:64"]
    assert compare_rationales.main([str(tmp_path / "before"), str(tmp_path / "after"), *args]) == 0
    row = capsys.readouterr().out.splitlines()[-1].split("|")
    n, before, after = int(row[2]), float(row[3]), float(row[4])
    assert n == len(bench.tools) and after == 1.0 and before < 0.5  # the same query for all: one tool at most
    write(tmp_path / "other", bench, [{"query": "x", "gold": t.name, "rationale": ""} for t in bench.tools])
    assert compare_rationales.main([str(tmp_path / "before"), str(tmp_path / "other"), *args]) == 2
    assert "different" in capsys.readouterr().err


def test_the_lexical_prior_is_added_to_the_cosine(tmp_path):
    import torch

    from autotool.benchmarks import benchmark_bank
    from autotool.rollout import ToolTable

    bench = load_benchmark(write_bench(tmp_path / "tiny"))
    table = ToolTable.from_bank(benchmark_bank(bench, "hash:64", root=tmp_path / "banks"))
    rows = [{"query": t.text, "gold": t.name, "rationale": ""} for t in table.tools]  # each query is its tool's text
    table.vectors = torch.nn.functional.normalize(
        torch.ones_like(table.vectors), dim=-1
    )  # dense cannot tell them apart
    assert compare_rationales.hits(table, rows, b=0.0).mean() < 0.5  # every tie goes to the first tool
    assert compare_rationales.hits(table, rows, b=0.0, lexical=1.0).mean() == 1.0  # BM25 finds each from its text
