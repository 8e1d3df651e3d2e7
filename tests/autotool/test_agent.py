"""`Agent` and `tool_from_function`: tool cards from docstrings and hints, where the agent's tools live, and
the run loop with scripted generations (tiny model, HashEmbedder banks)."""

import enum
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
import torch
from helpers import ASSETS

from autotool import Agent, Policy, tool_from_function
from autotool.agent import parse_docstring
from toolbank import DEFAULT_EMBEDDER, BankError, HashEmbedder, Tool, ToolBank, default_bank_path

TINY = ASSETS / "tiny-llama"


class Script(Policy):
    """A policy that writes scripted texts as the real generator would: each call continues the current text
    for at most `max_new_tokens` tokens, cut after the stop token; what is left is written by the next call."""

    script: list[list[int]]
    prompts_seen: list[list[int]]

    def generate_ids(self, prompts, max_new_tokens, stop, sample=False, temperature=1.0, constraints=None):
        stop_id, out = self.tokenizer.convert_tokens_to_ids(stop), []
        for prompt in prompts:
            self.prompts_seen.append(list(prompt))
            ids = self.script[0]
            cut = ids[:max_new_tokens]
            if stop_id in cut:
                cut = cut[: cut.index(stop_id) + 1]
            rest = ids[len(cut) :]
            if rest:
                self.script[0] = rest
            else:
                self.script.pop(0)
            out.append(cut)
        return out


@pytest.fixture
def policy(bank):
    torch.manual_seed(0)
    return Policy.create(bank, backbone=TINY)


def script(policy, *texts):
    policy.__class__ = Script
    policy.script = [policy.encode(t)[0].tolist() for t in texts]
    policy.prompts_seen = []
    return policy


# -- tool cards ---------------------------------------------------------------------------------------------


def test_google_docstrings_annotated_descriptions_and_hints_make_the_card():
    class Unit(enum.Enum):
        C = "celsius"
        F = "fahrenheit"

    def forecast(
        city: Annotated[str, "City name, like Paris"],
        days: int = 3,
        unit: Unit = Unit.C,
        hours: list[int] | None = None,
        when: Literal["day", "night"] = "day",
        extra: dict[str, float] | None = None,
        *args,
        **kwargs,
    ) -> str:
        """Weather forecast for the next days in a city.

        Uses the national services.

        Args:
            city: Ignored: the Annotated description wins.
            days (int): How many days ahead,
                from 1 to 10.
            unit: Temperature unit.
            hours: Hours of the day to include.
            when: Day or night.
            extra: Extra weights.

        Returns:
            A text forecast.
        """

    tool = tool_from_function(forecast, namespace="weather")
    assert tool.description == "Weather forecast for the next days in a city."
    properties = tool.parameters["properties"]
    assert list(properties) == ["city", "days", "unit", "hours", "when", "extra"]  # *args, **kwargs left out
    assert properties["city"] == {"type": "string", "description": "City name, like Paris"}
    assert properties["days"] == {"type": "integer", "description": "How many days ahead, from 1 to 10.", "default": 3}
    assert properties["unit"] == {
        "type": "string",
        "enum": ["celsius", "fahrenheit"],
        "description": "Temperature unit.",
        "default": "celsius",
    }
    assert properties["hours"] == {
        "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}],
        "description": "Hours of the day to include.",
        "default": None,
    }
    assert properties["when"] == {
        "type": "string",
        "enum": ["day", "night"],
        "description": "Day or night.",
        "default": "day",
    }
    assert properties["extra"]["anyOf"][0] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert tool.parameters["required"] == ["city"]
    assert all(spec.get("description") for spec in properties.values())  # every parameter is described
    assert "days (integer): How many days ahead, from 1 to 10." in tool.text  # what is embedded and searched


def test_rest_and_numpy_docstrings():
    def convert(amount: float, from_currency: str, to_currency: str | None = None) -> str:
        """Convert an amount between currencies.

        :param amount: How much money.
        :param str from_currency: ISO code of the currency
            it is in.
        :param to_currency: ISO code to convert to.
        :returns: the converted amount
        :rtype: str
        """

    def tally(items: list[str], limit: int | None):
        """Count items.

        Parameters
        ----------
        items : list of str
            The items
            to count.
        limit : int, optional
            At most this many.

        Returns
        -------
        int
        """

    rest = tool_from_function(convert)
    assert rest.description == "Convert an amount between currencies."
    assert {n: p["description"] for n, p in rest.parameters["properties"].items()} == {
        "amount": "How much money.",
        "from_currency": "ISO code of the currency it is in.",
        "to_currency": "ISO code to convert to.",
    }
    assert rest.parameters["properties"]["to_currency"]["type"] == ["string", "null"]
    assert rest.parameters["properties"]["amount"]["type"] == "number"
    numpy_style = tool_from_function(tally)
    assert {n: p["description"] for n, p in numpy_style.parameters["properties"].items()} == {
        "items": "The items to count.",
        "limit": "At most this many.",
    }
    assert numpy_style.parameters["properties"]["items"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "The items to count.",
    }
    assert numpy_style.parameters["required"] == ["items", "limit"]


