import math

import numpy as np
import pytest

from autotool.metrics import hit_at_k, ndcg_at_k, paired_bootstrap, reciprocal_rank, selection_metrics


def test_strict_ranking():
    ranking = ["a", "b", "c", "d", "e", "f"]
    assert hit_at_k(ranking, "a", 1) == 1.0
    assert hit_at_k(ranking, "c", 1) == 0.0 and hit_at_k(ranking, "c", 3) == 1.0
    assert reciprocal_rank(ranking, "c") == pytest.approx(1 / 3)
    assert ndcg_at_k(ranking, "c", 5) == pytest.approx(1 / math.log2(4))
    assert ndcg_at_k(ranking, "f", 5) == 0.0  # rank 6 is outside the top 5
    assert reciprocal_rank(ranking, "f", k=5) == 0.0


def test_empty_ranking_and_missing_gold():
    assert selection_metrics([], "a") == {"hit@1": 0.0, "hit@5": 0.0, "mrr@10": 0.0, "ndcg@5": 0.0}
    assert selection_metrics(["x", "y"], "a") == {"hit@1": 0.0, "hit@5": 0.0, "mrr@10": 0.0, "ndcg@5": 0.0}


def test_multi_gold():
    ranking = ["x", "a", "y", "b"]
    assert hit_at_k(ranking, {"a", "b"}, 1) == 0.0 and hit_at_k(ranking, {"a", "b"}, 2) == 1.0
    assert reciprocal_rank(ranking, {"a", "b"}) == pytest.approx(0.5)  # the first gold counts
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at_k(ranking, {"a", "b"}, 5) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(["a", "b"], {"a", "b"}, 5) == pytest.approx(1.0)


def test_ties_count_as_the_expected_value_over_orders():
    # gold 'a' tied with 'b' for first place: hit@1 is a coin flip, MRR is (1 + 1/2) / 2
    ranking, scores = ["b", "a", "c"], [0.9, 0.9, 0.1]
    assert hit_at_k(ranking, "a", 1, scores) == pytest.approx(0.5)
    assert hit_at_k(ranking, "a", 2, scores) == 1.0
    assert reciprocal_rank(ranking, "a", 10, scores) == pytest.approx(0.75)
    assert ndcg_at_k(ranking, "a", 5, scores) == pytest.approx(0.5 + 0.5 / math.log2(3))
    # order within the tie does not matter
    assert selection_metrics(["a", "b", "c"], "a", scores) == selection_metrics(ranking, "a", scores)


def test_tie_group_straddling_the_cutoff():
    # x first, then a four-way tie holding the gold: hit@2 = P(gold in the first of the 4 places) = 1/4
    ranking, scores = ["x", "p", "q", "gold", "r"], [1.0, 0.5, 0.5, 0.5, 0.5]
    assert hit_at_k(ranking, "gold", 2, scores) == pytest.approx(0.25)
    assert hit_at_k(ranking, "gold", 3, scores) == pytest.approx(0.5)
    assert reciprocal_rank(ranking, "gold", 10, scores) == pytest.approx((1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4)
    assert reciprocal_rank(ranking, "gold", 3, scores) == pytest.approx((1 / 2 + 1 / 3) / 4)
    # two gold in a three-way tie for first: P(first place is gold) = 2/3
    assert hit_at_k(["a", "b", "c"], {"a", "b"}, 1, [1, 1, 1]) == pytest.approx(2 / 3)
    # first gold at place 1 w.p. 2/3, place 2 w.p. 1/3
    assert reciprocal_rank(["a", "b", "c"], {"a", "b"}, 10, [1, 1, 1]) == pytest.approx(2 / 3 + 1 / 6)


def test_scores_must_match_ranking():
    with pytest.raises(ValueError, match="2 ranked items but 1 scores"):
        hit_at_k(["a", "b"], "a", 1, [0.5])


def test_paired_bootstrap():
    a, b = np.ones(200), np.zeros(200)
    result = paired_bootstrap(a, b)
    assert result == {"mean": 1.0, "ci_low": 1.0, "ci_high": 1.0, "n": 200}
    rng = np.random.default_rng(1)
    a = rng.random(500) < 0.6
    b = rng.random(500) < 0.5
    result = paired_bootstrap(a, b, seed=3)
    assert result["ci_low"] < result["mean"] < result["ci_high"]
    assert result["mean"] == pytest.approx(a.mean() - b.mean())
    identical = paired_bootstrap(a, a)
    assert identical["ci_low"] == identical["ci_high"] == 0.0
    grouped = paired_bootstrap(a, b, groups=[str(i // 5) for i in range(500)], seed=3)
    assert grouped["mean"] == pytest.approx(result["mean"])
    with pytest.raises(ValueError, match="equal-length"):
        paired_bootstrap([1, 0], [1])
