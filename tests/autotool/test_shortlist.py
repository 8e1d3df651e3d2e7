"""The shortlist: a policy with one reads its step's best tools in fast mode before it writes the rationale, in
serving, training and calibration alike."""

import random
from dataclasses import replace

import pytest
import torch
from helpers import ASSETS

from autotool import Policy, select_tool
from autotool.prompts import SHORTLIST_HEADER, SHORTLIST_WORDS, prompt, shortlist_line
from autotool.selection import StepInput, candidates, embedded, shortlisted, unit
from toolbank import HashEmbedder, Tool, ToolBank

WORDS = "weather forecast city rain convert pdf document text email send message calendar meeting invoice".split()


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    rng = random.Random(1)
    bank = ToolBank.create(tmp_path_factory.mktemp("shortlist") / "bank", HashEmbedder(64))
    bank.add(
        [
            Tool(f"tool_{i:02d}", " ".join(rng.choices(WORDS, k=6)) + f" number{i}. A second sentence.", {})
            for i in range(30)
        ]
    )
    yield bank
    bank.close()


@pytest.fixture(scope="module")
def policy(bank):
    torch.manual_seed(0)
    policy = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    with torch.no_grad():
        policy.head.b.fill_(0.5)
        policy.head.lexical.fill_(0.3)
    return policy


def test_a_line_is_the_qualified_name_and_the_descriptions_first_sentence_capped():
    tool = Tool("search", "Find issues by text. Returns at most fifty.", {}, namespace="github")
    assert shortlist_line(tool) == "github/search: Find issues by text."
    long = Tool("t", " ".join(f"w{i}" for i in range(40)), {})
    assert shortlist_line(long) == "t: " + " ".join(f"w{i}" for i in range(SHORTLIST_WORDS))


def test_the_prompt_lists_the_shortlist_after_the_earlier_steps_and_before_think(policy):
    tokenizer = policy.tokenizer
    plain = prompt(tokenizer, "send an email", ("<think>a</think>EARLIER",))
    listed = prompt(tokenizer, "send an email", ("<think>a</think>EARLIER",), ("x: one", "y: two"))
    assert listed == plain[: -len("<think>")] + SHORTLIST_HEADER + "- x: one\n- y: two\n<think>"
    assert prompt(tokenizer, "send an email", (), ()) == prompt(tokenizer, "send an email")


def test_shortlisted_steps_list_the_fast_modes_best_tools_in_order(bank, policy):
    steps = [StepInput("weather forecast for the city"), StepInput("send an email message", exclude=("tool_03",))]
    queries = embedded(bank.embedder, [s.query for s in steps])
    listed = shortlisted(policy.head_values, bank, steps, queries, 4)
    fast = candidates(policy.head_values, bank, unit(queries), steps)
    for step, row, ranked in zip(steps, listed, fast):
        assert row.shortlist == tuple(shortlist_line(c.tool) for c in ranked[:4])
        assert replace(row, shortlist=()) == step
    assert not any(line.startswith("tool_03:") for line in listed[1].shortlist)
    assert shortlisted(policy.head_values, bank, steps, queries, 0) == steps


def test_a_policy_with_a_shortlist_reads_it_when_serving(bank, policy, monkeypatch):
    import autotool.rollout as rollout

    seen = []
    original = rollout.prompt_ids
    monkeypatch.setattr(rollout, "prompt_ids", lambda p, s: seen.append(s.shortlist) or original(p, s))
    policy.info["shortlist"] = 3
    try:
        select_tool("weather forecast for the city", bank=bank, policy=policy, arguments=False, min_cosine=0)
        assert len(seen) == 1 and len(seen[0]) == 3
        queries = embedded(bank.embedder, ["weather forecast for the city"])
        expected = shortlisted(policy.head_values, bank, [StepInput("weather forecast for the city")], queries, 3)
        assert seen[0] == expected[0].shortlist
        seen.clear()
        policy.info["shortlist"] = 0
        select_tool("weather forecast for the city", bank=bank, policy=policy, arguments=False, min_cosine=0)
        assert seen == [()]
    finally:
        policy.info.pop("shortlist", None)
