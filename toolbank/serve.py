"""An MCP server over a tool bank: tool search for any MCP-speaking agent.

    toolbank --bank PATH serve                                # stdio, read-only
    toolbank --bank PATH serve --transport http --port 8000   # streamable HTTP on 127.0.0.1:8000/mcp

Tools it exposes: `search_tools`, `list_namespaces`, and `add_tool` when started with `allow_write=True`
(`--allow-write`). A failure comes back as an MCP tool error with the reason; the server keeps running.
`autotool serve` (autotool/serve.py) is this server plus the policy's `select_tool`.
"""

from __future__ import annotations

import threading
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as MCPToolError

from toolbank.bank import ToolBank
from toolbank.search import MODES
from toolbank.tool import from_dict

INSTRUCTIONS = ("Find the right tool for a task among the tools of this bank. `search_tools` ranks tools for a "
                "request (hybrid: BM25 and embeddings) and returns each tool's JSON Schema.")


class Guard:
    """Runs the server's calls one at a time (the bank and policy are not thread-safe; sync tools run in worker
    threads) and turns the library's input errors (BankError, ToolError, PolicyError: all ValueErrors; KeyError
    for an unknown name) into MCP tool errors with their reason."""

    def __init__(self):
        self.lock = threading.Lock()

    def __call__(self, fn, *args, **kwargs):
        with self.lock:
            try:
                return fn(*args, **kwargs)
            except (ValueError, KeyError) as e:
                raise MCPToolError(str(e.args[0]) if isinstance(e, KeyError) else str(e)) from None


def tool_json(tool, score: float | None = None) -> dict[str, Any]:
    out = {"name": tool.name, "description": tool.description, "namespace": tool.namespace,
           "parameters": tool.parameters}
    if score is not None:
        out["score"] = score
    return out


def build_server(bank: ToolBank, *, allow_write: bool = False, guarded: Guard | None = None,
                 name: str = "autotool-toolbank", instructions: str = INSTRUCTIONS) -> MCPServer:
    """The MCP server for `bank`; `allow_write` also exposes `add_tool`. A server that adds tools of its own
    passes its `guarded`, so that all of its calls share one lock."""
    server = MCPServer(name, instructions=instructions, log_level="WARNING")
    guarded = guarded or Guard()

    @server.tool()
    def search_tools(query: str, k: int = 5, mode: str = "hybrid", namespace: str | None = None) -> dict[str, Any]:
        """Rank the bank's tools for a request. mode: hybrid (default), dense or bm25.

        Returns {"tools": [{name, description, namespace, parameters (JSON Schema), score}, ...]}, best first.
        """
        if mode not in MODES:
            raise MCPToolError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        hits = guarded(bank.search, query, k=k, mode=mode, namespace=namespace)
        return {"tools": [tool_json(h.tool, h.score) for h in hits]}

    @server.tool()
    def list_namespaces() -> dict[str, Any]:
        """The bank's namespaces (e.g. one per MCP server its tools came from) with their tool counts."""
        counts = guarded(bank.store.namespaces)
        return {"namespaces": [{"name": name or "", "tools": n} for name, n in sorted(counts.items(), key=lambda x: x[0] or "")],
                "tools": sum(counts.values())}

    if allow_write:
        @server.tool()
        def add_tool(tool: dict[str, Any], replace: bool = False) -> dict[str, Any]:
            """Register a tool: {name, description, parameters} (or an OpenAI, Anthropic or MCP tool object).

            With replace=true a tool of the same name is overwritten.
            """
            def run():
                report = bank.add([from_dict(tool)], replace=replace)
                return {"added": report.added, "replaced": report.replaced, "unchanged": report.unchanged,
                        "tools": len(bank)}

            return guarded(run)

    return server


def run(server: MCPServer, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run `server` until interrupted; `transport` is `stdio` or `http` (streamable HTTP at /mcp)."""
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        server.run("streamable-http", host=host, port=port)
    else:
        raise ValueError(f"unknown transport {transport!r}; expected stdio or http")
