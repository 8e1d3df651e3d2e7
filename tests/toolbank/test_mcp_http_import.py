"""Import from, and call through to, an MCP server reached by its URL (streamable HTTP), a real subprocess."""

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import free_port, http_server

from toolbank import ToolBank
from toolbank.cli import main
from toolbank.mcp_import import MCPImportError, call_server_tool, list_server_tools

SERVER = Path(__file__).with_name("weather_mcp_server.py")


@pytest.fixture(scope="module")
def weather_url():
    port = free_port()
    with http_server([sys.executable, str(SERVER), "--http", str(port)], port) as (url, _):
        yield url


def test_list_tools_of_a_server_by_its_url(weather_url):
    name, tools = list_server_tools(weather_url, timeout=30)
    assert name == "weather-station"
    assert {t["name"] for t in tools} == {"current_weather", "forecast", "air_quality"}


def test_import_by_url_records_it_and_calls_through(weather_url, tmp_path):
    runner = CliRunner()
    bank = tmp_path / "bank"
    assert runner.invoke(main, ["--bank", str(bank), "init", "--embedder", "hash:64"]).exit_code == 0
    result = runner.invoke(main, ["--bank", str(bank), "import", "--from-mcp", weather_url])
    assert result.exit_code == 0, result.output
    listed = json.loads(runner.invoke(main, ["--bank", str(bank), "list", "--json"]).output)
    assert {t["namespace"] for t in listed} == {"weather-station"} and len(listed) == 3
    with ToolBank.load(bank) as loaded:
        server = loaded.server("weather-station")
    assert server["command"] == weather_url
    answer = call_server_tool(server, "forecast", {"city": "Paris", "days": 2}, timeout=30)
    assert answer["content"][0]["text"] == "Paris: sunny for 2 days" and not answer.get("isError")


def test_a_url_nobody_answers_is_a_clear_error():
    with pytest.raises(MCPImportError, match="MCP server `http://127.0.0.1:"):
        list_server_tools(f"http://127.0.0.1:{free_port()}/mcp", timeout=5)
