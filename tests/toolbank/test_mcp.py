"""MCP: import the tools of a real server subprocess; serve a bank to the SDK's client over stdio and HTTP."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from helpers import ASSETS, free_port, weather_tools
from helpers import http_server as serving
from mcp import Client, StdioServerParameters

from toolbank import HashEmbedder, ToolBank
from toolbank.cli import main

SERVER = Path(__file__).with_name("weather_mcp_server.py")
WEATHER = {"current_weather", "forecast", "air_quality"}


def server_command(*flags: str) -> str:
    return " ".join([sys.executable, str(SERVER), *flags])


@pytest.fixture
def cli(tmp_path):
    runner = CliRunner()
    path = tmp_path / "bank"
    assert runner.invoke(main, ["--bank", str(path), "init", "--embedder", "hash:64"]).exit_code == 0

    def run(*args):
        return runner.invoke(main, ["--bank", str(path), *map(str, args)])

    def tools():
        return {t["name"]: t for t in json.loads(run("list", "--json").output)}

    run.tools = tools
    return run


def test_import_from_mcp_server(cli):
    result = cli("import", "--from-mcp", server_command())
    assert result.exit_code == 0, result.output
    tools = cli.tools()
    assert set(tools) == WEATHER
    assert {t["namespace"] for t in tools.values()} == {"weather-station"}  # the server's name
    forecast = tools["forecast"]
    assert forecast["description"] == "Weather forecast for the next days in a city."
    assert forecast["parameters"]["properties"]["days"]["type"] == "integer"
    assert forecast["parameters"]["required"] == ["city"]


def test_import_pages_through_tools_list(cli):
    result = cli("import", "--from-mcp", server_command("--page-size", "2"), "--namespace", "paged")
    assert result.exit_code == 0, result.output
    assert set(cli.tools()) == WEATHER  # two pages
    assert {t["namespace"] for t in cli.tools().values()} == {"paged"}


def test_reimport_updates_and_sync_removes_dropped_tools(cli):
    assert cli("import", "--from-mcp", server_command()).exit_code == 0
    result = cli("import", "--from-mcp", server_command("--drop", "forecast"))
    assert result.exit_code == 0, result.output
    assert set(cli.tools()) == WEATHER  # without --sync nothing is removed
    result = cli("import", "--from-mcp", server_command("--drop", "forecast"), "--sync")
    assert result.exit_code == 0, result.output
    assert "removed 1" in result.output
    assert set(cli.tools()) == WEATHER - {"forecast"}


def test_sync_leaves_other_namespaces_alone(cli, write_json):
    file = write_json("mine.json", [{"name": "forecast_mine", "description": "My own forecast", "parameters": {}}])
    assert cli("add", file).exit_code == 0
    assert (
        cli("import", "--from-mcp", server_command("--drop", "forecast", "--drop", "air_quality"), "--sync").exit_code
        == 0
    )
    assert set(cli.tools()) == {"current_weather", "forecast_mine"}


@pytest.mark.parametrize(
    "flags, timeout, message",
    [
        (["--crash"], 30, "cannot reach the forecast service"),  # the server's stderr is shown
        (["--hang"], 2, "no complete tools/list within 2 s"),
        (["--bad-schema"], 30, "tool 'broken'"),
    ],
)
def test_failing_server_leaves_the_bank_unchanged(cli, write_json, flags, timeout, message):
    tool = {"name": "forecast", "description": "From an earlier import", "inputSchema": {"type": "object"}}
    assert (
        cli("import", "--format", "mcp", "--namespace", "weather-station", write_json("t.json", [tool])).exit_code == 0
    )
    before = cli.tools()
    result = cli("import", "--from-mcp", server_command(*flags), "--sync", "--timeout", timeout)
    assert result.exit_code == 1
    assert message in result.output and "MCP server" in result.output
    assert cli.tools() == before


def test_import_errors_name_the_problem(cli, write_json):
    result = cli("import", "--from-mcp", "no-such-program --flag")
    assert result.exit_code == 1 and "command 'no-such-program' not found" in result.output
    result = cli("import", "--from-mcp", server_command(), "--sync", write_json("t.json", []))
    assert result.exit_code == 2 and "either FILES" in result.output


def test_import_keeps_the_same_name_in_another_namespace(cli, write_json):
    assert (
        cli("add", "--namespace", "mine", write_json("f.json", [{"name": "forecast", "description": "mine"}])).exit_code
        == 0
    )
    result = cli("import", "--from-mcp", server_command())
    assert result.exit_code == 0, result.output
    listed = {(t["namespace"], t["name"]): t for t in json.loads(cli("list", "--json").output)}
    assert set(listed) == {("mine", "forecast")} | {("weather-station", n) for n in WEATHER}
    assert listed["mine", "forecast"]["description"] == "mine"  # not taken over
    assert "weather-station/forecast\tweather-station\t" in cli("list").output


# -- serving ---------------------------------------------------------------------------------------
@pytest.fixture
def served_bank(tmp_path):
    bank = ToolBank.create(tmp_path / "bank", HashEmbedder(64))
    bank.add(weather_tools())
    yield bank
    bank.close()


def serve_argv(bank: ToolBank, *flags: str) -> list[str]:
    return [sys.executable, "-m", "toolbank", "--bank", str(bank.path), "serve", *flags]


def autotool_serve_argv(bank: ToolBank, *flags: str) -> list[str]:
    """`autotool serve`: the same server plus the policy's select_tool."""
    return [sys.executable, "-m", "autotool", "serve", "--bank", str(bank.path), *flags]


