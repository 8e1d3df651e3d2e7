"""One selection path: select_tool, the evaluation's policy method and a tool table all rank through
autotool/selection.py, so what the evaluation measures is what a user gets."""

import random
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import ASSETS

from autotool import Policy, select_tool
from autotool.benchmarks import Benchmark, Query, step_input, steps_of
from autotool.head import ToolTable
from autotool.selection import StepInput, candidates, explained_anchors, lexical_query, unit
from eval.methods import METHODS, EvalContext
from toolbank import HashEmbedder, Tool, ToolBank

TOP_K = 6
WORDS = (
    "weather forecast city rain temperature convert pdf document text email send message calendar meeting "
    "invoice payment currency exchange stock price flight hotel booking translate language"
).split()


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    rng = random.Random(0)
    bank = ToolBank.create(tmp_path_factory.mktemp("sel") / "bank", HashEmbedder(64))

    def unique_word() -> str:  # so that no two tools embed alike (a tie's order is the index's to choose)
        return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=7))

    bank.add(
        [
            Tool(
                f"tool_{i:03d}",
                " ".join(rng.choices(WORDS, k=8) + [unique_word()]),
                {"type": "object", "properties": {"q": {"type": "string"}}},
            )
            for i in range(80)
        ]
    )
    yield bank
    bank.close()


@pytest.fixture(scope="module")
def policy(bank):
    """A tiny policy whose every anchor term is in use: the hidden state (W != 0), the rationale (b), the
    lexical prior at first and later steps (so candidates come from the dense and the BM25 top-K) and the
    explained anchor at later steps."""
    torch.manual_seed(0)
    policy = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    with torch.no_grad():
        torch.nn.init.normal_(policy.head.W.weight, std=0.3)
        policy.head.b.fill_(0.5)
        policy.head.lexical.fill_(0.4)
        policy.head.lexical_later.fill_(0.8)
        policy.head.explain.fill_(0.7)
    return policy


QUERIES = [
    "weather forecast for my city",
    "convert this pdf document to text",
    "send an email message",
    "book a flight and a hotel",
    "stock price in another currency",
    "translate my meeting invoice",
]


@pytest.mark.parametrize("mode", ["fast", "reason"])
def test_select_tool_and_the_eval_rank_identically_on_a_bank_larger_than_top_k(bank, policy, mode):
    assert len(bank) > 2 * TOP_K
    queries = [Query(f"q{i}", text, (f"tool_{i:03d}",), None) for i, text in enumerate(QUERIES)]
    bench = Benchmark("synthetic", Path("."), list(bank), queries)
    predict = METHODS["policy"](
        EvalContext(
            bench, bank, {"policy": policy, "policy_mode": mode, "top_k": TOP_K, "batch_size": 4, "call_tokens": 4}
        )
    )
    steps = [s for q in queries for s in steps_of(q)]
    predict.prepare(steps)
    for step in steps:
        served = select_tool(step.query.text, bank, policy, k=10, mode=mode, arguments=False, top_k=TOP_K)
        prediction = predict(step)
        assert prediction.ranking == [t.name for t, _ in served.candidates]
        assert prediction.scores == pytest.approx([p for _, p in served.candidates], abs=1e-5)
        assert prediction.extra["rationale"] == served.rationale
        assert len(served.candidates) > TOP_K  # the BM25 top-K added tools outside the dense top-K


def test_a_tool_table_and_a_bank_give_the_same_candidates(bank, policy):
    table = ToolTable.from_bank(bank)
    steps = [StepInput(q) for q in QUERIES] + [StepInput(QUERIES[0], ("earlier step",), ("tool_001", "tool_002"))]
    steps.append(StepInput(bank.get("tool_003").description, ("earlier step",), ("tool_003",)))  # words explained
    torch.manual_seed(1)  # anchors with no exact ties: the index may order tied tools either way
    anchors = torch.nn.functional.normalize(torch.randn(len(steps), bank.dim), dim=-1).numpy()
    for top_k in (TOP_K, None):
        for from_bank, from_table in zip(
            candidates(policy.head_values, bank, anchors, steps, top_k),
            candidates(policy.head_values, table, anchors, steps, top_k),
        ):
            assert [c.tool.name for c in from_bank] == [c.tool.name for c in from_table]
            assert [c.probability for c in from_bank] == pytest.approx([c.probability for c in from_table], abs=1e-5)
    excluded = candidates(policy.head_values, bank, anchors[-2:-1], steps[-2:-1], TOP_K)[0]
    assert not {"tool_001", "tool_002"} & {c.tool.name for c in excluded}