def test_docstring_edge_cases():
    assert parse_docstring("") == ("", {})
    assert parse_docstring("Args:\n    q: the query\n") == ("", {"q": "the query"})  # no summary
    summary, params = parse_docstring(
        "One line\ncontinued.\n\nNote that: this is text.\n\nArgs:\n    x:\n"
        "        on the next line\n    y: why\nNot part of the args."
    )
    assert summary == "One line continued." and params == {"x": "on the next line", "y": "why"}
    _, params = parse_docstring(":param x: a: b, with a colon\n:type x: int\n:param y:\n")
    assert params == {"x": "a: b, with a colon"}  # y has no description

    def bare(a, b: Any = "x", c: "Undefined" = 1):  # noqa: F821 (a hint that does not resolve)
        pass

    tool = tool_from_function(bare, name="bare_tool")
    assert tool.name == "bare_tool" and tool.description == ""
    assert tool.parameters["properties"] == {"a": {}, "b": {"default": "x"}, "c": {"default": 1}}


# -- where the agent's tools live ---------------------------------------------------------------------------


def get_stock_price(ticker: Annotated[str, "ticker symbol, like ACME"]) -> str:
    """Latest stock price of a company by its ticker symbol."""
    return f"{ticker}: 123.4"


def test_an_agent_without_a_bank_gets_a_private_temporary_one(tmp_path):
    agent = Agent()  # the default embedder; not loaded until a tool is embedded
    path = Path(agent.bank.path)
    assert agent.temporary and agent.bank.embedder_id == DEFAULT_EMBEDDER and path.exists()
    assert path.resolve() != default_bank_path().resolve()
    agent.close()
    assert not path.parent.exists()
    with Agent.in_memory(HashEmbedder(32), namespace="mine") as agent:
        agent.register(get_stock_price)
        assert agent.bank.get("get_stock_price").namespace == "mine" and agent.bank.dim == 32
        path = Path(agent.bank.path)
    assert not path.parent.exists()
    with pytest.raises(ValueError, match="embedder is for the temporary bank"):
        Agent(ToolBank.create(tmp_path / "b", HashEmbedder(8)), embedder="hash:8")


def test_register_keeps_the_same_name_in_another_namespace(bank):
    before = bank.get("get_weather")  # the user's, in namespace "weather"
    agent = Agent(bank)

    def get_weather(city: str) -> str:
        """My own weather."""
        return "rain"

    mine = agent.register(get_weather)  # the same name in the agent's namespace: another tool, beside it
    assert mine.qualified_name == "agent/get_weather" and bank.get("weather/get_weather") == before
    assert bank.get("agent/get_weather").description == "My own weather."
    with pytest.raises(BankError, match="'get_weather' is ambiguous.*'agent/get_weather', 'weather/get_weather'"):
        bank.get("get_weather")
    agent.register(get_stock_price)
    agent.register(get_stock_price)  # again, in its own namespace: replaced (here, unchanged)
    assert set(agent.executors) == {"agent/get_weather", "agent/get_stock_price"}


def test_the_agent_chooses_its_own_tools_and_other_namespaces_only_when_asked(bank, policy):
    seen = []
    agent = Agent(bank, policy, max_steps=1, mode="fast")
    agent.register(get_stock_price)
    bank.add(
        [Tool("old_tool", "Weather and temperature in a city, from an earlier session", {}, namespace="agent")]
    )  # in the agent's namespace, but no function here: left out
    script(policy, '{"ticker": "ACME"}}', "<answer>done</answer>")
    ((selection, observation),) = agent.run("weather in Paris now").steps
    assert selection.tool.name == "get_stock_price" and observation == "ACME: 123.4"

    agent = Agent(
        bank,
        policy,
        max_steps=1,
        mode="fast",
        namespaces=["weather"],
        execute=lambda tool, arguments: seen.append((tool.name, arguments)) or "22 C",
    )
    agent.register(get_stock_price)
    script(policy, '{"city": "Paris"}}', "<answer>22 C</answer>")
    trajectory = agent.run("weather in Paris now")
    ((selection, observation),) = trajectory.steps
    assert selection.tool.namespace == "weather" and observation == "22 C" and trajectory.answer == "22 C"
    assert seen == [(selection.tool.name, {"city": "Paris"})]
    assert {t.name for t, _ in selection.candidates} <= {"get_weather", "get_forecast", "get_stock_price"}

    agent = Agent(bank, policy, max_steps=1, mode="fast", namespaces="*")  # every tool; no execute
    agent.register(get_stock_price)
    script(policy, '{"path": "a.pdf"}}', "<think>")
    ((selection, observation),) = agent.run("convert my PDF document to text").steps
    assert selection.tool.name == "pdf_to_text"
    assert (
        observation == "error: no function calls tool 'files/pdf_to_text' (namespace 'files'); give the Agent execute="
    )
    assert "old_tool" not in {t.name for t, _ in selection.candidates}


