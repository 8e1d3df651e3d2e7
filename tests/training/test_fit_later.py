"""Fitting the head's later-step weights (training/fit_later.py): its grid replays fast mode's served choice at
every later step, at every pair, and --write changes l_later and explain, and nothing else of the head."""

import json
from dataclasses import replace

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from helpers import FIT_QUERIES as QUERIES
from helpers import ScoresByName, tiny_policy, word_bank
from safetensors.numpy import load_file, save_file

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
PAIRS = [(0.0, 0.0), (0.3, 0.0), (0.0, 0.5), (0.3, 0.5), (1.0, 1.0)]  # (l_later, explain)


def requests(seconds: list[str] | None = None) -> list[Query]:
    """Each of QUERIES with its first call, and a second where `seconds` names it."""
    out = []
    for i, (text, first) in enumerate(zip(QUERIES, FIRST)):
        names = (first,) if seconds is None else (first, seconds[i])
        out.append(Query(f"q{i}", text, names, tuple({"tool": n, "args": {}} for n in names)))
    return out


def later_policy(tools, tmp_path, later: float, explain: float, rerank: bool, w_std: float = 0.0) -> Policy:
    """tiny_policy's folder (on the bank `tools`) with the head's l_later and explain set, loaded again."""
    policy = tiny_policy(tools, tmp_path, b=1.0, w_std=w_std, rerank=rerank)
    with torch.no_grad():
        policy.head.lexical_later.fill_(later)
        policy.head.explain.fill_(explain)
    policy.save_head(tmp_path / "policy")
    loaded = Policy.load(tmp_path / "policy", tools)
    if rerank:
        loaded._reranker = ScoresByName({"tool_0": 1.0})
    return loaded


def served(policy, tools, items, pair=None, rerank=True) -> list[str]:
    """Fast mode's choices as served, with the head's (l_later, explain) replaced by `pair`."""
    saved = policy.head_values
    if pair is not None:
        policy._saved_values = replace(saved, lexical_later=pair[0], explain=pair[1])
    try:
        chosen = select_steps(policy, tools, items, mode="fast", arguments=False, min_cosine=0, rerank=rerank)
    finally:
        policy._saved_values = saved
    return [s.tool.name for s in chosen]


@pytest.mark.parametrize("w_std", [0.0, 0.3])
def test_the_grid_at_every_pair_is_the_served_fast_mode(bank, tmp_path, w_std):
    policy = later_policy(bank, tmp_path, later=0.3, explain=0.5, rerank=True, w_std=w_std)
    items, golds, ids = fit.later_steps(bank, requests(["tool_00"] * len(QUERIES)))
    assert golds == ["tool_00"] * len(QUERIES) and ids == [f"q{i}" for i in range(len(QUERIES))]
    assert [item.exclude for item in items] == [(name,) for name in FIRST]  # barred from the tool called first
    choices = {pair: served(policy, bank, items, pair) for pair in PAIRS}
    for pair, chosen in choices.items():
        assert fit.grid_hits(policy, bank, items, chosen, grid=PAIRS, batch=4)[pair] == [1.0] * len(QUERIES), pair
    if w_std == 0:  # (with W, the hidden state outweighs both here)
        assert choices[(0.3, 0.0)] != choices[(0.3, 0.5)]  # explain alone moves some later choice
        assert choices[(0.0, 0.5)] != choices[(0.3, 0.5)]  # so does l_later alone
        assert served(policy, bank, items, rerank=False) != choices[(0.3, 0.5)]  # and the reranker


