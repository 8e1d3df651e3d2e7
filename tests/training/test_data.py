import json
import random
import re

import numpy as np
import pytest

from autotool.benchmarks import load_benchmark, load_split, make_split
from autotool.head import ToolTable
from autotool.prompts import call_text, shortlist_line
from autotool.selection import HeadValues, StepInput
from toolbank import HashEmbedder, Tool, ToolBank
from training.data import (
    DataError,
    Example,
    build_trajectories,
    check_no_unseen,
    examples,
    names_tool,
    rationale_for,
    read_jsonl,
    with_shortlists,
    write_jsonl,
)


def test_rationale_is_the_description_sentence_closest_to_the_query_without_the_name():
    tool = Tool(
        "WeatherWizard",
        "WeatherWizard is a fun app. It gives the weather forecast for any city. Try WeatherWizard today!",
        {},
    )
    assert rationale_for(tool, "what is the forecast for Paris") == "It gives the weather forecast for any city."
    assert rationale_for(tool, "a fun app please") == "the tool is a fun app."
    assert rationale_for(tool, "zzz") == "the tool is a fun app."  # no overlap: the first sentence


def test_rationale_drops_split_forms_of_the_name_and_is_capped():
    tool = Tool("getWaterQuality", "Get water quality of a lake; " + "very " * 40 + "useful", {})
    text = rationale_for(tool, "water")
    assert len(text.split()) == 30 and "getWaterQuality" not in text
    assert (
        rationale_for(Tool("pdf_to_text", "Use pdf to text to read files", {}), "read") == "Use the tool to read files"
    )


def test_names_tool_compares_letters_and_digits_only():
    assert names_tool("ask Research-Helper for papers", "ResearchHelper")
    assert not names_tool("find academic papers", "ResearchHelper")


