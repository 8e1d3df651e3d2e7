"""An MCP server over a tool bank: tool search (and the policy's choice) for any MCP-speaking agent.

    toolbank --bank PATH serve                                # stdio, read-only
    toolbank --bank PATH serve --transport http --port 8000   # streamable HTTP on 127.0.0.1:8000/mcp

Tools it exposes: `search_tools`, `select_tool`, `list_namespaces`, and `add_tool` when started with
`allow_write=True` (`--allow-write`). A failure comes back as an MCP tool error with the reason; the server
keeps running.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as MCPToolError

from toolbank.bank import ToolBank
from toolbank.search import MODES
from toolbank.tool import from_dict

INSTRUCTIONS = ("Find the right tool for a task among the tools of this bank. `search_tools` ranks tools for a "
                "request (hybrid: BM25 and embeddings); `select_tool` asks the autotool policy to choose one, "
                "say why and fill its arguments. Both return each tool's JSON Schema.")


def _tool_json(tool, score: float | None = None) -> dict[str, Any]:
    out = {"name": tool.name, "description": tool.description, "namespace": tool.namespace,
           "parameters": tool.parameters}
    if score is not None:
        out["score"] = score
    return out


def build_server(bank: ToolBank, *, allow_write: bool = False, policy_path: str | Path | None = None) -> MCPServer:
    """The MCP server for `bank`. Calls are served one at a time (the bank and policy are not thread-safe).

    Args:
        allow_write: Also expose `add_tool`.
        policy_path: Policy folder for `select_tool` (default: the default policy; loaded on first use).
    """
    server = MCPServer("autotool-toolbank", instructions=INSTRUCTIONS, log_level="WARNING")
    lock = threading.Lock()  # sync tools run in worker threads
    policy: list = []  # loaded on first use: it takes seconds

    def guarded(fn, *args, **kwargs):
        """Run `fn` under the lock; the library's input errors (BankError, ToolError, PolicyError: all
        ValueErrors; KeyError for an unknown name) become MCP tool errors with their reason."""
        with lock:
            try:
                return fn(*args, **kwargs)
            except (ValueError, KeyError) as e:
                raise MCPToolError(str(e.args[0]) if isinstance(e, KeyError) else str(e)) from None

    @server.tool()
    def search_tools(query: str, k: int = 5, mode: str = "hybrid", namespace: str | None = None) -> dict[str, Any]:
        """Rank the bank's tools for a request. mode: hybrid (default), dense or bm25.

        Returns {"tools": [{name, description, namespace, parameters (JSON Schema), score}, ...]}, best first.
        """
        if mode not in MODES:
            raise MCPToolError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        hits = guarded(bank.search, query, k=k, mode=mode, namespace=namespace)
        return {"tools": [_tool_json(h.tool, h.score) for h in hits]}

    @server.tool()
    def select_tool(query: str, k: int = 5, mode: str = "reason", arguments: bool = True,
                    namespace: str | None = None) -> dict[str, Any]:
        """Let the autotool policy choose the tool for a request, say why, and fill its arguments.

        mode: reason (writes a rationale first) or fast (no rationale). arguments=false skips filling them
        (then fast mode is one forward pass). On a CPU, reason mode with arguments takes seconds.
        Returns {tool, probability, rationale, arguments, candidates: [{name, probability}, ...]}.
        """
        from autotool.select import ArgumentError
        from autotool.select import select_tool as choose

        def run():
            if not policy:
                from autotool.policy import Policy
                from autotool.select import default_policy

                policy.append(Policy.load(policy_path, bank) if policy_path else default_policy(bank))
            try:
                selection, error = choose(query, bank=bank, policy=policy[0], k=k, mode=mode,
                                          arguments=arguments, namespace=namespace), None
            except ArgumentError as e:
                selection, error = e.selection, e
            out = {"tool": _tool_json(selection.tool), "probability": selection.probability,
                   "rationale": selection.rationale, "arguments": selection.arguments,
                   "candidates": [{"name": t.name, "probability": p} for t, p in selection.candidates]}
            if error is not None:
                out["argument_error"], out["raw_call"] = str(error), error.raw
            return out

        return guarded(run)

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


def serve(bank: ToolBank, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8000,
          allow_write: bool = False, policy_path: str | Path | None = None) -> None:
    """Run the server until interrupted; `transport` is `stdio` or `http` (streamable HTTP at /mcp)."""
    server = build_server(bank, allow_write=allow_write, policy_path=policy_path)
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        server.run("streamable-http", host=host, port=port)
    else:
        raise ValueError(f"unknown transport {transport!r}; expected stdio or http")
