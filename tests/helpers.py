"""Helpers shared by tests (importable as `helpers`; pytest puts tests/ on the path)."""

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import faiss
import pytest

from toolbank import Tool, ToolBank

ASSETS = Path(__file__).parent / "assets"
DATA = Path(__file__).parents[1] / "autotool" / "data"


def weather_tools() -> list[Tool]:
    obj = {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
    }
    return [
        Tool("get_weather", "Current weather and temperature for a city", obj, namespace="weather"),
        Tool(
            "get_forecast", "Weather forecast for the next days in a city", obj, namespace="weather", tags=("forecast",)
        ),
        Tool(
            "pdf_to_text",
            "Convert a PDF document to plain text",
            {"type": "object", "properties": {"path": {"type": "string", "description": "PDF file"}}},
            namespace="files",
        ),
        Tool("send_email", "Send an email message to a recipient", {}, namespace="mail"),
    ]


def index_ids(bank: ToolBank) -> set[int]:
    """Row ids held by the bank's FAISS index (IDMap2)."""
    index = faiss.downcast_index(bank.index().index)
    return set(faiss.vector_to_array(index.id_map).tolist())


def store_ids(bank: ToolBank) -> set[int]:
    return set(bank.store.tools())


# A tiny benchmark folder (tools.jsonl + queries.jsonl) for the eval tests.
TOOLS = [
    ("get_weather", "Current weather and temperature in a city"),
    ("get_forecast", "Weather forecast for the coming days"),
    ("pdf_to_text", "Convert a PDF document into plain text"),
    ("send_email", "Send an email message to someone"),
    ("translate", "Translate text into another language"),
    ("stock_price", "Latest stock price of a company"),
    ("news", "Top news headlines about a topic"),
    ("calculator", "Evaluate a math expression"),
    ("book_flight", "Book a flight between two airports"),
    ("convert_currency", "Convert an amount between currencies"),
]


def write_bench(folder, queries_per_tool=6):
    folder.mkdir()
    with open(folder / "tools.jsonl", "w") as f:
        for name, description in TOOLS:
            params = {"type": "object", "properties": {"x": {"type": "string", "description": "input"}}}
            f.write(json.dumps({"name": name, "description": description, "parameters": params}) + "\n")
    with open(folder / "queries.jsonl", "w") as f:
        n = 0
        for name, description in TOOLS:
            for i in range(queries_per_tool):
                f.write(
                    json.dumps(
                        {
                            "id": f"q{n}",
                            "query": f"{description.lower()} please, case {i}",
                            "gold_tools": [name],
                            "gold_args": {"calls": [{"tool": name, "args": {"x": str(i)}}]},
                        }
                    )
                    + "\n"
                )
                n += 1
        calls = [{"tool": "get_weather", "args": {"x": "Oslo"}}, {"tool": "send_email", "args": {"x": "me"}}]
        f.write(
            json.dumps(
                {
                    "id": "multi",
                    "query": "weather in Oslo, then email it to me",
                    "gold_tools": ["get_weather", "send_email"],
                    "gold_args": {"calls": calls},
                }
            )
            + "\n"
        )
    return folder


TINY_TOOLS = {
    "get_weather": "Current weather and temperature for a city.",
    "get_forecast": "Weather forecast for the next days in a city.",
    "pdf_to_text": "Convert a PDF document to plain text.",
    "send_email": "Send an email message to a recipient.",
    "translate": "Translate text from one language to another.",
    "calculator": "Evaluate arithmetic expressions and formulas.",
    "stock_price": "Latest stock price of a company.",
    "news_search": "Search recent news articles on a topic.",
}


def tiny_catalog(folder: Path) -> Path:
    """A benchmark folder of eight tools and six queries each (for the tiny test model's training runs)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.jsonl").write_text(
        "".join(json.dumps({"name": n, "description": d, "parameters": {}}) + "\n" for n, d in TINY_TOOLS.items())
    )
    queries = [
        {"id": f"{n}-{i}", "query": f"{d.lower()} please, case {i}", "gold_tools": [n], "gold_args": None}
        for n, d in TINY_TOOLS.items()
        for i in range(6)
    ]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return folder


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def http_server(argv: list[str], port: int, env: dict | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """Start `argv`, an MCP server told to listen over streamable HTTP on loopback `port`; wait (60 s at most)
    until it accepts connections, else fail the test with its stderr; yield (its /mcp URL, the process); stop it."""
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.2)
    else:
        process.kill()
        pytest.fail(f"the HTTP server did not start: {process.communicate()[1][-2000:]}")
    try:
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.terminate()
        process.wait(timeout=10)


# The fits' tests (training/fit_rationale.py, training/fit_later.py): a bank of 40 tools over a few words, requests
# that share them, and a tiny policy with a stand-in reranker.
FIT_WORDS = "weather forecast city rain convert pdf document email send calendar meeting invoice flight hotel".split()
FIT_QUERIES = [
    "weather forecast for my city",
    "convert this pdf document",
    "send an email",
    "book a flight and a hotel",
    "put a meeting in my calendar",
    "pay this invoice",
]


class ScoresByName:
    """A stand-in cross-encoder: a fixed score per tool name (0 for the rest)."""

    def __init__(self, scores: dict[str, float]):
        self.by_name = scores

    def scores(self, query, texts):
        import numpy as np

        return np.array([next((v for k, v in self.by_name.items() if t.startswith(k)), 0.0) for t in texts])


def word_bank(folder: Path) -> ToolBank:
    """40 tools `tool_00` .. `tool_39`, each six of FIT_WORDS and a word of its own, on a hash embedder."""
    import random

    from toolbank import HashEmbedder

    rng = random.Random(0)
    bank = ToolBank.create(folder, HashEmbedder(64))
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    bank.add([Tool(f"tool_{i:02d}", " ".join(rng.choices(FIT_WORDS, k=6) + [f"w{i}"]), schema) for i in range(40)])
    return bank


def tiny_policy(bank: ToolBank, tmp_path: Path, b: float, w_std: float, rerank: bool):
    """A tiny-llama policy on `bank`, saved to `tmp_path / "policy"` and loaded again: rationale weight b, lexical
    weight 0.3, W drawn with `w_std` (0: zero). With `rerank`, its manifest names a reranker (at c = 2 over the
    best 3) that a stand-in plays: tools 00-09 gain where they are among the best 3."""
    import torch

    from autotool import Policy
    from toolbank import STOCK_EMBEDDER

    torch.manual_seed(0)
    policy = Policy.create(bank, backbone=ASSETS / "tiny-llama")
    with torch.no_grad():
        policy.head.b.fill_(b)
        policy.head.lexical.fill_(0.3)
        if w_std:
            torch.nn.init.normal_(policy.head.W.weight, std=w_std)
    if rerank:
        folder = tmp_path / "reranker"
        folder.mkdir(exist_ok=True)
        (folder / "reranker.json").write_text(json.dumps({"base": STOCK_EMBEDDER, "max_length": 96}))
        for name in ("adapter_config.json", "adapter_model.safetensors"):  # read, never run: a stand-in scores
            (folder / name).write_text("{}")
        policy.info["rerank"] = {"reranker": str(folder), "top": 3, "weight": 2.0}
    policy.save(tmp_path / "policy")
    loaded = Policy.load(tmp_path / "policy", bank)
    if rerank:
        loaded._reranker = ScoresByName({"tool_0": 1.0})
    return loaded