def test_after_earlier_calls_bm25_reads_only_the_words_the_called_tools_do_not_explain():
    texts = {
        "GetUserToken": "GetUserToken: Get the user token by username and password.\nusername (string): Login name",
        "AddAgenda": "AddAgenda: Add an agenda item with content, time and location.",
    }
    request = "Add a meeting to my agenda tomorrow. My username is Jane and my PASSWORD is s3cret"
    assert lexical_query(StepInput(request), texts.get) == request  # a first step reads the whole request
    later = StepInput(request, ("GetUserToken(...)",), ("GetUserToken",))
    assert lexical_query(later, texts.get) == "add a meeting to my agenda tomorrow my is jane my is s3cret"
    # Only what was called explains words: a tool excluded for another reason (an agent's tool without a
    # function), or one no longer in the catalog (None), explains nothing.
    agent_step = StepInput(request, ("AddAgenda(...)",), ("AddAgenda", "GetUserToken"), called=("AddAgenda",))
    assert lexical_query(agent_step, texts.get) == "a meeting to my tomorrow my username is jane my password is s3cret"
    assert lexical_query(StepInput(request, ("gone(...)",), ("gone",)), texts.get) == request


def test_without_top_k_the_distribution_is_the_one_training_differentiates(bank, policy):
    from autotool.head import table_logits

    table = ToolTable.from_bank(bank)
    steps = [step_input(bank, s) for s in steps_of(Query("x", QUERIES[1], ("tool_000", "tool_001"), None))]
    assert not steps[0].later and steps[1].later  # the second step's anchor is explained
    anchors = policy.anchors(bank.embedder, [s.query for s in steps], ["", ""])
    with torch.no_grad():
        probs = torch.softmax(table_logits(policy.head, table, torch.from_numpy(anchors), steps), dim=-1)
    for row, ranked in enumerate(candidates(policy.head_values, table, anchors, steps, top_k=None)):
        assert len(ranked) == len(table) - row  # the second step may not choose tool_000 again
        expected = [float(probs[row, table.index[c.tool.name]]) for c in ranked]
        assert [c.probability for c in ranked] == pytest.approx(expected, abs=1e-6)


def test_a_later_steps_anchor_is_rid_of_the_called_tools_directions():
    rng = np.random.default_rng(0)
    vectors = {name: unit(rng.normal(size=8).astype(np.float32)) for name in ("a", "b")}

    def vectors_of(names):
        return np.array([vectors[n] for n in names if n in vectors], dtype=np.float32).reshape(-1, 8)

    anchor = unit(vectors["a"] + 0.5 * rng.normal(size=8).astype(np.float32))
    first, later = StepInput("q"), StepInput("q", ("a(...)",), ("a",))
    twice, gone = StepInput("q", ("a(...)", "a(...)"), ("a", "a")), StepInput("q", ("x(...)",), ("x",))
    out = explained_anchors(1.0, np.stack([anchor] * 4), [first, later, twice, gone], vectors_of)
    np.testing.assert_allclose(out[[0, 3]], [anchor, anchor])  # a first step, and a tool no longer there
    assert abs(float(out[1] @ vectors["a"])) < 1e-6 and np.linalg.norm(out[1]) == pytest.approx(1.0)
    np.testing.assert_allclose(out[2], out[1], atol=1e-6)  # a tool called twice is taken out once
    half = explained_anchors(0.5, anchor[None], [later], vectors_of)[0]
    assert 0 < float(half @ vectors["a"]) < float(anchor @ vectors["a"])
    np.testing.assert_array_equal(explained_anchors(0.0, anchor[None], [later], vectors_of), anchor[None])


def test_choosing_reads_the_values_training_differentiates(bank, policy):
    """The served anchor and logits (numpy, `HeadValues`) are the training head's (PyTorch), every term in use."""
    torch.manual_seed(2)
    hidden = torch.randn(3, policy.head.W.in_features)
    queries = torch.nn.functional.normalize(torch.randn(3, bank.dim), dim=-1)
    rationales = torch.nn.functional.normalize(torch.randn(3, bank.dim), dim=-1)
    rationales[1] = 0  # a step without a rationale
    values = policy.head_values
    assert values.uses_hidden and values.uses_lexical and values.b == pytest.approx(0.5)
    with torch.no_grad():
        trained = policy.head(hidden, queries, rationales)
    served = values.anchors(hidden.numpy(), queries.numpy(), rationales.numpy())
    np.testing.assert_allclose(served, trained.numpy(), atol=1e-6)
    cosines, lexical = torch.rand(5) * 2 - 1, torch.rand(5)
    for later in (False, True):
        with torch.no_grad():
            expected = policy.head.sharpen(cosines, lexical, later).numpy()
        np.testing.assert_allclose(values.logits(cosines.numpy(), lexical.numpy(), later), expected, rtol=1e-6)
    assert not np.allclose(
        values.logits(cosines.numpy(), lexical.numpy(), True), values.logits(cosines.numpy(), lexical.numpy(), False)
    )


@pytest.mark.parametrize("k, top_k", [(0, 64), (-1, 64), (5, 0), (True, 64)])
def test_k_and_top_k_below_one_are_errors(bank, policy, k, top_k):
    with pytest.raises(ValueError, match="must be a whole number of at least 1"):
        select_tool("weather", bank, policy, k=k, top_k=top_k, mode="fast", arguments=False)
