"""Arguments through the schema grammar (autotool/grammar.py): what it lets through, and real generation."""

import pytest
import torch
from helpers import ASSETS

from autotool import Policy
from autotool.calls import schema_errors
from autotool.grammar import ArgumentGrammar, call_grammar, closed
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
