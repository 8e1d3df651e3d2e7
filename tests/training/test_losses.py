import itertools
import math

import pytest
import torch

from autotool.rollout import Rollout, StepInput
from training.losses import RewardWeights, group_advantages, grpo_loss, plackett_luce_loss, reward

GOLD = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}


def written(call_text: str, closed: bool = True) -> Rollout:
    return Rollout(StepInput("q"), [1], [2], [3], [4], 0, "needs weather", call_text, closed)


# -- the ToolRL reward ------------------------------------------------------------------------------------
def test_exact_match_earns_format_1_and_correct_3():
    r = written('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}</tool_call>')
    terms = reward(r.format_ok, r.call, GOLD, "get_weather")
    assert terms == {"r_format": 1.0, "r_correct": 3.0, "r_select": 1.0, "reward": 5.0}


def test_no_call_is_minus_3_and_no_format():
    r = written("I think you should check the weather.")
    terms = reward(r.format_ok, r.call, GOLD, "get_forecast")
    assert (terms["r_format"], terms["r_correct"], terms["r_select"]) == (0.0, -3.0, 0.0)


def test_malformed_json_is_minus_3_and_no_format():
    r = written('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"</tool_call>')
    assert r.call is None and not r.format_ok
    assert reward(r.format_ok, r.call, GOLD, "get_weather")["r_correct"] == -3.0


def test_unclosed_thought_fails_format_but_the_call_still_counts():
    r = written(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}</tool_call>', closed=False
    )
    terms = reward(r.format_ok, r.call, GOLD, "get_weather")
    assert terms["r_format"] == 0.0 and terms["r_correct"] == 3.0


@pytest.mark.parametrize(
    "arguments, s",
    [
        # same name (r_name 1); keys {city, unit} vs {city, day}: Jaccard 1/3; one equal value (city)
        ({"city": "Paris", "day": "mon"}, 1 + 1 / 3 + 1),
        # same name; same keys (Jaccard 1); no equal value
        ({"city": "Lyon", "unit": "F"}, 1 + 1 + 0),
        # same name; no arguments: Jaccard 0, no values
        ({}, 1 + 0 + 0),
    ],
)
def test_partial_match_is_6_s_over_s_max_minus_3(arguments, s):
    s_max = 1 + (1 + 2)  # r_name + one gold call with two parameters
    call = {"name": "get_weather", "arguments": arguments}
    terms = reward(True, call, GOLD, "get_weather")
    assert terms["r_correct"] == pytest.approx(6 * s / s_max - 3)


def test_wrong_tool_name_scores_nothing_but_a_parsed_call():
    terms = reward(True, {"name": "get_forecast", "arguments": {"city": "Paris", "unit": "C"}}, GOLD, "get_forecast")
    assert terms["r_correct"] == pytest.approx(-3.0) and terms["r_select"] == 0.0


def test_reward_weights_scale_each_term():
    r = written('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}</tool_call>')
    terms = reward(r.format_ok, r.call, GOLD, "get_weather", RewardWeights(format=2.0, correct=0.5, select=0.0))
    assert terms["reward"] == pytest.approx(2.0 + 1.5)


# -- GRPO -------------------------------------------------------------------------------------------------
def test_advantages_are_zero_for_equal_rewards_and_normalised_otherwise():
    rewards = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0], [3.0, 0.0, 0.0, 0.0]])
    adv = group_advantages(rewards)
    assert torch.equal(adv[0], torch.zeros(4))
    assert torch.allclose(adv[1], torch.tensor([1.0, -1.0, -1.0, 1.0]), atol=1e-5)
    assert adv[2, 0] > 0 and torch.all(adv[2, 1:] < 0)
    assert torch.allclose(adv.mean(dim=1), torch.zeros(3), atol=1e-6)


def _one_action(logp_value: float, old: float, advantage: float, beta: float = 0.0, ref: float | None = None):
    logp = torch.tensor([[logp_value]], requires_grad=True)
    tool = torch.tensor([0.0], requires_grad=True)
    out = grpo_loss(
        logp,
        torch.tensor([[True]]),
        tool,
        torch.tensor([advantage]),
        torch.tensor([[old]]),
        torch.tensor([0.0]),
        None if ref is None else torch.tensor([[ref]]),
        None if ref is None else torch.tensor([0.0]),
        epsilon=0.2,
        beta=beta,
    )
    out["loss"].backward()
    return out, logp.grad.item(), tool.grad.item()


def test_loss_pushes_log_probability_up_for_positive_advantage_and_down_for_negative():
    _, grad_up, tool_up = _one_action(-1.0, -1.0, advantage=1.0)
    _, grad_down, tool_down = _one_action(-1.0, -1.0, advantage=-1.0)
    assert grad_up < 0 < grad_down  # gradient descent raises log p when the advantage is positive
    assert tool_up < 0 < tool_down  # and the tool choice is an action like the tokens


