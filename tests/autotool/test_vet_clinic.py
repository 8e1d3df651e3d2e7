"""The vet clinic example catalog (examples/vet_clinic): it loads, and its gold calls are valid. No models."""

import datetime
from pathlib import Path

import pytest

from autotool.benchmarks import load_benchmark, load_no_tool, steps_of
from autotool.calls import schema_errors

FOLDER = Path(__file__).resolve().parents[2] / "examples" / "vet_clinic"


@pytest.fixture(scope="module")
def bench():
    return load_benchmark(FOLDER)


def test_counts(bench):
    assert len(bench.tools) >= 22
    assert len(bench.queries) >= 32
    assert sum(len(steps_of(q)) == 2 for q in bench.queries) >= 6
    assert all(t.namespace == "vet" and t.tags for t in bench.tools)
    assert len({q.id for q in bench.queries}) == len(bench.queries)


def test_gold_calls_are_valid(bench):
    tools = {t.name: t for t in bench.tools}
    for query in bench.queries:
        assert query.calls, query.id
        assert list(query.gold_tools) == list(dict.fromkeys(c["tool"] for c in query.calls)), query.id
        for step in steps_of(query):
            assert step.gold in tools, step.id
            schema = tools[step.gold].parameters
            assert schema_errors(step.gold_args, schema) == [], step.id
            for key, value in step.gold_args.items():  # JSON Schema does not check "format": dates by hand
                if schema["properties"][key].get("format") == "date":
                    datetime.date.fromisoformat(value)


def test_no_tool(bench):
    no_tool = load_no_tool(FOLDER / "no_tool")
    assert len(no_tool.queries) >= 8
    assert all(q.gold_tools == () and not steps_of(q) for q in no_tool.queries)
    assert (FOLDER / "no_tool" / "tools.jsonl").read_bytes() == (FOLDER / "tools.jsonl").read_bytes()