def test_write_stores_the_fitted_pair_as_format_3_and_keeps_the_rest_of_the_head(bank, tmp_path, monkeypatch):
    policy = later_policy(bank, tmp_path, later=0.7, explain=0.0, rerank=False)
    items, _, _ = fit.later_steps(bank, requests(["tool_00"] * len(QUERIES)))
    seconds = served(policy, bank, items, (0.1, 0.75))  # every later step's gold is the choice at (0.1, 0.75)
    grid = fit.grid_hits(policy, bank, items, seconds)
    perfect = [pair for pair in fit.GRID if grid[pair] == [1.0] * len(QUERIES)]
    expected = min(perfect, key=lambda p: (p[1], p[0]))  # ties go to the smaller explain, then l_later
    assert expected[1] > 0  # no pair without explain hits every step: the fit must write it
    folder = tmp_path / "policy"
    head = load_file(folder / "anchor_head.safetensors")
    del head["explain"]  # a head as format 1 saved it
    save_file(head, folder / "anchor_head.safetensors")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["format_version"] = 1
    (folder / "manifest.json").write_text(json.dumps(manifest))
    queries = requests(seconds)
    monkeypatch.setattr("training.fits.catalog", lambda path, spec, embedder: (None, queries))
    monkeypatch.setattr(fit, "benchmark_bank", lambda bench, embedder: bank)
    args = [str(folder), "--bench", "apibank", "--embedder", "hash:64", "--out", str(tmp_path / "fit"), "--write"]
    result = CliRunner().invoke(fit.main, args)
    assert result.exit_code == 0, result.output
    after = load_file(folder / "anchor_head.safetensors")
    assert (float(after["lexical_later"]), float(after["explain"])) == pytest.approx(expected)
    assert all(np.array_equal(after[k], head[k]) for k in head if k != "lexical_later")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format_version"] == 3
    record = manifest["later_fitted"]
    assert (record["lexical_later"], record["explain"]) == expected
    assert record["was"] == {"lexical_later": 0.7, "explain": 0.0}
    assert record["on"] == ["apibank"] and record["later_steps"] == {"apibank": len(QUERIES)}
    assert record["hit@1"] == {"apibank": 1.0}
    kept = json.loads((tmp_path / "fit" / "hits.json").read_text())["apibank"]
    assert kept["steps"] == [f"q{i}#1" for i in range(len(QUERIES))]
    assert kept["hits"][fit.label(expected)] == [1.0] * len(QUERIES)
    assert f"| **{fit.label(expected)}** |" in (tmp_path / "fit" / "results.md").read_text()
    loaded = Policy.load(folder, bank).head_values  # format 3 reads back
    assert (loaded.lexical_later, loaded.explain) == pytest.approx(expected)


def test_a_catalog_without_later_steps_is_refused_before_any_work(bank, tmp_path, monkeypatch):
    later_policy(bank, tmp_path, later=0.7, explain=0.0, rerank=False)
    folder = tmp_path / "policy"
    head, manifest = (folder / "anchor_head.safetensors").read_bytes(), (folder / "manifest.json").read_text()
    specs = {"apibank": requests(["tool_00"] * len(QUERIES)), "toolalpaca": requests()}  # one call each
    monkeypatch.setattr("training.fits.catalog", lambda path, spec, embedder: (None, specs[spec]))

    def benchmark_bank(*args):
        raise AssertionError("a bank was built before every catalog was checked")

    monkeypatch.setattr(fit, "benchmark_bank", benchmark_bank)
    args = [str(folder), "--bench", "apibank,toolalpaca", "--embedder", "hash:64", "--write"]
    result = CliRunner().invoke(fit.main, args)
    assert result.exit_code != 0 and "--bench toolalpaca: no request has more than one call" in result.output
    assert (folder / "anchor_head.safetensors").read_bytes() == head
    assert (folder / "manifest.json").read_text() == manifest


def test_a_bad_embedder_an_empty_bench_and_a_shortlist_read_by_the_anchor_are_refused(bank, tmp_path, monkeypatch):
    later_policy(bank, tmp_path, later=0.7, explain=0.0, rerank=False, w_std=0.3)  # W != 0: the anchor reads h
    folder = tmp_path / "policy"
    head = (folder / "anchor_head.safetensors").read_bytes()
    result = CliRunner().invoke(fit.main, [str(folder), "--embedder", str(tmp_path / "nowhere")])
    assert result.exit_code != 0 and "--embedder:" in result.output
    result = CliRunner().invoke(fit.main, [str(folder), "--bench", ",", "--embedder", "hash:64"])
    assert result.exit_code != 0 and "--bench names no catalog" in result.output
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "shortlist": 5}))
    monkeypatch.setattr("training.fits.catalog", lambda path, spec, embedder: (None, requests(FIRST[1:] + FIRST[:1])))
    monkeypatch.setattr(fit, "benchmark_bank", lambda *args: bank)
    result = CliRunner().invoke(fit.main, [str(folder), "--bench", "apibank", "--embedder", "hash:64", "--write"])
    assert result.exit_code != 0 and "after a shortlist" in result.output, result.output
    assert (folder / "anchor_head.safetensors").read_bytes() == head