def test_agent_settings_are_checked(bank):
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="max_steps"):
            Agent(bank, max_steps=bad)
    with pytest.raises(ValueError, match="unknown mode"):
        Agent(bank, mode="slow")
    with pytest.raises(ValueError, match="min_probability"):
        Agent(bank, min_probability=1.5)
    with pytest.raises(ValueError, match="namespaces must be names"):
        Agent(bank, namespaces=["weather", ""])
    with pytest.raises(ValueError, match="no tools in namespace 'agent'"):
        Agent(bank).run("anything")


# -- the run loop -------------------------------------------------------------------------------------------


@pytest.fixture
def shop(bank, policy):
    """An agent with two functions; `calls` records what ran."""
    calls = []

    def get_order(order_id: Annotated[str, "the order id, like A-553"]) -> dict:
        """Look up an order and its total."""
        calls.append(("get_order", order_id))
        return {"order_id": order_id, "total": 120.0, "currency": "USD"}

    def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
        """Convert an amount of money between currencies.

        Args:
            amount: How much.
            from_currency: ISO code, like USD.
            to_currency: ISO code, like EUR.
        """
        calls.append(("convert_currency", amount, from_currency, to_currency))
        if from_currency == to_currency:
            raise ValueError("nothing to convert")
        return f"{amount * 0.9:.2f} {to_currency}"

    agent = Agent(bank, policy, namespace="shop", max_steps=3)
    agent.register(get_order)
    agent.register(convert_currency)
    return agent, calls


def step_texts(selection):
    return selection.tool.name, selection.arguments


def test_a_two_step_task_ends_on_the_answer(shop, policy):
    agent, calls = shop
    script(
        policy,
        "an order's total",
        '{"order_id": "A-553"}}',
        "<think>",
        "currency conversion",
        '{"amount": 120.0, "from_currency": "USD", "to_currency": "EUR"}}',
        "<answer>A-553 costs 108.00 EUR</answer>",
    )
    trajectory = agent.run("Look up order A-553's total, then convert it to EUR")
    assert calls == [("get_order", "A-553"), ("convert_currency", 120.0, "USD", "EUR")]
    assert [step_texts(s) for s, _ in trajectory.steps] == [
        ("get_order", {"order_id": "A-553"}),
        ("convert_currency", {"amount": 120.0, "from_currency": "USD", "to_currency": "EUR"}),
    ]
    assert [o for _, o in trajectory.steps] == [
        '{"order_id": "A-553", "total": 120.0, "currency": "USD"}',
        "108.00 EUR",
    ]
    assert trajectory.answer == "A-553 costs 108.00 EUR" and trajectory.stop == "answer"
    assert [s.rationale for s, _ in trajectory.steps] == ["an order's total", "currency conversion"]
    # the second step read the first one: its call and observation are in the prompt
    second = policy.tokenizer.decode(policy.prompts_seen[3])
    assert "[shop/get_order] " in second  # the tool card and the call name the tool by its qualified name
    assert (
        '<tool_call>{"name": "shop/get_order", "arguments": {"order_id": "A-553"}}</tool_call><obs>{"order_id"'
        in second
    )


def test_a_thought_without_its_opening_tag_is_the_next_step(shop, policy):
    # The shipped policy writes the next thought at once (its prompts always supplied <think>).
    agent, calls = shop
    script(
        policy,
        "an order's total",
        '{"order_id": "A-553"}}',
        "convert the total</think>",
        "currency conversion",
        '{"amount": 120.0, "from_currency": "USD", "to_currency": "EUR"}}',
        "convert the total</think>",
    )
    trajectory = agent.run("Look up order A-553's total, then convert it to EUR")
    assert len(trajectory.steps) == 2 and trajectory.stop == "no_tools" and trajectory.answer == ""


