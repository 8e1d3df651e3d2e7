"""The reranking stage (autotool/rerank.py): how it reorders a step's best candidates, how a policy's manifest
names it, and that the served path applies it. The shipped cross-encoder itself: tests/slow/test_rerank_shipped.py."""

import json

import numpy as np
import pytest
import torch
from helpers import ASSETS

from autotool import Policy, select_tool
from autotool.benchmarks import manifest_trained_on
from autotool.policy import PolicyError
from autotool.rerank import Rerank, RerankerError, load_reranker, rerank_candidates, reranked
from autotool.selection import Candidate
from toolbank import STOCK_EMBEDDER, Tool

TINY = ASSETS / "tiny-llama"


class ScoresByName:
    """A stand-in cross-encoder: a fixed score per tool name (0 for the rest); records what it was asked."""

    def __init__(self, scores: dict[str, float]):
        self.by_name, self.asked = scores, []

    def scores(self, query, texts):
        self.asked.append((query, list(texts)))
        return np.array([next((v for k, v in self.by_name.items() if t.startswith(k)), 0.0) for t in texts])


def test_reranked_keeps_the_mass_of_the_candidates_and_follows_the_scores():
    p = np.array([0.5, 0.3, 0.1])
    assert np.allclose(reranked(p, np.zeros(3), 4.0), p)  # equal scores: the same distribution
    out = reranked(p, np.array([0.0, 0.0, 1.0]), 4.0)
    assert out.sum() == pytest.approx(0.9) and out.argmax() == 2  # e^4 * 0.1 > 0.5
    assert np.allclose(reranked(p, np.array([0.0, 0.0, 1.0]), 0.0), p)


def candidates_of(*names_and_p):
    return [Candidate(Tool(n, f"tool {n}", {}), p, 0.5) for n, p in names_and_p]


def test_rerank_candidates_reorders_the_top_only_and_stays_best_first():
    ranked = candidates_of(("a", 0.4), ("b", 0.3), ("c", 0.2), ("d", 0.1))
    fake = ScoresByName({"c": 1.0})
    out = rerank_candidates(fake, Rerank("x", 3, 4.0), "a request", ranked)
    assert fake.asked == [("a request", [c.tool.text for c in ranked[:3]])]
    # c takes most of the top three's mass; a and b fall below d, which keeps its own
    assert [c.tool.name for c in out] == ["c", "d", "a", "b"]
    assert out[1].probability == 0.1
    assert sum(c.probability for c in out) == pytest.approx(1.0)
    assert [c.probability for c in out] == sorted((c.probability for c in out), reverse=True)
    assert rerank_candidates(fake, Rerank("x", 3, 0.0), "q", ranked) == ranked  # c = 0: not even scored


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("yes", "'rerank'"),
        ({"top": 5, "weight": 1.0}, "'rerank.reranker'"),
        ({"reranker": "r", "top": 1, "weight": 1.0}, "'rerank.top'"),
        ({"reranker": "r", "top": 5, "weight": -1}, "'rerank.weight'"),
    ],
)
def test_a_bad_rerank_field_is_named(tmp_path, value, field):
    with pytest.raises(RerankerError, match=field):
        Rerank.from_manifest(value, tmp_path / "manifest.json")


def test_a_missing_reranker_folder_or_a_bad_config_is_named(tmp_path):
    with pytest.raises(RerankerError, match="no such reranker folder"):
        load_reranker(tmp_path / "nowhere")
    (tmp_path / "reranker.json").write_text(json.dumps({"base": "someone/else", "max_length": 96}))
    with pytest.raises(RerankerError, match="reranker.json: field 'base'"):
        load_reranker(tmp_path)


@pytest.fixture
def policy_with_rerank(bank, tmp_path):
    """A tiny policy whose manifest names a reranker folder (read, never run: the tests stand a fake in)."""
    folder = tmp_path / "reranker"
    folder.mkdir()
    (folder / "reranker.json").write_text(json.dumps({"base": STOCK_EMBEDDER, "max_length": 96}))
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (folder / name).write_text("{}")
    torch.manual_seed(0)
    policy = Policy.create(bank, backbone=TINY)
    policy.info["rerank"] = {"reranker": str(folder), "top": 3, "weight": 8.0}
    policy.save(tmp_path / "policy")
    return tmp_path / "policy"


def test_the_served_path_reorders_by_the_policys_reranker(bank, policy_with_rerank):
    policy = Policy.load(policy_with_rerank, bank)
    assert policy.rerank == Rerank(str(policy_with_rerank.parent / "reranker"), 3, 8.0)
    policy._reranker = ScoresByName({})  # equal scores: the distribution as it was
    plain = select_tool("weather forecast in Paris", bank=bank, policy=policy, k=4, mode="fast", arguments=False)
    third = plain.candidates[2][0].name
    policy._reranker = ScoresByName({third: 1.0})  # stands in for the cross-encoder
    got = select_tool("weather forecast in Paris", bank=bank, policy=policy, k=4, mode="fast", arguments=False)
    assert got.tool.name == third and got.candidates[0][0].name == third
    fourth, p = plain.candidates[3]
    assert dict((t.name, q) for t, q in got.candidates)[fourth.name] == p  # below the reordered three: as it was
    assert policy._reranker.asked[0][0] == "weather forecast in Paris"


def test_a_policy_with_a_broken_rerank_field_is_refused_by_file_and_field(bank, policy_with_rerank):
    manifest = json.loads((policy_with_rerank / "manifest.json").read_text())
    manifest["rerank"]["top"] = 0
    (policy_with_rerank / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(PolicyError, match=r"manifest.json: field 'rerank.top'"):
        Policy.load(policy_with_rerank, bank)


def test_what_a_policy_trained_on_includes_its_rerankers_catalogs(tmp_path):
    folder = tmp_path / "reranker"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"trained_on": [{"catalog": "bfcl", "split": "all", "seed": 0}]}))
    manifest = {"trained_on": [{"catalog": "metatool", "split": "train", "seed": 0}]}
    assert {e["catalog"] for e in manifest_trained_on(manifest)} == {"metatool"}
    manifest["rerank"] = {"reranker": str(folder), "top": 5, "weight": 4.0}
    assert {(e["catalog"], e["split"]) for e in manifest_trained_on(manifest)} == {
        ("metatool", "train"),
        ("bfcl", "all"),
    }