def test_ratio_is_clipped_beyond_epsilon():
    # ratio e^0.5 = 1.65 > 1.2 with a positive advantage: the clipped branch is smaller, no gradient
    out, grad, _ = _one_action(-0.5, -1.0, advantage=1.0)
    assert grad == 0.0 and out["clipped"] == 1.0
    # ratio e^-0.5 = 0.61 < 0.8 with a negative advantage: clipped too
    _, grad, _ = _one_action(-1.5, -1.0, advantage=-1.0)
    assert grad == 0.0
    # inside the clip range the gradient flows: d/dlogp of -(ratio * A) = -ratio * A
    _, grad, _ = _one_action(-0.9, -1.0, advantage=1.0)
    assert grad == pytest.approx(-math.exp(0.1))


def test_kl_penalty_is_zero_at_the_reference_and_positive_away_from_it():
    at_ref, _, _ = _one_action(-1.0, -1.0, advantage=0.0, beta=0.1, ref=-1.0)
    away, grad, _ = _one_action(-0.5, -0.5, advantage=0.0, beta=0.1, ref=-1.0)
    assert at_ref["kl"] == 0.0 and away["kl"] > 0 and away["loss"] > 0
    assert grad > 0  # the penalty pulls log p back toward the reference


def test_grpo_on_a_toy_policy_moves_probability_to_the_rewarded_action():
    torch.manual_seed(0)
    logits = torch.zeros(4, requires_grad=True)  # a categorical policy over 4 actions; action 2 is rewarded
    optimizer = torch.optim.SGD([logits], lr=0.5)
    for _ in range(30):
        dist = torch.distributions.Categorical(logits=logits)
        actions = dist.sample((8,))
        rewards = (actions == 2).float()[None]
        logp = dist.log_prob(actions)
        out = grpo_loss(
            logp[:, None],
            torch.ones(8, 1, dtype=torch.bool),
            torch.zeros(8),
            group_advantages(rewards)[0],
            logp.detach()[:, None],
            torch.zeros(8),
        )
        optimizer.zero_grad()
        out["loss"].backward()
        optimizer.step()
    assert torch.softmax(logits, 0)[2] > 0.9


# -- Plackett-Luce ----------------------------------------------------------------------------------------
def pl_probability(scores: list[float], order: tuple[int, ...]) -> float:
    """P(order) under Plackett-Luce, written out: prod_j exp(s_j) / sum_{l >= j} exp(s_l)."""
    p, rest = 1.0, list(order)
    for item in order:
        p *= math.exp(scores[item]) / sum(math.exp(scores[i]) for i in rest)
        rest.remove(item)
    return p


@pytest.mark.parametrize(
    "scores, rewards",
    [
        ([0.3, -1.2, 2.0], [1.0, 3.0, 2.0]),
        ([0.5, 0.1, -0.4, 1.5], [0.0, 2.0, 5.0, 1.0]),
    ],
)
def test_plackett_luce_loss_is_the_negative_log_probability_of_the_reward_ranking(scores, rewards):
    n = len(scores)
    total = sum(pl_probability(scores, order) for order in itertools.permutations(range(n)))
    assert total == pytest.approx(1.0)  # the brute force is a distribution over rankings
    best_first = tuple(sorted(range(n), key=lambda i: -rewards[i]))
    loss = plackett_luce_loss(torch.tensor(scores), torch.tensor(rewards))
    assert loss.item() == pytest.approx(-math.log(pl_probability(scores, best_first)), rel=1e-5)


def test_ties_learn_no_order_among_themselves():
    scores, rewards = torch.tensor([0.4, -0.3, 1.1, 0.2]), torch.tensor([2.0, 2.0, 0.0, 1.0])
    swapped = scores[[1, 0, 2, 3]]  # exchange the two tied rollouts' scores
    assert plackett_luce_loss(scores, rewards).item() == pytest.approx(plackett_luce_loss(swapped, rewards).item())
    # Breslow: each tied rollout against its group and everything below it
    pool = scores[[0, 1, 2, 3]]
    expected = (
        -(scores[0] - torch.logsumexp(pool, 0))
        - (scores[1] - torch.logsumexp(pool, 0))
        - (scores[3] - torch.logsumexp(scores[[2, 3]], 0))
    )
    assert plackett_luce_loss(scores, rewards).item() == pytest.approx(expected.item(), rel=1e-6)


def test_all_equal_rewards_give_zero_loss_and_no_gradient():
    scores = torch.tensor([0.4, -0.3, 1.1], requires_grad=True)
    loss = plackett_luce_loss(scores, torch.tensor([1.0, 1.0, 1.0]))
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(scores.grad, torch.zeros(3))


def test_plackett_luce_on_a_toy_policy_moves_probability_to_the_best_candidate():
    logits = torch.zeros(4, requires_grad=True)
    reference = torch.log_softmax(torch.zeros(4), 0)
    rewards = torch.tensor([0.0, 1.0, 3.0, 2.0])  # candidate 2 is best
    optimizer = torch.optim.SGD([logits], lr=0.5)
    for _ in range(50):
        scores = 1.0 * (torch.log_softmax(logits, 0) - reference)
        loss = plackett_luce_loss(scores, rewards)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    probs = torch.softmax(logits, 0)
    assert probs.argmax() == 2 and probs[2] > probs[3] > probs[1] > probs[0]
