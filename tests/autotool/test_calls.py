import pytest

from autotool.calls import (
    CallError,
    checked_arguments,
    copied_values,
    multiset_jaccard,
    parse_call,
    schema_errors,
    toolrl_correctness,
)

GOLD = [{"name": "getWeather", "arguments": {"city": "Paris", "days": 3}}]


def test_exact_match_is_plus_three():
    assert toolrl_correctness(GOLD, GOLD)["r_correct"] == 3.0


def test_no_call_is_minus_three():
    assert toolrl_correctness(GOLD, None)["r_correct"] == -3.0


def test_partial_match_hand_computed():
    # S_max = 1 + (1 + 2) = 4. Right name (r_name 1), both keys (Jaccard 1), one equal value: S = 3.
    terms = toolrl_correctness(GOLD, [{"name": "getWeather", "arguments": {"city": "Paris", "days": 5}}])
    assert (terms["s"], terms["s_max"]) == (3.0, 4.0)
    assert terms["r_correct"] == pytest.approx(6 * 3 / 4 - 3)
    # Wrong tool: nothing matches: S = 0 -> -3.
    assert toolrl_correctness(GOLD, [{"name": "getNews", "arguments": {"city": "Paris"}}])["r_correct"] == -3.0
    # Right name, one of two keys plus an extra key: Jaccard {city} / {city, days, unit} = 1/3, one value.
    terms = toolrl_correctness(GOLD, [{"name": "getWeather", "arguments": {"city": "Paris", "unit": "C"}}])
    assert terms["r_keys"] == pytest.approx(1 / 3) and terms["r_values"] == 1.0
    assert terms["r_correct"] == pytest.approx(6 * (1 + 1 / 3 + 1) / 4 - 3)


def test_two_gold_calls_one_predicted():
    gold = GOLD + [{"name": "sendEmail", "arguments": {"to": "a@b.c"}}]
    # S_max = 1 + 3 + 2 = 6; r_name = |{getWeather}| / |{getWeather, sendEmail}| = 1/2; gold call 1 fully
    # matched (keys 1 + values 2); gold call 2 has no same-name prediction. S = 0.5 + 3 = 3.5.
    terms = toolrl_correctness(gold, GOLD)
    assert terms["r_name"] == 0.5 and terms["s"] == 3.5 and terms["s_max"] == 6.0
    assert terms["r_correct"] == pytest.approx(6 * 3.5 / 6 - 3)


def test_a_predicted_call_is_matched_once():
    gold = [{"name": "f", "arguments": {"x": 1}}, {"name": "f", "arguments": {"x": 2}}]
    terms = toolrl_correctness(gold, [{"name": "f", "arguments": {"x": 2}}])
    # the single prediction matches gold 1 on keys only (1.0), is then used; gold 2 finds none left.
    assert terms["r_keys"] == 1.0 and terms["r_values"] == 0.0


def test_multiset_jaccard():
    assert multiset_jaccard(["a", "a", "b"], ["a", "b", "b"]) == pytest.approx(2 / 4)
    assert multiset_jaccard([], []) == 1.0 and multiset_jaccard(["a"], []) == 0.0


def test_parse_call():
    assert parse_call('{"name": "f", "arguments": {"x": 1}}') == {"name": "f", "arguments": {"x": 1}}
    assert parse_call('{"name": "f"}') == {"name": "f", "arguments": {}}
    for bad, words in [
        ('{"name": "f", "arguments": ', "not JSON"),
        ('["f"]', "JSON object"),
        ('{"arguments": {}}', '"name"'),
        ('{"name": "f", "arguments": [1]}', "arguments"),
    ]:
        with pytest.raises(CallError, match=words):
            parse_call(bad)


def test_schema_errors():
    schema = {"type": "object", "properties": {"days": {"type": "integer"}}, "required": ["city"]}
    errors = schema_errors({"days": "three"}, schema)
    assert any("days" in e and "integer" in e for e in errors) and any("city" in e for e in errors)
    assert schema_errors({"city": "Paris", "days": 3}, schema) == [] and schema_errors({"z": 1}, {}) == []


def test_call_prefix_ends_where_a_trained_token_boundary_is():
    """The prefix the model continues must end at a token boundary of the training text: the space after
    `"arguments":` is tokenised with the brace (` {"`), so the prefix stops before it."""
    from helpers import ASSETS
    from transformers import AutoTokenizer

    from autotool.prompts import call_prefix, call_text

    text = call_text("getWeather", GOLD[0]["arguments"])
    prefix = call_prefix("getWeather")
    assert prefix == '{"name": "getWeather", "arguments":' and text.startswith(prefix)
    tokenizer = AutoTokenizer.from_pretrained(ASSETS / "tiny-llama")  # a small BPE; SmolLM2 splits the same way
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    prefix_ids = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    assert ids[: len(prefix_ids)] == prefix_ids  # the prefix's tokens are the training text's first tokens


def test_values_that_copy_a_parameters_name_or_description_are_missing():
    schema = {
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "description": "The order's ID, e.g. B-77."},
            "currency": {"type": "string", "title": "Target currency"},
            "note": {"type": "string", "description": "Free text"},
        },
        "required": ["order_id", "currency"],
    }
    assert copied_values({"order_id": "the order's id, e.g. B-77", "currency": "EUR", "note": "note"}, schema) == [
        "order_id",
        "note",
    ]
    assert copied_values({"order_id": "B-77", "currency": "target_currency", "note": 5}, schema) == ["currency"]
    kept, errors = checked_arguments({"order_id": "Order-ID", "currency": "EUR", "note": "free text"}, schema)
    assert kept == {"currency": "EUR"}  # the name, word by word
    assert errors == ["order_id: the value only repeats the parameter's name or description (treated as missing)"]
    assert checked_arguments({"order_id": "B-77", "currency": "EUR", "note": "Free text about B-77"}, schema) == (
        {"order_id": "B-77", "currency": "EUR", "note": "Free text about B-77"},
        [],
    )
    kept, errors = checked_arguments({"order_id": "B-77", "currency": "Target currency"}, schema)
    assert kept == {"order_id": "B-77"}
    assert errors == ["currency: the value only repeats the parameter's name or description (treated as missing)"]
