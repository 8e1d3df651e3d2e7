"""Fitting reason mode's rationale weight on foreign catalogs (training/fit_rationale.py): its grid replays the
served path's own choice, and --write changes b and nothing else of the head."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import FIT_QUERIES as QUERIES
from helpers import tiny_policy, word_bank
from safetensors.numpy import load_file

import training.fit_rationale as fit
from autotool.benchmarks import Query
from autotool.select import select_steps
from autotool.selection import StepInput


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    bank = word_bank(tmp_path_factory.mktemp("fit") / "bank")
    yield bank
    bank.close()


def served(policy, bank, mode: str) -> list[str]:
    chosen = select_steps(policy, bank, [StepInput(q) for q in QUERIES], mode=mode, arguments=False, min_cosine=0)
    return [s.tool.name for s in chosen]


@pytest.mark.parametrize("w_std", [0.0, 0.3])
def test_the_grid_at_the_heads_own_b_is_the_served_reason_mode(bank, tmp_path, w_std):
    policy = tiny_policy(bank, tmp_path, b=1.0, w_std=w_std, rerank=True)
    reason = served(policy, bank, "reason")
    queries = [Query(f"q{i}", text, (name,), None) for i, (text, name) in enumerate(zip(QUERIES, reason))]
    rationales, hits = fit.grid_hits(policy, bank, queries, grid=(0.0, 1.0), batch=4)
    assert hits[1.0] == [1.0] * len(QUERIES)  # the served choices, in two batches, with the hidden state or without
    assert len(rationales) == len(QUERIES) and all(isinstance(r, str) for r in rationales)
    if w_std == 0:  # without W, b = 0 is fast mode: the anchor is the request's alone
        fast = served(policy, bank, "fast")
        assert hits[0.0] == [float(f == r) for f, r in zip(fast, reason)]
        assert fast != reason  # the rationale moves some choice, so the grid's two ends differ


def test_write_stores_the_fitted_b_and_keeps_the_rest_of_the_head(bank, tmp_path, monkeypatch):
    policy = tiny_policy(bank, tmp_path, b=1.0, w_std=0.0, rerank=False)
    fast = served(policy, bank, "fast")
    queries = [Query(f"q{i}", text, (name,), None) for i, (text, name) in enumerate(zip(QUERIES, fast))]
    monkeypatch.setattr("training.fits.catalog", lambda path, spec, embedder: (None, queries))
    monkeypatch.setattr(fit, "benchmark_bank", lambda bench, embedder: bank)
    folder = tmp_path / "policy"
    before = load_file(folder / "anchor_head.safetensors")
    args = [str(folder), "--bench", "apibank", "--embedder", "hash:64", "--out", str(tmp_path / "fit"), "--write"]
    result = CliRunner().invoke(fit.main, args)
    assert result.exit_code == 0, result.output
    after = load_file(folder / "anchor_head.safetensors")
    assert float(after["b"]) == 0.0  # every request's gold is fast mode's choice: b = 0 hits all, ties go smaller
    assert all(np.array_equal(after[k], before[k]) for k in before if k != "b")
    record = json.loads((folder / "manifest.json").read_text())["rationale_fitted"]
    assert record["b"] == 0.0 and record["was"] == 1.0 and record["on"] == ["apibank"]
    assert record["hit@1"] == {"apibank": 1.0} and record["rerank_weight"] is None
    kept = json.loads((tmp_path / "fit" / "rationales.json").read_text())["apibank"]
    assert [r["hit"]["0"] for r in kept] == [1.0] * len(QUERIES)
    assert "| **0** |" in (tmp_path / "fit" / "results.md").read_text()


def test_a_bad_catalog_is_refused_before_any_work_and_the_policy_stays(bank, tmp_path, monkeypatch):
    tiny_policy(bank, tmp_path, b=1.0, w_std=0.0, rerank=False)
    folder = tmp_path / "policy"
    head, manifest = (folder / "anchor_head.safetensors").read_bytes(), (folder / "manifest.json").read_text()

    def grid_hits(*args, **kwargs):
        raise AssertionError("scored before every catalog was checked")

    monkeypatch.setattr(fit, "grid_hits", grid_hits)
    result = CliRunner().invoke(fit.main, [str(folder), "--bench", "apibank,nope", "--embedder", "hash:8", "--write"])
    assert result.exit_code != 0 and "--bench nope: no benchmark 'nope'" in result.output, result.output
    assert (folder / "anchor_head.safetensors").read_bytes() == head
    assert (folder / "manifest.json").read_text() == manifest


def test_a_bench_that_names_no_catalog_is_refused_and_the_policy_stays(bank, tmp_path):
    tiny_policy(bank, tmp_path, b=1.0, w_std=0.0, rerank=False)
    folder = tmp_path / "policy"
    head, manifest = (folder / "anchor_head.safetensors").read_bytes(), (folder / "manifest.json").read_text()
    result = CliRunner().invoke(fit.main, [str(folder), "--bench", "", "--embedder", "hash:8", "--write"])
    assert result.exit_code != 0 and "--bench names no catalog" in result.output, result.output
    assert (folder / "anchor_head.safetensors").read_bytes() == head
    assert (folder / "manifest.json").read_text() == manifest
