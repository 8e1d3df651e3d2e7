"""docs/recipes.md, run: every Python block that does not start with `# usage`, in order, in one namespace.
The OpenAI and Anthropic clients are stubs at the SDK seam that answer in those APIs' response shapes (no
network; the SDKs are not installed); the bank, `select_tools` and the policy (the tiny test model) are real."""

import copy
import inspect
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated

import pytest
import torch
from helpers import ASSETS

import autotool.select as select
from autotool import Policy, select_tools
from toolbank import HashEmbedder

RECIPES = Path(__file__).parents[2] / "docs" / "recipes.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks() -> list[str]:
    return BLOCK.findall(RECIPES.read_text())


def get_weather(city: Annotated[str, "City name"]) -> str:
    """Current weather and temperature for a city."""
    return f"sunny, 24 C in {city}"


def get_forecast(city: Annotated[str, "City name"], days: int = 3) -> str:
    """Weather forecast for the next days in a city: rain, wind and temperature."""
    return f"rain tomorrow in {city}"


def send_email(to: Annotated[str, "Recipient address"], subject: str, body: str) -> str:
    """Send an email message to a recipient."""
    return f"sent to {to}"


def convert_currency(amount: Annotated[float, "How much"], from_currency: str, to_currency: str) -> str:
    """Convert an amount of money between currencies."""
    return f"{amount * 0.9:.2f} {to_currency}"


FUNCTIONS = [get_weather, get_forecast, send_email, convert_currency]
QUESTION = "Will it rain in Paris tomorrow? The weather forecast, please"


def example_arguments(schema: dict) -> dict:
    """What a model would fill: a value of the right type for each required parameter."""
    values = {"string": "Paris", "integer": 1, "number": 2.5, "boolean": True}
    return {n: values.get(schema["properties"][n].get("type"), "x") for n in schema.get("required", [])}


def field(item, key):
    """A key of a dict or an attribute of an SDK object (the Anthropic SDK accepts both in `messages`)."""
    return item[key] if isinstance(item, dict) else getattr(item, key)


class FakeOpenAI:
    """`client.chat.completions.create(...)` as openai's returns it: a call of the first tool it was given,
    then, once a `tool` message answers the call, a text reply quoting the result."""

    def __init__(self):
        self.requests = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, *, model, messages, tools=None, **options):
        self.requests.append({"model": model, "messages": copy.deepcopy(messages), "tools": tools})
        for tool in tools:
            assert tool["type"] == "function" and set(tool["function"]) == {"name", "description", "parameters"}
        called = {}
        for message in messages:  # a tool message answers a call of the assistant message before it
            if message["role"] == "assistant":
                called = {c["id"]: c for c in message.get("tool_calls") or []}
            elif message["role"] == "tool":
                assert message["tool_call_id"] in called and isinstance(message["content"], str)
        if messages[-1]["role"] == "tool":
            message = SimpleNamespace(
                role="assistant", content=f"The tool said: {messages[-1]['content']}", tool_calls=None
            )
            return SimpleNamespace(choices=[SimpleNamespace(index=0, message=message, finish_reason="stop")])
        function = tools[0]["function"]
        call = SimpleNamespace(
            id="call_0",
            type="function",
            function=SimpleNamespace(
                name=function["name"], arguments=json.dumps(example_arguments(function["parameters"]))
            ),
        )
        message = SimpleNamespace(role="assistant", content=None, tool_calls=[call])
        return SimpleNamespace(choices=[SimpleNamespace(index=0, message=message, finish_reason="tool_calls")])