async def _result(client: Client, name: str, arguments: dict) -> dict:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def _check_session(client: Client, bank: ToolBank, writable: bool, selects: bool = False) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == (
        {"search_tools", "list_namespaces"}
        | ({"select_tool"} if selects else set())
        | ({"add_tool"} if writable else set())
    )
    assert "query" in listed["search_tools"].input_schema["properties"]

    for mode in ("hybrid", "dense", "bm25"):
        answer = await _result(client, "search_tools", {"query": "weather forecast for Paris", "k": 3, "mode": mode})
        expected = bank.search("weather forecast for Paris", k=3, mode=mode)
        assert [t["name"] for t in answer["tools"]] == [h.tool.qualified_name for h in expected]
        assert [t["score"] for t in answer["tools"]] == pytest.approx([h.score for h in expected])
        assert answer["tools"][0]["parameters"] == expected[0].tool.parameters
    answer = await _result(client, "search_tools", {"query": "weather", "k": 5, "namespace": "files"})
    assert [(t["name"], t["namespace"]) for t in answer["tools"]] == [("files/pdf_to_text", "files")]
    several = {"query": "weather", "k": 5, "mode": "dense", "namespace": ["files", "mail"]}
    answer = await _result(client, "search_tools", several)
    assert sorted(t["name"] for t in answer["tools"]) == ["files/pdf_to_text", "mail/send_email"]
    assert all(-1 <= t["cosine"] <= 1 for t in answer["tools"])
    answer = await _result(client, "search_tools", {"query": "weather", "k": 5, "tags": ["forecast"]})
    assert [t["name"] for t in answer["tools"]] == ["weather/get_forecast"]

    assert await _result(client, "list_namespaces", {}) == {
        "namespaces": [{"name": "files", "tools": 1}, {"name": "mail", "tools": 1}, {"name": "weather", "tools": 2}],
        "tools": 4,
    }

    # Bad calls come back as tool errors with the reason; the server keeps serving.
    for arguments, reason in [
        ({"query": "  "}, "the query is empty"),
        ({"query": "x", "mode": "fuzzy"}, "unknown mode"),
        ({"query": "x", "k": 0}, "k must be at least 1"),
    ]:
        result = await client.call_tool("search_tools", arguments)
        assert result.is_error and reason in result.content[0].text
    new_tool = {
        "name": "translate_text",
        "description": "Translate text into another language",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
    result = await client.call_tool("add_tool", {"tool": new_tool})
    if not writable:
        assert result.is_error and "add_tool" in result.content[0].text
        assert "translate_text" not in bank
        return
    assert not result.is_error, result.content
    assert result.structured_content["added"] == ["translate_text"]
    bad = await client.call_tool("add_tool", {"tool": {"name": "bad name!", "description": "x"}})
    assert bad.is_error and "'bad name!'" in bad.content[0].text
    again = await client.call_tool("add_tool", {"tool": new_tool | {"description": "Other"}})
    assert again.is_error and "already in the bank" in again.content[0].text
    answer = await _result(client, "search_tools", {"query": "translate this text", "k": 1, "mode": "bm25"})
    assert answer["tools"][0]["name"] == "translate_text"


def _stdio(argv: list[str]) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items()} | {"HF_HUB_OFFLINE": "1"}
    return StdioServerParameters(command=argv[0], args=argv[1:], env=env)