def test_the_run_ends_on_the_step_budget(shop, policy):
    agent, calls = shop
    agent.max_steps = 1
    script(policy, "an order's total", '{"order_id": "A-553"}}', "<think>")
    trajectory = agent.run("Look up order A-553")
    assert len(trajectory.steps) == 1 and trajectory.stop == "max_steps" and trajectory.answer == ""
    assert policy.script == []  # nothing generated after the budget's last check


@pytest.mark.parametrize(
    "ending",
    [
        '<tool_call>{"name": "get_order"}</tool_call>',  # a call without a step
        "The total is 120 USD, which is",  # plain text, no tags
        "<|im_end|>",
        "<answer></answer>",  # an empty answer
    ],
)
def test_an_ending_that_is_neither_a_step_nor_an_answer_is_no_answer(shop, policy, ending):
    agent, calls = shop
    script(policy, "an order's total", '{"order_id": "A-553"}}', ending)
    trajectory = agent.run("Look up order A-553's total, then convert it to EUR")
    assert len(trajectory.steps) == 1 and trajectory.stop == "no_answer" and trajectory.answer == ""


@pytest.mark.parametrize(
    "ending, answer",
    [
        ("<answer>108 EUR</answer>", "108 EUR"),
        ("  \n<answer> 108 EUR\n</answer>", "108 EUR"),
        ("<answer>108 EUR<tool_call>{}</tool_call></answer>", "108 EUR"),  # cut at the first tag
        ("<answer>108 EUR<|im_end|>more", "108 EUR"),
        ("<answer>" + "long " * 8 + "answer</answer>", ("long " * 8 + "answer").strip()),  # past the first peek
    ],
)
def test_answers_lose_their_tags(shop, policy, ending, answer):
    agent, calls = shop
    script(policy, "an order's total", '{"order_id": "A-553"}}', ending)
    trajectory = agent.run("Look up order A-553's total")
    assert trajectory.answer == answer and trajectory.stop == "answer"
    assert "<" not in trajectory.answer


def test_invalid_arguments_and_raising_functions_are_observations(shop, policy):
    agent, calls = shop
    script(
        policy,
        "an order's total",
        '{"id": 5}}',
        '{"order_id": 7}}',
        "<think>",  # invalid twice
        "currency conversion",
        '{"amount": 1, "from_currency": "USD", "to_currency": "USD"}}',
        "<think>",
    )
    trajectory = agent.run("Look up order A-553's total, then convert it to EUR")
    (first, error), (second, raised) = trajectory.steps
    assert first.tool.name == "get_order" and first.arguments is None and first.argument_errors
    assert error.startswith("error: no valid arguments for 'shop/get_order': ")
    assert raised == "error: ValueError: nothing to convert"
    assert calls == [("convert_currency", 1, "USD", "USD")] and trajectory.stop == "no_tools"
    # an unknown argument passes the schema (the card has no additionalProperties) and the function refuses it
    script(policy, "an order's total", '{"order_id": "A-553", "verbose": true}}', "<answer>?</answer>")
    ((step, observation),) = agent.run("Look up order A-553").steps
    assert observation.startswith("error: TypeError:") and "verbose" in observation


def test_min_probability_ends_the_run_before_an_unsure_call(shop, policy):
    from autotool import select_tool

    agent, calls = shop
    agent.mode = "fast"
    p = select_tool(
        "Look up order A-553's total", agent.bank, policy, mode="fast", arguments=False, namespace="shop"
    ).probability
    assert p < 1
    agent.min_probability = (1 + p) / 2
    script(policy, '{"order_id": "A-553"}}')  # the arguments are written before the check
    trajectory = agent.run("Look up order A-553's total")
    assert trajectory.steps == [] and trajectory.stop == "unsure" and calls == []
    agent.min_probability = p
    script(policy, '{"order_id": "A-553"}}', "<answer>120 USD</answer>")
    trajectory = agent.run("Look up order A-553's total")
    assert len(trajectory.steps) == 1 and trajectory.stop == "answer" and calls == [("get_order", "A-553")]


def test_a_request_no_tool_fits_ends_the_run_before_any_call(shop, policy, monkeypatch):
    import autotool.select

    agent, calls = shop
    monkeypatch.setitem(autotool.select.MIN_COSINE, agent.bank.embedder_id, 1.01)  # nothing can reach it
    script(policy, "a joke")  # the rationale; no call may be written
    trajectory = agent.run("Tell me a joke about cats")
    assert trajectory.stop == "no_tool_fits" and trajectory.steps == [] and calls == []
    monkeypatch.setitem(autotool.select.MIN_COSINE, agent.bank.embedder_id, 0.0)
    script(policy, "an order's total", '{"order_id": "A-553"}}', "<answer>120 USD</answer>")
    trajectory = agent.run("Look up order A-553")
    assert trajectory.stop == "answer" and calls == [("get_order", "A-553")]
