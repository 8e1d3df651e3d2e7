"""A small MCP server for the import tests, run as a subprocess over stdio.

    python weather_mcp_server.py [--drop NAME] [--page-size N] [--hang] [--crash] [--bad-schema] [--http PORT]

Default: an SDK `MCPServer` (FastMCP in mcp 1.x) with three weather tools. `--page-size N` serves the same
tools from a low-level `Server` whose `tools/list` is paginated, N tools a page. `--http PORT` serves the
default tools over streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio.
"""

import argparse
import sys
import time

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

parser = argparse.ArgumentParser()
parser.add_argument("--drop", action="append", default=[])
parser.add_argument("--page-size", type=int, default=0)
parser.add_argument("--hang", action="store_true", help="never answer")
parser.add_argument("--crash", action="store_true", help="exit at once with an error")
parser.add_argument("--bad-schema", action="store_true", help="list a tool whose inputSchema is not a JSON Schema")
parser.add_argument("--http", type=int, default=0, metavar="PORT", help="streamable HTTP on this loopback port")
args = parser.parse_args()

if args.crash:
    print("weather server: cannot reach the forecast service", file=sys.stderr)
    sys.exit(3)
if args.hang:
    time.sleep(600)

server = MCPServer("weather-station")


def current_weather(city: str, units: str = "metric") -> str:
    """Current temperature, wind and sky in a city."""
    return f"{city}: 21 degrees"


def forecast(city: str, days: int = 3) -> str:
    """Weather forecast for the next days in a city."""
    return f"{city}: sunny for {days} days"


def air_quality(city: str) -> str:
    """Air quality index and pollutant levels in a city."""
    return f"{city}: AQI 42"


for fn in (current_weather, forecast, air_quality):
    if fn.__name__ not in args.drop:
        server.add_tool(fn)


async def paginated() -> None:
    tools = await server.list_tools()
    if args.bad_schema:
        tools.append(
            types.Tool(
                name="broken",
                description="A tool with a broken schema.",
                input_schema={"type": "object", "properties": {"x": {"type": "nonsense"}}},
            )
        )

    async def list_tools(ctx, params):
        start = int(params.cursor) if params and params.cursor else 0
        end = start + args.page_size
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)

    low = Server("weather-station", on_list_tools=list_tools)
    async with stdio_server() as (read, write):
        await low.run(read, write, low.create_initialization_options())


if args.http:
    import uvicorn

    uvicorn.run(server.streamable_http_app(host="127.0.0.1"), host="127.0.0.1", port=args.http, log_level="warning")
elif args.page_size or args.bad_schema:
    args.page_size = args.page_size or 100
    anyio.run(paginated)
else:
    server.run("stdio")
