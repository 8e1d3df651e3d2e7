"""Slow tests: the real shipped models (all-MiniLM-L6-v2, SmolLM2-135M-Instruct). Run with `pytest -m slow`."""

import time

import numpy as np
import pytest
import torch

from autotool import Policy, select_tool
from autotool.backbone import SPECIAL_TOKENS, default_backbone_folder, load_backbone
from autotool.benchmarks import load_benchmark, make_split, select_queries
from autotool.metrics import hit_at_k
from autotool.prompts import prompt
from autotool.select import SHIPPED_POLICY
from toolbank import DEFAULT_EMBEDDER, STOCK_EMBEDDER, ToolBank

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def metatool_bank(tmp_path_factory):
    bank = ToolBank.create(tmp_path_factory.mktemp("bank") / "metatool", "stock")  # the published reference's model
    bank.add(load_benchmark("metatool").tools)
    return bank


def test_the_stock_embedder_is_the_shipped_minilm(metatool_bank):
    assert metatool_bank.embedder_id == STOCK_EMBEDDER and metatool_bank.dim == 384
    vectors = metatool_bank.vectors(["calculator", "airqualityforeast"])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    hits = metatool_bank.search("what will the air quality be tomorrow in 94110", k=3, mode="dense")
    assert hits[0].name == "airqualityforeast"


def test_queries_go_through_onnx_runtime_with_the_same_vectors(metatool_bank):
    from toolbank.embed import OnnxEncoder

    bench = load_benchmark("metatool")
    texts = [q.text for q in bench.queries[:20]] + [
        "",
        " ".join(t.description for t in bench.tools[:40]),
    ]  # > 256 tokens
    embedder = metatool_bank.embedder
    short = np.concatenate([embedder.encode(texts[i : i + 3]) for i in range(0, len(texts), 3)])  # padded batches
    assert isinstance(embedder._short, OnnxEncoder)
    reference = embedder.model.encode(texts, normalize_embeddings=True)  # sentence-transformers on PyTorch
    assert short.shape == (22, 384) and np.abs(short - reference).max() < 1e-5


def test_dense_hit_rate_matches_the_reference_on_a_sample(metatool_bank):
    bench = load_benchmark("metatool")
    queries = select_queries(bench, make_split(bench), "all", limit=300, seed=0, single_tool=True)
    vectors = metatool_bank.embedder.encode([q.text for q in queries])
    hits = [
        hit_at_k([h.name for h in metatool_bank.search(q.text, k=1, mode="dense", query_vector=v)], q.gold_tools[0], 1)
        for q, v in zip(queries, vectors)
    ]
    assert 0.45 < np.mean(hits) < 0.63  # reference: 0.537 on 3,000 queries


def test_default_backbone_converts_once_and_loads_from_cache():
    started = time.perf_counter()
    model, tokenizer = load_backbone()
    assert (default_backbone_folder() / "model.safetensors").exists()
    assert type(model).__name__ == "LlamaForCausalLM" and model.config.hidden_size == 576
    assert all(len(tokenizer(t, add_special_tokens=False)["input_ids"]) == 1 for t in SPECIAL_TOKENS)
    first = time.perf_counter() - started
    started = time.perf_counter()
    load_backbone()
    assert time.perf_counter() - started < max(first, 30)  # the second load reads the safetensors cache


def test_select_tool_with_the_real_policy_backbone(metatool_bank, tmp_path):
    policy = Policy.create(metatool_bank)
    query = "Find me academic papers about graph neural networks"
    selection = select_tool(query, metatool_bank, policy, k=5, mode="reason", arguments=False)
    dense = metatool_bank.search(query, k=5, mode="dense")
    assert selection.tool.name == dense[0].name  # untrained: dense retrieval on the query
    assert isinstance(selection.rationale, str) and len(selection.rationale) > 0
    torch.nn.init.normal_(policy.head.W.weight, std=0.01)  # as if trained: the hidden state now counts
    policy.save(tmp_path / "policy")
    loaded = Policy.load(tmp_path / "policy", metatool_bank)
    a = select_tool(query, metatool_bank, policy, k=5, mode="fast", arguments=False)
    b = select_tool(query, metatool_bank, loaded, k=5, mode="fast", arguments=False)
    assert [t.name for t, _ in a.candidates] == [t.name for t, _ in b.candidates]
    assert a.probability == pytest.approx(b.probability, rel=1e-4)


def test_shipped_policy_writes_the_same_text_from_the_cached_system_prompt(metatool_bank):
    frozen = Policy.load(SHIPPED_POLICY, metatool_bank)  # as select_tool loads it: adapters folded in once
    training = Policy.load(SHIPPED_POLICY, metatool_bank, trainable=True)  # folds them per call, no cache
    for query in [
        "Find me academic papers about graph neural networks",
        "What's the weather in Oslo tomorrow?",
        "Convert 250 US dollars to euros",
    ]:
        text = prompt(frozen.tokenizer, query)
        assert frozen.generate(text, 32, "</think>") == training.generate(text, 32, "</think>")
    assert frozen._prefix_cache is not None and frozen.adapters_merged and not training.adapters_merged
    assert frozen.head.b.item() > 0  # calibrated: the shipped policy's rationale moves its anchor


def test_the_tuned_embedder_ships_and_the_shipped_policy_reads_it(tmp_path):
    from autotool.select import default_policy, fitted_min_cosine
    from toolbank.embed import TUNED_EMBEDDER, load_embedder

    tuned, stock = load_embedder("tools"), load_embedder("stock")
    assert tuned.id == TUNED_EMBEDDER and tuned.dim == stock.dim == 384
    texts = ["book a table for two tonight", "how warm is it in Lisbon"]
    a, b = tuned.encode(texts), stock.encode(texts)
    assert 0.5 < float((a * b).sum(axis=1).min()) < 0.9999  # the adapter moved the vectors, not wrecked them
    bank = ToolBank.create(tmp_path / "bank")  # a new bank gets the tuned embedder
    bank.add(load_benchmark("toolalpaca").tools)
    assert bank.embedder_id == TUNED_EMBEDDER == DEFAULT_EMBEDDER and fitted_min_cosine(bank) == 0.255
    assert default_policy(bank).trained  # the shipped policy, not the untrained anchor
    choice = select_tool(
        "Can you check if today is a public holiday in China?", bank=bank, mode="fast", arguments=False
    )
    assert choice.tool.name == "PublicHolidayIsTodayPublicHoliday" and choice.cosine >= 0.255  # observed: 0.574
    nothing = select_tool("Explain why the sky is blue", bank=bank, mode="fast", arguments=False)
    assert nothing.tool is None and nothing.cosine < 0.255  # no tool fits (observed: 0.104)
