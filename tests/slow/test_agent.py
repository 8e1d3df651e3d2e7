"""Slow: `Agent` runs multi-step tasks with Python functions against the shipped policy (SmolLM2-135M + LoRA)
on a bank with the default embedder (all-MiniLM-L6-v2 with the shipped fine-tuned adapter; the trajectories below
held on the stock model too, before it became the default). Run with `pytest -m slow tests/slow/test_agent.py -s`
to see the trajectories.

The shipped policy was trained on steps, never on answers (the benchmarks hold none, training/data.py), so it
does not write `<answer>`: after a step it writes the next thought (without the `<think>` the prompts always
supplied), and a run goes on until `max_steps` or until every tool was called. These tests check what the loop
guarantees on every run and, where the policy does finish the task, that it did.

Time: about 60 s for the three on the 2-core CPU when idle (the first includes loading the policy); 160 to
460 s measured while other jobs ran beside them.
"""

import time
from typing import Annotated

import pytest

from autotool import Agent
from autotool.backbone import SPECIAL_TOKENS
from autotool.select import default_policy
from toolbank import ToolBank

pytestmark = pytest.mark.slow

ORDERS = {"A-553": {"total": 120.0, "currency": "USD", "customer": "C-17"}}
EMAILS = {"C-17": "jo@example.com"}
RATES = {("USD", "EUR"): 0.9, ("EUR", "USD"): 1.11}


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """An agent with seven Python tools (three of them distractors) on a bank with the default embedder."""
    calls: list[tuple] = []

    def get_order(order_id: Annotated[str, "the order id, like A-553"]) -> dict:
        """Look up an order by its id: its total, currency and customer."""
        calls.append(("get_order", order_id))
        return {"order_id": order_id, **ORDERS[order_id]}

    def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
        """Convert an amount of money from one currency to another.

        Args:
            amount: How much money, e.g. 120.0.
            from_currency: ISO code of the currency it is in, e.g. USD.
            to_currency: ISO code of the currency to convert to, e.g. EUR.
        """
        calls.append(("convert_currency", amount, from_currency, to_currency))
        return f"{amount * RATES[(from_currency.upper(), to_currency.upper())]:.2f} {to_currency.upper()}"

    def get_customer_email(customer_id: Annotated[str, "the customer id, like C-17"]) -> str:
        """Find a customer's email address by their customer id."""
        calls.append(("get_customer_email", customer_id))
        return EMAILS[customer_id]

    def send_email(
        to: Annotated[str, "recipient email address"],
        subject: Annotated[str, "subject line"],
        body: Annotated[str, "message text"],
    ) -> str:
        """Send an email message to a recipient."""
        calls.append(("send_email", to, subject, body))
        return f"sent to {to}"

    def get_weather(city: Annotated[str, "city name"]) -> str:
        """Current weather and temperature for a city."""
        calls.append(("get_weather", city))
        return f"sunny, 21 C in {city}"

    def search_flights(
        origin: Annotated[str, "departure airport code"], destination: Annotated[str, "arrival airport code"]
    ) -> str:
        """Search flights between two airports."""
        calls.append(("search_flights", origin, destination))
        return "no flights found"

    def translate(text: Annotated[str, "text to translate"], language: Annotated[str, "target language"]) -> str:
        """Translate text into another language."""
        calls.append(("translate", text, language))
        return text

    bank = ToolBank.create(tmp_path_factory.mktemp("agent") / "bank")  # the default, fine-tuned embedder, offline
    agent = Agent(bank, namespace="shop")
    for fn in (get_order, convert_currency, get_customer_email, send_email, get_weather, search_flights, translate):
        agent.register(fn)
    agent.policy = default_policy(bank)  # the shipped policy: it reads both all-MiniLM-L6-v2 embeddings
    assert agent.policy.trained
    yield agent, calls
    bank.close()


def run(agent, calls, query, max_steps):
    calls.clear()
    agent.max_steps = max_steps
    started = time.perf_counter()
    trajectory = agent.run(query)
    print(f"\n{query!r}: {time.perf_counter() - started:.0f} s, stop={trajectory.stop}, answer={trajectory.answer!r}")
    for selection, observation in trajectory.steps:
        print(
            f"  {selection.tool.name} p={selection.probability:.3f} rationale={selection.rationale!r} "
            f"arguments={selection.arguments} -> {observation[:90]!r}"
        )
    check_guarantees(agent, trajectory, calls, max_steps)
    return trajectory


def check_guarantees(agent, trajectory, calls, max_steps):
    """What the loop guarantees whatever the policy writes."""
    assert 1 <= len(trajectory.steps) <= max_steps
    assert trajectory.stop in {"answer", "max_steps", "no_tools", "no_answer"}
    assert trajectory.stop != "max_steps" or len(trajectory.steps) == max_steps
    names = [selection.tool.qualified_name for selection, _ in trajectory.steps]  # executors are keyed by it
    assert set(names) <= set(agent.executors) and len(set(names)) == len(names)  # registered ones, each once
    assert all(selection.tool.namespace == "shop" for selection, _ in trajectory.steps)
    for selection, observation in trajectory.steps:
        assert isinstance(observation, str) and observation
        if selection.arguments is None:  # invalid twice: an error observation, the function not called
            assert selection.argument_errors and observation.startswith(
                f"error: no valid arguments for '{selection.tool.qualified_name}'"
            )
    # the functions ran exactly for the steps whose arguments were valid, in order
    assert [c[0] for c in calls] == [s.tool.name for s, _ in trajectory.steps if s.arguments is not None]
    assert not any(tag in trajectory.answer for tag in SPECIAL_TOKENS)


def test_two_step_task_looks_up_the_order_then_converts_its_total(shop):
    agent, calls = shop
    trajectory = run(agent, calls, "Get the total of order A-553 and convert it to EUR", max_steps=3)
    # Observed with the shipped policy: get_order(A-553), then convert_currency(120.0, USD, EUR) -> 108.00 EUR,
    # then a distractor (it writes no answer, so the run spends the budget).
    assert calls[:2] == [("get_order", "A-553"), ("convert_currency", 120.0, "USD", "EUR")]
    assert trajectory.steps[1][1] == "108.00 EUR"


def test_two_step_task_in_the_words_of_the_issue(shop):
    agent, calls = shop
    trajectory = run(agent, calls, "Look up order A-553's total, then convert it to EUR", max_steps=2)
    # Observed: the policy chooses get_order, then convert_currency, but writes arguments without the required
    # keys (`{}` for get_order), twice each, so both steps are recorded as argument errors and no function
    # runs; the run is not cut short by them.
    assert [s.tool.name for s, _ in trajectory.steps][0] == "get_order"


def test_three_step_task(shop):
    agent, calls = shop
    run(
        agent,
        calls,
        "Find the customer of order A-553, look up their email address, and email them that the order shipped",
        max_steps=4,
    )
    # Observed: get_order(A-553), get_customer_email(C-17), then send_email with arguments that are not JSON
    # (an error observation), then a distractor: two of the three steps done.
    assert calls[:2] == [("get_order", "A-553"), ("get_customer_email", "C-17")]
