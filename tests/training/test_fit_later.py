"""Fitting the head's later-step weights (training/fit_later.py): its grid replays fast mode's served choice at
every later step, and --write changes l_later and explain, and nothing else of the head."""

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from helpers import FIT_QUERIES as QUERIES
from helpers import ScoresByName, tiny_policy, word_bank
from safetensors.numpy import load_file

import training.fit_later as fit
from autotool import Policy
from autotool.benchmarks import Query
from autotool.select import select_steps


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    bank = word_bank(tmp_path_factory.mktemp("fit") / "bank")
    yield bank
    bank.close()


FIRST = [f"tool_{i:02d}" for i in (3, 11, 19, 27, 5, 30)]  # the call each request made first


def requests(seconds: list[str] | None = None) -> list[Query]:
    """Each of QUERIES with its first call, and a second where `seconds` names it."""
    out = []
    for i, (text, first) in enumerate(zip(QUERIES, FIRST)):
        names = (first,) if seconds is None else (first, seconds[i])
        out.append(Query(f"q{i}", text, names, tuple({"tool": n, "args": {}} for n in names)))
    return out


def later_policy(tools, tmp_path, later: float, explain: float, rerank: bool) -> Policy:
    """tiny_policy's folder (on the bank `tools`) with the head's l_later and explain set, loaded again."""
    policy = tiny_policy(tools, tmp_path, b=1.0, w_std=0.0, rerank=rerank)
    with torch.no_grad():
        policy.head.lexical_later.fill_(later)
        policy.head.explain.fill_(explain)
    policy.save_head(tmp_path / "policy")
    loaded = Policy.load(tmp_path / "policy", tools)
    if rerank:
        loaded._reranker = ScoresByName({"tool_0": 1.0})
    return loaded


def served(policy, tools, items) -> list[str]:
    return [s.tool.name for s in select_steps(policy, tools, items, mode="fast", arguments=False, min_cosine=0)]


def test_the_grid_at_the_heads_own_pair_is_the_served_fast_mode(bank, tmp_path):
    policy = later_policy(bank, tmp_path, later=0.3, explain=0.5, rerank=True)
    items, golds, ids = fit.later_steps(bank, requests(["tool_00"] * len(QUERIES)))
    assert golds == ["tool_00"] * len(QUERIES) and ids == [f"q{i}" for i in range(len(QUERIES))]
    assert [item.exclude for item in items] == [(name,) for name in FIRST]  # barred from the tool called first
    choices = served(policy, bank, items)
    hits = fit.grid_hits(policy, bank, items, choices, grid=[(0.3, 0.5), (0.0, 0.0), (1.0, 1.0)], batch=4)
    assert hits[(0.3, 0.5)] == [1.0] * len(QUERIES)  # the served choices
    assert hits[(0.0, 0.0)] != hits[(1.0, 1.0)]  # the two weights move some later choice


def test_write_stores_the_fitted_pair_as_format_3_and_keeps_the_rest_of_the_head(bank, tmp_path, monkeypatch):
    at_zero = later_policy(bank, tmp_path, later=0.0, explain=0.0, rerank=False)
    items, _, _ = fit.later_steps(bank, requests(["tool_00"] * len(QUERIES)))
    queries = requests(served(at_zero, bank, items))  # every later step's gold is the choice at (0, 0)
    later_policy(bank, tmp_path, later=0.7, explain=0.0, rerank=False)
    folder = tmp_path / "policy"
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["format_version"] = 1  # as the shipped policy was saved
    (folder / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(fit, "catalog", lambda path, spec, embedder: (None, queries))
    monkeypatch.setattr(fit, "benchmark_bank", lambda bench, embedder: bank)
    before = load_file(folder / "anchor_head.safetensors")
    args = [str(folder), "--bench", "apibank", "--embedder", "hash:64", "--out", str(tmp_path / "fit"), "--write"]
    result = CliRunner().invoke(fit.main, args)
    assert result.exit_code == 0, result.output
    after = load_file(folder / "anchor_head.safetensors")
    assert float(after["lexical_later"]) == 0.0 and float(after["explain"]) == 0.0  # ties go to the smaller
    assert all(np.array_equal(after[k], before[k]) for k in before if k not in ("lexical_later", "explain"))
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format_version"] == 3
    record = manifest["later_fitted"]
    assert (record["lexical_later"], record["explain"]) == (0.0, 0.0)
    assert record["was"] == {"lexical_later": pytest.approx(0.7), "explain": 0.0}
    assert record["on"] == ["apibank"] and record["later_steps"] == {"apibank": len(QUERIES)}
    assert record["hit@1"] == {"apibank": 1.0}
    kept = json.loads((tmp_path / "fit" / "hits.json").read_text())["apibank"]
    assert kept["hits"]["0,0"] == [1.0] * len(QUERIES)
    assert "| **0,0** |" in (tmp_path / "fit" / "results.md").read_text()
    assert Policy.load(folder, bank).head_values.lexical_later == 0.0  # format 3 reads back


def test_a_catalog_without_later_steps_is_refused_and_the_policy_stays(bank, tmp_path, monkeypatch):
    later_policy(bank, tmp_path, later=0.7, explain=0.0, rerank=False)
    folder = tmp_path / "policy"
    head, manifest = (folder / "anchor_head.safetensors").read_bytes(), (folder / "manifest.json").read_text()
    monkeypatch.setattr(fit, "catalog", lambda path, spec, embedder: (None, requests()))  # one call each
    monkeypatch.setattr(fit, "benchmark_bank", lambda bench, embedder: bank)
    result = CliRunner().invoke(fit.main, [str(folder), "--bench", "apibank", "--embedder", "hash:64", "--write"])
    assert result.exit_code != 0 and "--bench apibank: no request has more than one call" in result.output
    assert (folder / "anchor_head.safetensors").read_bytes() == head
    assert (folder / "manifest.json").read_text() == manifest
