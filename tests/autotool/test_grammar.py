"""Arguments through the schema grammar (autotool/grammar.py): what it lets through, and real generation."""

import json

import pytest
import torch
from helpers import ASSETS

from autotool import Policy
from autotool.calls import schema_errors
from autotool.grammar import ArgumentGrammar, call_grammar, closed, excluding, tightened
from autotool.prompts import TokenBudget
from autotool.select import select_steps
from autotool.selection import StepInput
from toolbank import HashEmbedder, Tool, ToolBank

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["Paris", "Rome"]},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "hourly": {"type": "boolean"},
        "options": {"type": "object", "properties": {"days": {"type": "integer"}}},
    },
    "required": ["city", "unit", "hourly"],
}


@pytest.fixture(scope="module")
def tokenizer():
    return Policy.create(_bank(), backbone=ASSETS / "tiny-llama").tokenizer


def _bank(path=None):
    import tempfile

    bank = ToolBank.create((path or tempfile.mkdtemp()) + "/bank", HashEmbedder(64))
    bank.add(
        [
            Tool("get_weather", "Weather forecast for a city", WEATHER),
            Tool(
                "send_email",
                "Send an email",
                {
                    "type": "object",
                    "properties": {"to": {"type": "string", "enum": ["bob", "ann"]}},
                    "required": ["to"],
                },
            ),
        ]
    )
    return bank


def test_objects_with_properties_take_no_other_keys_unless_the_schema_says_so():
    schema = closed({**WEATHER, "properties": {**WEATHER["properties"], "free": {"type": "object"}}})
    assert schema["additionalProperties"] is False and schema["properties"]["options"]["additionalProperties"] is False
    assert "additionalProperties" not in schema["properties"]["free"]  # no properties listed: anything goes
    assert closed({"type": "object", "properties": {}, "additionalProperties": True})["additionalProperties"] is True
    assert "additionalProperties" not in WEATHER  # the tool's own schema is not changed
    assert call_grammar(WEATHER).startswith('start: " "? arguments "}"\narguments: %json {"type": "object"')


@pytest.mark.parametrize(
    "text, allowed",
    [
        (' {"city": "Paris", "unit": "celsius", "hourly": true}}', True),
        ('{"city": "Rome", "unit": "fahrenheit", "hourly": false, "options": {"days": 3}}}', True),
        (' {"city": "Paris", "unit": "celsius", "hourly": true, "verbose": 1}}', False),  # a key not in the schema
        (' {"city": "Oslo", "unit": "celsius", "hourly": true}}', False),  # not in the enum
        (' {"city": "Paris", "unit": "celsius", "hourly": "yes"}}', False),  # wrong type
        (' {"city": "Paris", "unit": "celsius"}}', False),  # a required key missing
        (' {"city":"Paris", "unit": "celsius", "hourly": true}}', False),  # not json.dumps' layout
        (' {"city": "Paris", "unit": "celsius", "hourly": true}', False),  # the call not closed
    ],
)
def test_the_grammar_admits_exactly_the_valid_calls_in_the_training_layout(tokenizer, text, allowed):
    grammar = ArgumentGrammar(tokenizer)
    matcher, why = grammar.matcher(WEATHER)
    assert why == ""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    consumed = matcher.try_consume_tokens(ids)
    complete = consumed == len(ids) and matcher.consume_token(grammar.stop_id)
    assert complete == allowed


def test_a_schema_the_grammar_cannot_express_is_reported_not_fatal(tokenizer):
    matcher, why = ArgumentGrammar(tokenizer).matcher({"type": "object", "properties": {"x": {"$ref": "#/missing"}}})
    assert matcher is None and why


def test_a_random_model_writes_valid_arguments_only_through_the_grammar(tmp_path):
    """The tiny test model has random weights: unconstrained, it writes no valid call; through the grammar,
    every call parses and validates."""
    bank = _bank(str(tmp_path))
    torch.manual_seed(0)
    policy = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    steps = [StepInput(q) for q in ["weather in Paris", "email bob", "forecast for Rome", "mail ann", "weather"]]
    free = select_steps(policy, bank, steps, mode="fast", grammar=False)
    assert all(s.arguments is None and s.argument_errors for s in free)
    constrained = select_steps(policy, bank, steps, mode="fast")
    for selection in constrained:
        assert selection.arguments is not None and selection.argument_errors == []
        assert schema_errors(selection.arguments, selection.tool.parameters) == []
        assert selection.raw_arguments.endswith("}")


COPIED = "A description of the issue faced in the chemical plant (e.g., abnormal temperature)"


def _admits(tokenizer, schema, arguments) -> bool:
    """Whether the call grammar of `schema` lets the policy write `arguments` (in the training layout)."""
    grammar = ArgumentGrammar(tokenizer)
    matcher, why = grammar.matcher(schema)
    assert why == ""
    ids = tokenizer(" " + json.dumps(arguments, ensure_ascii=False) + "}", add_special_tokens=False)["input_ids"]
    return matcher.try_consume_tokens(ids) == len(ids) and matcher.consume_token(grammar.stop_id)


@pytest.mark.parametrize(
    "value, allowed",
    [
        ("keywords", False),
        ("KeyWords", False),  # case is ignored
        ("keywords.", False),  # and what is around and between the words
        (" KEYWORDS! ", False),
        ("key words", True),  # other words: not a copy
        (COPIED, False),
        (COPIED[:20] + " and more", False),  # begins with the description's first 16 characters
        ("keyword", True),
        ("keywords for reliability", True),
        ("solar panels", True),
        ("", True),
        ("日本語", True),
    ],
)
def test_excluding_forbids_the_copied_texts_and_nothing_else(tokenizer, value, allowed):
    pattern = excluding(["keywords", COPIED])
    schema = {"type": "object", "properties": {"k": {"type": "string", "pattern": pattern}}, "required": ["k"]}
    assert _admits(tokenizer, schema, {"k": value}) == allowed


