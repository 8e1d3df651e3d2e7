"""`select_tools`: the top k of the served path, in a chat API's format; and choosing over several namespaces."""

import pytest
import torch
from helpers import ASSETS

from autotool import Policy, Selection, TopTools, select_tool, select_tools
from toolbank import Tool

TINY = ASSETS / "tiny-llama"


@pytest.fixture
def policy(bank):
    torch.manual_seed(0)
    return Policy.create(bank, backbone=TINY)


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "mcp", "plain"])
def test_the_top_k_are_select_tools_candidates_in_the_format_asked(bank, policy, fmt):
    top = select_tools("weather forecast in Paris", k=3, format=fmt, bank=bank, policy=policy)
    selection = select_tool("weather forecast in Paris", bank, policy, k=3, mode="fast", arguments=False)
    assert isinstance(top, TopTools) and len(top) == 3 and top.format == fmt and top.rationale == ""
    assert top.names == [t.qualified_name for t, _ in selection.candidates]  # the same served path and ranking
    assert top.scores == pytest.approx([p for _, p in selection.candidates])
    assert top.scores == sorted(top.scores, reverse=True) and 0 < sum(top.scores) <= 1 + 1e-6
    assert top.tools == [bank.get(n).to_dict(fmt) for n in top.names]
    first = top.tools[0]
    if fmt == "openai":
        assert first["type"] == "function" and first["function"]["name"] == top.names[0].replace("/", "__")
        assert first["function"]["parameters"]["properties"]["city"]["type"] == "string"
    elif fmt == "anthropic":
        assert set(first) == {"name", "description", "input_schema"}
    elif fmt == "mcp":
        assert set(first) == {"name", "description", "inputSchema"}
    else:
        assert first["namespace"] == "weather" and "parameters" in first


def test_reason_mode_writes_a_rationale_and_k_is_capped_by_the_bank(bank, policy):
    top = select_tools("convert my PDF document to text", k=10, bank=bank, policy=policy, mode="reason")
    assert isinstance(top.rationale, str) and len(top) == len(bank) == 4
    assert top.scores == pytest.approx(sorted(top.scores, reverse=True))
    assert sum(top.scores) == pytest.approx(1.0, abs=1e-5)  # the whole bank is the candidate set


def test_arguments_are_checked_like_select_tool(bank, policy):
    for k in (0, -1, True, 2.5, "3"):
        with pytest.raises(ValueError, match="k must be a whole number"):
            select_tools("weather", k=k, bank=bank, policy=policy)
    with pytest.raises(ValueError, match="top_k must be a whole number"):
        select_tools("weather", bank=bank, policy=policy, top_k=0)
    with pytest.raises(ValueError, match="unknown format 'gemini'"):
        select_tools("weather", format="gemini", bank=bank, policy=policy)
    with pytest.raises(ValueError, match="unknown mode"):
        select_tools("weather", bank=bank, policy=policy, mode="slow")
    with pytest.raises(ValueError, match="empty"):
        select_tools(" ", bank=bank, policy=policy)
    with pytest.raises(ValueError, match="no tools in namespace 'nowhere'"):
        select_tools("weather", bank=bank, policy=policy, namespace="nowhere")


def test_one_namespace_or_several(bank, policy):
    bank.add(
        [Tool(f"tool_{i}", f"Weather report number {i} for a city", {}, namespace=f"ns{i % 3}") for i in range(12)]
    )
    query = "weather report for a city"
    one = select_tools(query, k=3, format="plain", bank=bank, policy=policy, namespace="weather")
    assert set(one.names) == {"weather/get_weather", "weather/get_forecast"}
    several = select_tools(query, k=20, format="plain", bank=bank, policy=policy, namespace=["weather", "ns1"])
    assert {t["namespace"] for t in several.tools} == {"weather", "ns1"} and len(several) == 6
    # ranked as one search over the union: the same order and probabilities as over the whole bank, renormalised
    everything = select_tools(query, k=20, format="plain", bank=bank, policy=policy)
    kept = [(n, p) for n, p in zip(everything.names, everything.scores) if bank.get(n).namespace in ("weather", "ns1")]
    assert several.names == [n for n, _ in kept]
    total = sum(p for _, p in kept)
    assert several.scores == pytest.approx([p / total for _, p in kept], rel=1e-4)
    # a smaller top_k keeps the best of the union, whatever namespace they are in
    cut = select_tools(query, k=3, format="plain", bank=bank, policy=policy, namespace=["weather", "ns1"], top_k=3)
    cosine = {h.name: h.score for h in bank.search(query, k=50, mode="dense")}  # the untrained anchor: the query
    rest = [cosine[n] for n in several.names if n not in cut.names]
    assert len(cut) == 3 and min(cosine[n] for n in cut.names) >= max(rest) - 1e-6  # ties may go either way
    with pytest.raises(ValueError, match="namespace must be a name or a non-empty list"):
        select_tools(query, bank=bank, policy=policy, namespace=[])
    # select_tool takes the same lists
    selection = select_tool(query, bank, policy, mode="fast", arguments=False, namespace=("ns1", "ns2"))
    assert selection.tool.namespace in ("ns1", "ns2")


@pytest.mark.parametrize("mode", ["dense", "bm25"])
def test_a_search_over_several_namespaces_is_the_whole_banks_filtered(bank, mode):
    bank.add(
        [Tool(f"tool_{i}", f"Weather report number {i} for a city", {}, namespace=f"ns{i % 3}") for i in range(12)]
    )
    query = "weather report for a city"
    whole = [(h.name, h.score) for h in bank.search(query, k=50, mode=mode) if h.tool.namespace in ("weather", "ns1")]
    for k in (2, 5, 50):
        union = [(h.name, h.score) for h in bank.search(query, k=k, mode=mode, namespace=("weather", "ns1", "weather"))]
        assert [s for _, s in union] == pytest.approx([s for _, s in whole[:k]])
        assert {n for n, _ in union} <= {n for n, _ in whole}


def test_the_same_name_in_two_namespaces_is_two_candidates_by_qualified_name(bank, policy):
    from autotool.prompts import StepRecord, tool_card

    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    bank.add(
        [
            Tool("search", "Search code and issues on GitHub", schema, namespace="github"),
            Tool("search", "Search messages in Slack channels", schema, namespace="slack"),
        ]
    )
    query, both = "search slack messages and github issues", ["github", "slack"]
    selection = select_tool(query, bank, policy, k=6, mode="fast", arguments=False)
    assert {"github/search", "slack/search"} <= {t.qualified_name for t, _ in selection.candidates}
    top = select_tools(query, k=6, format="openai", bank=bank, policy=policy, namespace=both)
    assert sorted(top.names) == ["github/search", "slack/search"]
    assert [t["function"]["name"] for t in top.tools] == [n.replace("/", "__") for n in top.names]
    assert [bank.get(t["function"]["name"]) for t in top.tools] == [bank.get(n) for n in top.names]
    assert tool_card(bank.get("github/search")).startswith("[github/search] Search code")
    # an earlier step's tool is not chosen again: that one, not the other namespace's
    context = [StepRecord("", "github/search", {})]
    again = select_tool(query, bank, policy, k=6, mode="fast", context=context, arguments=False, namespace=both)
    assert [t.qualified_name for t, _ in again.candidates] == ["slack/search"]
    chosen = Selection(bank.get("slack/search"), 1.0, "", None, raw_arguments='{"query": "standup notes"}')
    assert chosen.call() == {"name": "slack/search", "arguments": {"query": "standup notes"}}
