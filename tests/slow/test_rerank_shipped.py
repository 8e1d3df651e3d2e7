"""Slow tests: the shipped reranker (a cross-encoder adapter over all-MiniLM-L6-v2) through the shipped policy."""

import numpy as np
import pytest
import torch
from helpers import weather_tools

from autotool import Policy, select_tool
from autotool.rerank import SHIPPED_RERANKER, load_reranker, merged_model
from autotool.select import SHIPPED_POLICY
from toolbank import ToolBank
from toolbank.embed import default_model_folder

pytestmark = pytest.mark.slow


def test_the_shipped_policy_names_the_shipped_reranker():
    policy = Policy.load(SHIPPED_POLICY)
    assert policy.rerank.reranker == SHIPPED_RERANKER and policy.rerank.top >= 2 and policy.rerank.weight > 0


def test_onnx_scores_are_the_merged_networks_and_the_fitting_tool_scores_best():
    from transformers import AutoTokenizer

    reranker = load_reranker(SHIPPED_RERANKER)
    tools = weather_tools()
    query = "Will it rain in Paris on Sunday?"
    got = reranker.scores(query, [t.text for t in tools])
    tokenizer = AutoTokenizer.from_pretrained(str(default_model_folder()))
    batch = tokenizer(
        [query] * len(tools),
        [t.text for t in tools],
        padding=True,
        truncation=True,
        max_length=reranker.max_length,
        return_tensors="pt",
    )
    with torch.no_grad():
        expected = merged_model(reranker.folder)(**batch).logits[:, 0].numpy()
    assert np.allclose(got, expected, atol=1e-4)
    assert tools[int(np.argmax(got))].name in ("get_weather", "get_forecast")
    for request, fitting in (
        ("turn my PDF file into plain text", "pdf_to_text"),
        ("send an email to Bob saying hi", "send_email"),
    ):
        assert tools[int(np.argmax(reranker.scores(request, [t.text for t in tools])))].name == fitting
    assert reranker.scores(query, []).shape == (0,)


def test_fast_mode_reranks_only_the_best_five(tmp_path):
    bank = ToolBank.create(tmp_path / "bank")
    bank.add(weather_tools())
    policy = Policy.load(SHIPPED_POLICY, bank)
    for query in ("Will it rain in Paris on Sunday?", "turn this pdf into text", "mail Bob the report"):
        plain = select_tool(query, bank, policy, k=4, mode="fast", arguments=False, rerank=False)
        reranked = select_tool(query, bank, policy, k=4, mode="fast", arguments=False, rerank=True)
        assert {t.name for t, _ in plain.candidates} == {t.name for t, _ in reranked.candidates}  # four tools: all
        assert sum(p for _, p in reranked.candidates) == pytest.approx(sum(p for _, p in plain.candidates), abs=1e-5)
    assert not policy.lm_loaded  # fast mode reranks without the language model