class FakeAnthropic:
    """`client.messages.create(...)` as anthropic's returns it: a `tool_use` block for the first tool it was
    given, then, once a `tool_result` answers it, a text reply quoting the result."""

    def __init__(self):
        self.requests = []
        self.messages = SimpleNamespace(create=self.create)

    def create(self, *, model, max_tokens, messages, tools=None, **options):
        self.requests.append({"model": model, "messages": list(messages), "tools": tools})
        for tool in tools:
            assert set(tool) == {"name", "description", "input_schema"}
        assert [m["role"] for m in messages] == ["user", "assistant"] * (len(messages) // 2) + ["user"]
        last = messages[-1]["content"]
        if isinstance(last, list):  # tool results: each answers a tool_use of the assistant turn before
            asked = {field(b, "id") for b in messages[-2]["content"] if field(b, "type") == "tool_use"}
            assert {r["tool_use_id"] for r in last} == asked and all(r["type"] == "tool_result" for r in last)
            text = SimpleNamespace(type="text", text=f"The tool said: {last[0]['content']}")
            return SimpleNamespace(role="assistant", stop_reason="end_turn", content=[text])
        tool = tools[0]
        return SimpleNamespace(
            role="assistant",
            stop_reason="tool_use",
            content=[
                SimpleNamespace(type="text", text="Let me look that up."),
                SimpleNamespace(
                    type="tool_use", id="toolu_0", name=tool["name"], input=example_arguments(tool["input_schema"])
                ),
            ],
        )


@pytest.fixture
def recipes(tmp_path, monkeypatch):
    """The page's code, run; `bank` (and the default policy for it, the tiny model) set up as the page's
    first block expects."""
    namespace: dict = {}
    code = [b for b in blocks() if not b.startswith("# usage")]
    exec(code[1], namespace)  # tools_bank and call_tool, which build the bank the first block reads
    bank, functions = namespace["tools_bank"](tmp_path / "bank", FUNCTIONS, HashEmbedder(64))
    torch.manual_seed(0)
    policy = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    monkeypatch.setitem(select._default, f"{bank.embedder_id}|{bank.dim}", policy)  # default_policy(bank)
    namespace["bank"] = bank
    for block in code:
        exec(block, namespace)
    yield SimpleNamespace(ns=namespace, bank=bank, functions=functions, policy=policy)
    bank.close()


def test_the_page_has_the_three_recipes_and_their_usage():
    text = "\n".join(blocks())
    for name in (
        "def run_openai",
        "def run_anthropic",
        "def make_retrieve_tools",
        "client.chat.completions.create",
        "client.messages.create",
        "from openai import OpenAI",
        "import anthropic",
        "retrieve_tools_function=make_retrieve_tools(bank)",
    ):
        assert name in text, name
    assert "tests/autotool/test_recipes.py" in RECIPES.read_text()


def test_the_first_block_runs(recipes):
    top = recipes.ns["top"]
    assert top.format == "openai" and len(top) == 4 and top.names == [t["function"]["name"] for t in top.tools]


def test_openai_loop(recipes):
    client = FakeOpenAI()
    answer = recipes.ns["run_openai"](
        client, "gpt-test", recipes.bank, recipes.functions, QUESTION, k=3, policy=recipes.policy
    )
    top = select_tools(QUESTION, k=3, format="openai", bank=recipes.bank, policy=recipes.policy)
    first, second = client.requests
    assert first["tools"] == second["tools"] == top.tools and first["model"] == "gpt-test"
    name = top.names[0]
    expected = recipes.functions[name](**example_arguments(recipes.bank.get(name).parameters))
    assert answer == f"The tool said: {expected}"
    assistant, tool = second["messages"][1:]
    assert assistant["tool_calls"][0]["function"]["name"] == name and tool["content"] == expected


def test_anthropic_loop(recipes):
    client = FakeAnthropic()
    answer = recipes.ns["run_anthropic"](
        client, "claude-test", recipes.bank, recipes.functions, QUESTION, k=3, policy=recipes.policy
    )
    top = select_tools(QUESTION, k=3, format="anthropic", bank=recipes.bank, policy=recipes.policy)
    first, second = client.requests
    assert first["tools"] == top.tools and all("input_schema" in t for t in top.tools)
    name = top.names[0]
    expected = recipes.functions[name](**example_arguments(recipes.bank.get(name).parameters))
    assert answer == f"The tool said: {expected}"
    assert second["messages"][2]["content"][0]["content"] == expected


def test_a_tool_that_fails_is_reported_to_the_model(recipes):
    assert recipes.ns["call_tool"](recipes.functions, "get_weather", {"town": "Paris"}).startswith("error: TypeError")


def test_langgraph_bigtool_retrieval_function(recipes):
    retrieve_tools = recipes.ns["make_retrieve_tools"](recipes.bank, k=2, policy=recipes.policy)
    # langgraph-bigtool makes it a StructuredTool: the model fills `query`; the docstring is its description
    (param,) = inspect.signature(retrieve_tools).parameters.values()
    assert (
        param.name == "query"
        and param.annotation is str
        and inspect.signature(retrieve_tools).return_annotation == list[str]
    )
    assert inspect.getdoc(retrieve_tools)
    ids = retrieve_tools("weather forecast for Paris")
    registry = dict(recipes.functions)  # tool ids -> tools, keyed by the bank's names
    assert len(ids) == 2 and all(i in registry for i in ids)
    assert ids == select_tools("weather forecast for Paris", k=2, bank=recipes.bank, policy=recipes.policy).names
