"""The name-generation baseline: the LLM picks a name from the listed hybrid top-k, then writes the call."""

import torch
from helpers import ASSETS, write_bench

from autotool.benchmarks import load_benchmark, steps_of
from eval.methods import METHODS, NAMEGEN_SYSTEM, EvalContext
from toolbank import HashEmbedder, ToolBank


def test_namegen_ranks_the_listed_tools_by_the_likelihood_of_their_names(tmp_path):
    bench = load_benchmark(write_bench(tmp_path / "tiny"))
    bank = ToolBank.create(tmp_path / "bank", HashEmbedder(64))
    bank.add(bench.tools)
    ctx = EvalContext(bench, bank, {"backbone": str(ASSETS / "tiny-llama"), "namegen_k": 4, "call_tokens": 8})
    predict = METHODS["namegen"](ctx)

    step = steps_of(bench.queries[0])[0]
    prediction = predict(step)
    hits = bank.search(step.query.text, k=4, mode="hybrid")
    assert sorted(prediction.ranking) == sorted(h.name for h in hits)
    assert prediction.scores == sorted(prediction.scores, reverse=True) and max(prediction.scores) < 0
    assert prediction.format_error == (prediction.call is None)
    if prediction.call is not None:
        assert prediction.call["name"] == prediction.ranking[0]

    # Each score is log p(name") after the listing, as the full model computes it.
    from autotool import Policy

    policy = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    tokenizer = policy.tokenizer
    listing = "\n".join(f"- {h.name}: {h.tool.description[:300]}" for h in hits)
    messages = [
        {"role": "system", "content": NAMEGEN_SYSTEM},
        {"role": "user", "content": f"{step.query.text}\n\nTools:\n{listing}"},
    ]
    head = tokenizer(
        tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + '<tool_call>{"name": "',
        add_special_tokens=False,
    )["input_ids"]
    name = tokenizer(prediction.ranking[-1] + '"', add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        logits = policy.model(input_ids=torch.tensor([head + name])).logits[0].float()
    expected = sum(torch.log_softmax(logits[len(head) + i - 1], -1)[t].item() for i, t in enumerate(name))
    assert abs(prediction.scores[-1] - expected) < 1e-3

    # A tool already called in this query is not listed again.
    multi = [s for s in steps_of(next(q for q in bench.queries if q.id == "multi")) if s.context][0]
    assert not set(multi.context) & set(predict(multi).ranking)
