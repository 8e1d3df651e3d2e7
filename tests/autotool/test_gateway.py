"""MCP as a gateway: `toolbank import --from-mcp` records how to start the server, and `autotool serve
--call-through` calls an imported tool on its own server (a real subprocess: tests/toolbank/weather_mcp_server.py)."""

import json
import sys
from pathlib import Path

import anyio
from click.testing import CliRunner
from mcp import Client

from autotool.serve import build_server
from toolbank import ToolBank
from toolbank.cli import main

SERVER = Path(__file__).parents[1] / "toolbank" / "weather_mcp_server.py"


def test_an_imported_tool_is_called_on_its_server_through_one_connection(tmp_path):
    path, command = tmp_path / "bank", f"{sys.executable} {SERVER}"
    run = CliRunner()
    assert run.invoke(main, ["--bank", str(path), "init", "--embedder", "hash:64"]).exit_code == 0
    result = run.invoke(main, ["--bank", str(path), "import", "--from-mcp", command, "--env", "WEATHER_KEY"])
    assert result.exit_code == 0, result.output
    own = tmp_path / "own.json"
    own.write_text(json.dumps({"name": "my_tool", "description": "Mine, not a server's", "parameters": {}}))
    assert run.invoke(main, ["--bank", str(path), "add", str(own)]).exit_code == 0
    other = tmp_path / "other.json"  # the server's tool name in another namespace: another tool
    other.write_text(json.dumps({"name": "forecast", "description": "My forecast", "namespace": "mine"}))
    assert run.invoke(main, ["--bank", str(path), "add", str(other)]).exit_code == 0
    bank = ToolBank.load(path)
    assert bank.server("weather-station") == {"command": command, "env": ["WEATHER_KEY"]}
    assert bank.server(None) is None

    async def session():
        async with Client(build_server(bank)) as client:  # without --call-through: no call_tool
            assert "call_tool" not in {t.name for t in (await client.list_tools()).tools}
        async with Client(build_server(bank, call_through=True)) as client:
            arguments = {"city": "Oslo", "days": 2}
            result = await client.call_tool("call_tool", {"name": "weather-station/forecast", "arguments": arguments})
            assert not result.is_error, result.content  # the server is called with its own name, forecast
            answer = result.structured_content
            assert answer["content"][0]["text"] == "Oslo: sunny for 2 days" and not answer.get("isError")
            refused = await client.call_tool("call_tool", {"name": "my_tool"})
            assert refused.is_error and "was not imported from an MCP server" in refused.content[0].text
            unknown = await client.call_tool("call_tool", {"name": "nope"})
            assert unknown.is_error and "no tool named 'nope'" in unknown.content[0].text
            ambiguous = await client.call_tool("call_tool", {"name": "forecast"})
            assert ambiguous.is_error and "'mine/forecast', 'weather-station/forecast'" in ambiguous.content[0].text
            mine = await client.call_tool("call_tool", {"name": "mine/forecast"})
            assert mine.is_error and "tool 'mine/forecast' (namespace 'mine') was not imported" in mine.content[0].text

    anyio.run(session)
    result = run.invoke(main, ["--bank", str(path), "import", str(own), "--env", "X"])
    assert result.exit_code == 2 and "--env applies to --from-mcp" in result.output
