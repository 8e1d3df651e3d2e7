"""The MCP server of `autotool serve`: the tool bank's search (toolbank/serve.py) plus the policy's choice.

    autotool serve --bank PATH                                # stdio, read-only
    autotool serve --bank PATH --transport http --port 8000   # streamable HTTP on 127.0.0.1:8000/mcp

Tools it exposes: `search_tools`, `select_tool`, `list_namespaces`, and `add_tool` with `allow_write=True`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as MCPToolError

from toolbank import ToolBank
from toolbank.serve import Guard, tool_json
from toolbank.serve import build_server as build_search_server

INSTRUCTIONS = (
    "Find the right tool for a task among the tools of this bank. `search_tools` ranks tools for a "
    "request (hybrid: BM25 and embeddings); `select_tool` asks the autotool policy to choose one, "
    "say why and fill its arguments. Both return each tool's JSON Schema."
)


def build_server(
    bank: ToolBank,
    *,
    allow_write: bool = False,
    policy_path: str | Path | None = None,
    policy=None,
    log_level: str = "WARNING",
    call_through: bool = False,
) -> MCPServer:
    """The MCP server for `bank`, with `select_tool` (policy: `policy`, a loaded `Policy` (`--preload`), else the
    one at `policy_path`, else the default policy, loaded on the first call, as it takes seconds). `log_level`:
    see `toolbank.serve.build_server`."""
    guarded = Guard()
    server = build_search_server(
        bank, allow_write=allow_write, guarded=guarded, name="autotool", instructions=INSTRUCTIONS, log_level=log_level
    )
    policy: list = [] if policy is None else [policy]

    @server.tool()
    def select_tool(
        query: str,
        k: int = 5,
        mode: str = "reason",
        arguments: bool = True,
        namespace: str | list[str] | None = None,
        tags: list[str] | None = None,
        min_cosine: float | None = None,
    ) -> dict[str, Any]:
        """Let the autotool policy choose the tool for a request, say why, and fill its arguments; or say that
        no tool fits.

        mode: reason (writes a rationale first) or fast (no rationale). arguments=false skips filling them
        (then fast mode runs at most one forward pass, none while the head ignores the hidden state). On a CPU,
        reason mode with arguments takes seconds. namespace: one name or a list; tags: only tools carrying all
        of them. min_cosine: below this cosine between the request and the
        best tool, no tool fits (default: the threshold fitted for the bank's embedder; 0: always choose).
        Returns {tool (null when no tool fits), probability, cosine, rationale, arguments,
        candidates: [{name, probability}, ...]}, plus argument_error and raw_call when no valid arguments
        were written. Names are qualified names (namespace/name, or the name alone without a namespace).
        """
        from autotool.policy import Policy
        from autotool.select import default_policy
        from autotool.select import select_tool as choose

        def run():
            if not policy:
                policy.append(Policy.load(policy_path, bank) if policy_path else default_policy(bank))
            selection = choose(
                query,
                bank=bank,
                policy=policy[0],
                k=k,
                mode=mode,
                arguments=arguments,
                namespace=namespace,
                tags=tuple(tags or ()),
                min_cosine=min_cosine,
            )
            out = {
                "tool": None if selection.tool is None else tool_json(selection.tool),
                "probability": selection.probability,
                "cosine": selection.cosine,
                "rationale": selection.rationale,
                "arguments": selection.arguments,
                "candidates": [{"name": t.qualified_name, "probability": p} for t, p in selection.candidates],
            }
            if selection.argument_errors:
                out["argument_error"], out["raw_call"] = "; ".join(selection.argument_errors), selection.raw_arguments
            return out

        return guarded(run)

    if call_through:

        @server.tool()
        def call_tool(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
            """Call a tool of this bank that was imported from an MCP server (`toolbank import --from-mcp`) on
            that server, started from the command recorded at import and stopped after the call. name: the
            tool's qualified name (namespace/name) as search_tools and select_tool return it; the server is
            called with the tool's own name. Returns the server's tools/call result: {content: [...], isError}.
            """
            from toolbank.mcp_import import call_server_tool

            def recorded_server():
                tool = bank.get(name)
                record = bank.server(tool.namespace)
                if record is None:
                    raise ValueError(
                        f"tool {tool.qualified_name!r} (namespace {tool.namespace!r}) was not imported from an MCP "
                        "server with `toolbank import --from-mcp`, so there is no server to call it on"
                    )
                return tool, record

            tool, record = guarded(recorded_server)
            try:  # outside the guard: a slow server does not hold up the bank's other calls
                return call_server_tool(record, tool.name, arguments or {})
            except ValueError as e:
                raise MCPToolError(str(e)) from None

    return server
