import pytest
import torch
from helpers import ASSETS

from autotool import Policy
from autotool.policy import embed
from autotool.prompts import TokenBudget, call_text
from autotool.rollout import StepInput, ToolTable, logprobs, rollout, teacher_rollout

TINY = ASSETS / "tiny-llama"


@pytest.fixture
def policy(bank):
    torch.manual_seed(0)
    policy = Policy.create(bank, backbone=TINY)
    with torch.no_grad():  # a policy whose adapters and head are not at their zero start
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.05)
        policy.head.W.weight.normal_(std=0.1)
    return policy


def test_rollouts_have_the_protocols_layout(bank, policy):
    table = ToolTable.from_bank(bank)
    torch.manual_seed(1)
    (group,) = rollout(policy, table, [StepInput("weather in Paris")], group=3, budget=TokenBudget(5, 7))
    anchor, think_end = (policy.tokenizer.convert_tokens_to_ids(t) for t in ("<tool_anchor>", "</think>"))
    for r in group:
        assert r.ids[r.anchor_position] == anchor
        assert r.ids[r.anchor_position - 1] == think_end  # written by the policy, or inserted when it did not
        assert len(r.rationale_ids) <= 5 and len(r.call_ids) <= 7
        assert sum(r.action_mask) == len(r.rationale_ids) + len(r.call_ids)
        assert sum(r.selection_mask) == len(r.rationale_ids)
        assert 0 <= r.tool < len(table) and r.tool_logp <= 0
        assert sum(p for _, p in r.ranking) == pytest.approx(1.0, abs=1e-5)  # 4 tools: all ranked


def test_logprobs_match_the_full_models_log_softmax(bank, policy):
    table = ToolTable.from_bank(bank)
    torch.manual_seed(2)
    rollouts = [
        r
        for g in rollout(
            policy, table, [StepInput("weather in Paris"), StepInput("send a mail")], group=2, budget=TokenBudget(5, 6)
        )
        for r in g
    ]
    token_logp, mask, tool_logp = logprobs(policy, table, rollouts)
    for row, r in enumerate(rollouts):
        with torch.no_grad():
            full = torch.log_softmax(policy.model(input_ids=torch.tensor([r.ids])).logits[0], dim=-1)
        positions = [i for i, a in enumerate(r.action_mask) if a]
        expected = full[[p - 1 for p in positions], [r.ids[p] for p in positions]]
        torch.testing.assert_close(token_logp[row, positions], expected, atol=1e-4, rtol=1e-4)
        assert mask[row].sum() == len(positions)
        assert tool_logp[row].item() == pytest.approx(r.tool_logp, abs=1e-4)  # as when the tool was drawn


def test_excluded_tools_are_never_drawn_nor_ranked(bank, policy):
    table = ToolTable.from_bank(bank)
    step = StepInput("weather forecast", exclude=("weather/get_weather", "weather/get_forecast"))
    torch.manual_seed(3)
    for r in rollout(policy, table, [step], group=8, budget=TokenBudget(2, 2))[0]:
        assert table.tools[r.tool].qualified_name not in step.exclude
        assert not {table.tools[t].qualified_name for t, _ in r.ranking} & set(step.exclude)


def test_generation_leaves_the_adapters_as_they_were(bank, policy):
    before = {k: v.clone() for k, v in policy.model.state_dict().items()}
    rollout(policy, ToolTable.from_bank(bank), [StepInput("weather")], group=2, budget=TokenBudget(3, 3))
    after = policy.model.state_dict()
    for key, value in before.items():
        torch.testing.assert_close(after[key], value, atol=1e-6, rtol=0)


def test_teacher_rollout_scores_the_gold_step(bank, policy):
    table = ToolTable.from_bank(bank)
    step = StepInput("weather in Paris")
    vectors = embed(table.embedder, ["weather in Paris", "current weather for a city"])
    r = teacher_rollout(
        policy,
        table,
        step,
        "current weather for a city",
        "weather/get_weather",
        call_text("get_weather", {"city": "Paris"}),
        vectors[0],
        vectors[1],
    )
    assert r.format_ok and r.call == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert table.tools[r.tool].qualified_name == "weather/get_weather"
    token_logp, mask, tool_logp = logprobs(policy, table, [r])
    (-(token_logp.sum() + tool_logp.sum())).backward()
    assert policy.head.W.weight.grad.abs().sum() > 0  # the selection term reaches the anchor head
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for n, p in policy.model.named_parameters() if "lora" in n)


def test_untrained_fast_rollout_ranks_like_dense_retrieval(bank):
    policy = Policy.create(bank, backbone=TINY)
    table = ToolTable.from_bank(bank)
    for query in ["weather forecast in Paris", "convert my PDF document to text"]:
        ((r,),) = rollout(policy, table, [StepInput(query)], sample=False, mode="fast", budget=TokenBudget(call=2))
        dense = bank.search(query, k=4, mode="dense")
        score = {h.name: h.score for h in dense}  # compared by score: tied tools may come in either order
        assert [score[table.tools[t].qualified_name] for t, _ in r.ranking] == pytest.approx(
            [h.score for h in dense], abs=1e-5
        )
        assert table.tools[r.tool].qualified_name in {h.name for h in dense if h.score >= dense[0].score - 1e-6}