@pytest.mark.parametrize(
    "value, allowed", [("Straße", False), ("STRASSE", True), ("ix", False), ("Iy", False), ("iz", True)]
)
def test_excluding_matches_case_one_character_at_a_time(tokenizer, value, allowed):
    """Case folding that changes a text's length ('ß' to 'ss') is not applied; letters whose cases meet ('i',
    'I', 'ı') share one branch, so no alternative lets a forbidden text through."""
    pattern = excluding(["Straße", "ix", "ıy"])
    schema = {"type": "object", "properties": {"k": {"type": "string", "pattern": pattern}}, "required": ["k"]}
    assert _admits(tokenizer, schema, {"k": value}) == allowed


def test_a_tightened_schema_forbids_the_copy_and_bounds_what_ran_out(tokenizer):
    schema = {
        "type": "object",
        "properties": {
            "keywords": {"type": "string", "description": "Keywords to search for"},
            "year": {"type": "integer", "minimum": 1900},
            "score": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string"},
        },
        "required": ["keywords"],
    }
    copy_only = tightened(schema, {"keywords": ["keywords"]}, None)
    for copy in ("Keywords to search for", "keywords", "keywords_to_search_for", "Keywords-To-Search-For"):
        assert not _admits(tokenizer, copy_only, {"keywords": copy}), copy
    assert _admits(tokenizer, copy_only, {"keywords": "solar", "year": 10**30, "note": "x" * 200})  # no bounds
    assert "pattern" not in schema["properties"]["keywords"]  # the tool's schema is not changed
    bounded = tightened(schema, {}, 92, written=["year", "score", "tags"])
    assert "note" not in bounded["properties"]  # neither required nor begun by the first try
    assert _admits(tokenizer, bounded, {"keywords": "solar", "year": 2022, "score": 0.5, "tags": ["a"]})
    for too_long in (
        {"keywords": "x" * 93},
        {"keywords": "a", "year": 10**30},
        {"keywords": "a", "year": 1800},  # the schema's own minimum stays
        {"keywords": "a", "score": 0.123456},
        {"keywords": "a", "tags": ["t"] * 3},
        {"keywords": "a", "note": "b"},
    ):
        assert not _admits(tokenizer, bounded, too_long), too_long
    properties = bounded["properties"]
    longest = {key: "x" * spec["maxLength"] for key, spec in properties.items() if "maxLength" in spec}
    longest |= {"year": properties["year"]["maximum"], "score": -properties["score"]["maximum"]}
    longest["tags"] = ["x" * properties["tags"]["items"]["maxLength"]] * properties["tags"]["maxItems"]
    assert _admits(tokenizer, bounded, longest)
    assert len(json.dumps(longest)) <= 92  # the budget, keys and punctuation counted


def test_a_retry_forbids_the_copied_value_and_fits_the_budget(tmp_path, monkeypatch):
    """First tries stubbed at the seam: one copies a required value's description, one runs out of tokens. The
    retry's grammar rejects the copy; after running out, the real (random) model writes, through the bounded
    grammar, arguments that validate."""
    bank = ToolBank.create(tmp_path / "bank", HashEmbedder(64))
    schema = {
        "type": "object",
        "properties": {
            "keywords": {"type": "string", "description": "Keywords to search for"},
            "year": {"type": "integer"},
        },
        "required": ["keywords", "year"],
    }
    bank.add([Tool("search_papers", "Search research papers", schema)])
    torch.manual_seed(0)
    policy = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    real, end = policy.generate_ids, policy.tokenizer.convert_tokens_to_ids("</tool_call>")

    def ids(text):
        return policy.tokenizer(text, add_special_tokens=False)["input_ids"]

    copy, fresh = ' {"keywords": "keywords to search for", "year": 2022}}', ' {"keywords": "solar", "year": 2022}}'
    tries = []

    def copying(prompts, max_new_tokens, stop, constraints=None, **kwargs):
        tries.append(constraints)
        if len(tries) == 1:
            return [ids(copy) + [end]]
        (matcher,) = constraints
        assert matcher is not None and matcher.validate_tokens(ids(copy)) < len(ids(copy))
        assert matcher.validate_tokens(ids(fresh)) == len(ids(fresh))
        return [ids(fresh) + [end]]

    monkeypatch.setattr(policy, "generate_ids", copying)
    (selection,) = select_steps(policy, bank, [StepInput("papers on solar power")], mode="fast", min_cosine=0.0)
    assert len(tries) == 2 and selection.arguments == {"keywords": "solar", "year": 2022}

    def running_out(prompts, max_new_tokens, stop, constraints=None, **kwargs):
        tries.append(constraints)
        if len(tries) == 3:
            return [ids(' {"keywords": "' + "a" * 100)[:max_new_tokens]]
        return real(prompts, max_new_tokens, stop, constraints=constraints, **kwargs)

    monkeypatch.setattr(policy, "generate_ids", running_out)
    (selection,) = select_steps(
        policy, bank, [StepInput("papers on solar power")], mode="fast", min_cosine=0.0, budget=TokenBudget(call=48)
    )
    assert len(tries) == 4 and tries[3] is not None
    assert selection.argument_errors == [] and schema_errors(selection.arguments, schema) == []