@pytest.mark.parametrize("selects", [False, True], ids=["toolbank-serve", "autotool-serve"])
@pytest.mark.parametrize("writable", [False, True], ids=["read-only", "allow-write"])
def test_serve_over_stdio(served_bank, writable, selects):
    async def session():
        flags = ["--allow-write"] if writable else []
        argv = (autotool_serve_argv if selects else serve_argv)(served_bank, *flags)
        async with Client(_stdio(argv), read_timeout_seconds=60) as client:
            await _check_session(client, served_bank, writable, selects)

    anyio.run(session)
    if writable:  # written through the server, seen by another process
        assert "translate_text" in ToolBank.load(served_bank.path, HashEmbedder(64))


@pytest.fixture
def http_server(served_bank):
    """Our server over streamable HTTP on a free loopback port; yields its URL."""
    port = free_port()
    with serving(serve_argv(served_bank, "--transport", "http", "--port", str(port)), port) as (url, _):
        yield url


def test_serve_over_http(http_server, served_bank):
    async def session():
        async with Client(http_server, read_timeout_seconds=60) as client:
            await _check_session(client, served_bank, writable=False)

    anyio.run(session)


@pytest.mark.slow  # the server loads torch and a (tiny) policy: 20 s
def test_select_tool_over_stdio(served_bank, tmp_path):
    from autotool import Policy

    Policy.create(served_bank, backbone=ASSETS / "tiny-llama").save(tmp_path / "policy")

    async def session():
        argv = autotool_serve_argv(served_bank, "--policy", str(tmp_path / "policy"))
        async with Client(_stdio(argv), read_timeout_seconds=120) as client:
            answer = await _result(
                client,
                "select_tool",
                {"query": "what is the weather in Oslo", "k": 3, "mode": "fast", "arguments": False},
            )
            expected = served_bank.search("what is the weather in Oslo", k=3, mode="dense")
            # An untrained policy is dense retrieval on the query.
            assert [c["name"] for c in answer["candidates"]] == [h.name for h in expected]  # qualified names
            assert answer["tool"]["name"] == expected[0].name
            assert 0 < answer["probability"] <= 1 and answer["rationale"] == ""
            assert answer["tool"]["parameters"] == expected[0].tool.parameters
            assert -1 <= answer["cosine"] <= 1
            nothing = await _result(
                client,
                "select_tool",
                {"query": "tell me a joke", "mode": "fast", "arguments": False, "min_cosine": 1.01},
            )
            assert nothing["tool"] is None and nothing["arguments"] is None and nothing["candidates"]
            result = await client.call_tool("select_tool", {"query": "", "mode": "fast"})
            assert result.is_error and "the query is empty" in result.content[0].text

    anyio.run(session)


@pytest.mark.slow  # 4,000 calls
def test_load_eight_clients_over_http(tmp_path):
    """8 concurrent clients x 500 `search_tools` calls on loopback: no errors, every answer right, bounded in
    time (latency figures: bench/bench_mcp.py)."""
    from toolbank import Tool

    bank = ToolBank.create(tmp_path / "bank", HashEmbedder(64))
    bank.add([Tool(f"tool_{i}", f"Tool number {i} handles task {i % 97} for area {i % 13}", {}) for i in range(10_000)])
    queries = [f"handle task {i} in area {i % 13}" for i in range(50)]
    expected = {q: [h.tool.name for h in bank.search(q, k=5)] for q in queries}
    port = free_port()
    process = subprocess.Popen(
        serve_argv(bank, "--transport", "http", "--port", str(port)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wrong, errors = [], []

    async def client(seed: int) -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=60) as c:
            for i in range(500):
                q = queries[(seed * 7 + i) % len(queries)]
                try:
                    result = await c.call_tool("search_tools", {"query": q, "k": 5})
                except Exception as e:  # counted, not raised
                    errors.append(repr(e))
                    continue
                if result.is_error:
                    errors.append(result.content[0].text)
                elif [t["name"] for t in result.structured_content["tools"]] != expected[q]:
                    wrong.append(q)

    async def run() -> None:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert process.poll() is None, process.communicate()[1][-2000:]
                await anyio.sleep(0.2)
        with anyio.fail_after(600):
            async with anyio.create_task_group() as group:
                for seed in range(8):
                    group.start_soon(client, seed)

    try:
        anyio.run(run)
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert errors == [] and wrong == []