def write_bench(folder, tools, queries):
    folder.mkdir()
    (folder / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return load_benchmark(folder)


def test_trajectories_drop_and_count_invalid_steps(tmp_path):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    bench = write_bench(
        tmp_path / "b",
        [
            {"name": "get_weather", "description": "Current weather for a city.", "parameters": schema},
            {"name": "Tracker", "description": "Tracker", "parameters": {}},
        ],
        [
            {
                "id": "ok",
                "query": "weather in Paris",
                "gold_tools": ["get_weather"],
                "gold_args": {"calls": [{"tool": "get_weather", "args": {"city": "Paris"}}]},
            },
            {
                "id": "bad-call",
                "query": "weather",
                "gold_tools": ["get_weather"],
                "gold_args": {"calls": [{"tool": "get_weather", "args": {"city": 3}}]},
            },
            {"id": "names", "query": "track it", "gold_tools": ["Tracker"], "gold_args": None},
            {
                "id": "twice",  # a called tool is excluded at later steps: its repeat could never be chosen
                "query": "weather in Paris, then again",
                "gold_tools": ["get_weather"],
                "gold_args": {"calls": [{"tool": "get_weather", "args": {"city": "Paris"}}] * 2},
            },
        ],
    )
    split = make_split(bench, seen_fraction=1.0, val_fraction=0.0, test_fraction=0.0)
    trajectories, counts = build_trajectories(bench, split)
    assert counts == {
        "kept": 1,
        "dropped_invalid_call": 1,
        "dropped_empty_rationale": 1,
        "dropped_repeats_called_tool": 1,
    }
    (step,) = trajectories[0]["steps"]
    assert step == {
        "rationale": "Current weather for a city.",
        "tool": "get_weather",
        "arguments": {"city": "Paris"},
        "observation": "",
    }
    path = tmp_path / "t.jsonl"
    write_jsonl(path, trajectories)
    assert read_jsonl(path) == trajectories


@pytest.fixture(scope="module")
def seal():
    bench = load_benchmark("seal_tools")  # 4,076 schemas to check: load once
    return bench, load_split(bench)


def test_multi_step_trajectories_become_one_example_per_step_with_earlier_steps_as_context(seal):
    bench, split = seal
    trajectories, _ = build_trajectories(bench, split)
    multi = next(t for t in trajectories if len(t["steps"]) > 1)
    tools = {t.name: t for t in bench.tools}
    first, second = examples([multi], tools)[:2]
    assert first.input.context == () and first.input.exclude == ()
    assert second.input.exclude == (multi["steps"][0]["tool"],)
    assert call_text(multi["steps"][0]["tool"], multi["steps"][0]["arguments"]) in second.input.context[0]
    assert second.gold_call == {"name": multi["steps"][1]["tool"], "arguments": multi["steps"][1]["arguments"]}


def test_a_trajectory_of_ones_own_that_repeats_a_called_tool_is_refused(seal):
    bench, split = seal
    trajectories, _ = build_trajectories(bench, split)
    multi = next(t for t in trajectories if len(t["steps"]) > 1)
    repeated = {**multi, "steps": [multi["steps"][0], multi["steps"][0]]}
    tools = {t.name: t for t in bench.tools}
    assert len(examples([multi], tools)) == len(multi["steps"])
    says = f"trajectory {multi['id']}: step 2 calls '{multi['steps'][0]['tool']}', which an earlier step called"
    with pytest.raises(DataError, match=re.escape(says)):
        examples([repeated], tools)


@pytest.mark.parametrize("name", ["metatool", "seal_tools", "bfcl"])
def test_no_held_out_tool_reaches_the_vendored_training_data(name, seal):
    bench, split = seal if name == "seal_tools" else (load_benchmark(name), load_split(load_benchmark(name)))
    trajectories, counts = build_trajectories(bench, split)
    assert counts["kept"] == len(trajectories) > 0
    check_no_unseen(trajectories, split)
    train = set(split.tools["train"])
    assert {s["tool"] for t in trajectories for s in t["steps"]} <= train


def test_leak_check_fails_on_an_unseen_tool_or_its_name_in_a_rationale(seal):
    bench, split = seal
    trajectories, _ = build_trajectories(bench, split)
    unseen = sorted(n for n in split.tools["unseen"] if "_" in n or any(c.isupper() for c in n[1:]))[0]
    bad = json.loads(json.dumps(trajectories[:1]))
    bad[0]["steps"][0]["tool"] = unseen
    with pytest.raises(DataError, match=f"tool '{unseen}' is not a train tool"):
        check_no_unseen(bad, split)
    bad = json.loads(json.dumps(trajectories[:1]))
    bad[0]["steps"][0]["rationale"] += f" like {unseen} does"
    with pytest.raises(DataError, match=f"names held-out tool '{unseen}'"):
        check_no_unseen(bad, split)


def test_malformed_trajectory_file_names_the_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "query": "q", "steps": []}\n{"id": "b", "steps": [{}]}\n')
    with pytest.raises(DataError, match="t.jsonl line 2"):
        read_jsonl(path)


def test_training_lists_train_tools_only_always_the_gold_and_its_line_is_the_target(tmp_path):
    words = "weather forecast city rain convert pdf document text email send message calendar meeting".split()
    rng = random.Random(1)
    bank = ToolBank.create(tmp_path / "bank", HashEmbedder(64))
    bank.add([Tool(f"tool_{i:02d}", " ".join(rng.choices(words, k=6)) + f" n{i}. More.", {}) for i in range(30)])
    head = HeadValues("residual", np.zeros((64, 8), np.float32), 1.0, 0.0, 10.0, lexical=0.3)
    train = [t.name for t in list(bank)[:12]]
    table = ToolTable.from_bank(bank, train)
    gold = train[-1]
    items = [Example(StepInput(q), "old rationale", gold, {}) for q in ("calendar meeting", "pdf text", "rain")]
    listed = with_shortlists(items, head, table, 5, seed=0)
    line = shortlist_line(bank.get(gold))
    for example in listed:
        assert len(example.input.shortlist) == 5
        assert line in example.input.shortlist
        assert example.rationale == line
        assert {s.split(":")[0] for s in example.input.shortlist} <= set(train)
    assert with_shortlists(items, head, table, 5, seed=0) == listed  # seeded
    orders = {with_shortlists(items[:1], head, table, 5, seed=s)[0].input.shortlist for s in range(8)}
    assert len(orders) > 1  # the order is drawn, so the position does not say which line is the gold
    bank.close()
