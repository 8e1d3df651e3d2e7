"""Read the tools of an MCP server: start it over stdio (or connect to its URL), page through `tools/list`, stop it.

    name, tools = list_server_tools("python my_server.py", timeout=30)
    name, tools = list_server_tools("http://127.0.0.1:8000/mcp")    # a running server, streamable HTTP

The CLI (`toolbank import --from-mcp "COMMAND ARGS..."`) turns the result into bank tools under a namespace
named after the server.
"""

from __future__ import annotations

import re
import shlex
import shutil
import tempfile
from typing import Any

from toolbank.tool import ToolError

MAX_PAGES = 1000


class MCPImportError(ToolError):
    """The server could not be started, did not answer in time, or answered with something else than tools."""


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups: anyio task groups wrap what went wrong."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for e in error.exceptions for leaf in _leaves(e)]
    return [error]


def _failure(error: BaseException, timed_out: str) -> str:
    """Why a server exchange failed: `timed_out` when it timed out, else the (first three) errors inside."""
    leaves = _leaves(error)
    if any(isinstance(leaf, TimeoutError) for leaf in leaves):
        return timed_out
    return "; ".join(f"{type(leaf).__name__}: {leaf}".rstrip(": ") for leaf in leaves[:3])


def is_url(command: str) -> bool:
    """Whether `command` names a running server by its URL (streamable HTTP) rather than a command line."""
    return command.startswith(("http://", "https://"))


def _transport(command: str, env: dict[str, str] | None = None, errlog=None):
    """What `mcp.Client` connects through: the URL itself, or the command line started over stdio."""
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    if is_url(command):
        return command
    argv = shlex.split(command)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    return stdio_client(params, errlog=errlog) if errlog is not None else stdio_client(params)


def _check_command(command: str) -> None:
    argv = shlex.split(command) if not is_url(command) else [command]
    if not argv:
        raise MCPImportError("the command is empty; give the command line that starts the MCP server, or its URL")
    if not is_url(command) and shutil.which(argv[0]) is None:
        raise MCPImportError(f"command {argv[0]!r} not found", file=f"MCP server `{command}`")


async def _list_tools(command: str, timeout: float, errlog) -> tuple[str | None, list[dict[str, Any]]]:
    import anyio
    from mcp import Client

    with anyio.fail_after(timeout):
        async with Client(_transport(command, errlog=errlog), read_timeout_seconds=timeout, cache=None) as client:
            name = client.server_info.name if client.server_info else None
            tools, cursor, cursors = [], None, set()
            for _ in range(MAX_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    return name, tools
                if cursor in cursors:
                    raise MCPImportError(f"tools/list repeats the cursor {cursor!r}: the listing never ends")
                cursors.add(cursor)
            raise MCPImportError(f"tools/list has more than {MAX_PAGES} pages")


def list_server_tools(command: str, timeout: float = 30.0) -> tuple[str | None, list[dict[str, Any]]]:
    """Start the MCP server `command` (a shell-style command line), read all its tools, stop it; or, when
    `command` is an http(s) URL, connect to that running server over streamable HTTP and read them.

    Returns:
        The server's name (from its initialize answer; None when it gives none) and its tools as MCP
        tool objects (`{"name", "description", "inputSchema", ...}`), in the server's order.

    Raises:
        MCPImportError: The command is empty or not found, the server exits or fails, or it takes longer
            than `timeout` seconds in all; the message ends with the last lines the server wrote to stderr.
    """
    import anyio

    source = f"MCP server `{command}`"
    _check_command(command)
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            return anyio.run(_list_tools, command, timeout, errlog)
        except MCPImportError as e:
            raise MCPImportError(e.reason, file=source) from None
        except BaseException as e:  # anything the server or transport did wrong is reported
            if isinstance(e, KeyboardInterrupt):
                raise
            reason = _failure(e, f"no complete tools/list within {timeout:g} s")
            errlog.seek(0)
            tail = errlog.read()[-1500:].strip()
            raise MCPImportError(
                reason + (f"\n--- its stderr (last lines) ---\n{tail}" if tail else ""), file=source
            ) from None


async def _call_tool(command: str, env: dict[str, str] | None, name: str, arguments: dict, timeout: float):
    import anyio
    from mcp import Client

    with anyio.fail_after(timeout):
        async with Client(_transport(command, env), read_timeout_seconds=timeout, cache=None) as client:
            result = await client.call_tool(name, arguments)
            return result.model_dump(by_alias=True, exclude_none=True, mode="json")


def call_server_tool(server: dict, name: str, arguments: dict, timeout: float = 60.0) -> dict[str, Any]:
    """Start the recorded MCP server (`ToolBank.server`: its command, or URL, and the names of the environment
    variables it gets), call its tool `name` with `arguments`, stop it; the `tools/call` result
    (`{"content": [...], "isError": ...}`). `MCPImportError` when the server cannot be started or answer."""
    import os

    import anyio

    _check_command(server["command"])
    env = None
    if server.get("env"):
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", *server["env"])}
    try:
        return anyio.run(_call_tool, server["command"], env, name, arguments, timeout)
    except BaseException as e:  # reported with the server's command
        if isinstance(e, KeyboardInterrupt):
            raise
        reason = _failure(e, f"no answer within {timeout:g} s")
        raise MCPImportError(f"calling {name!r}: {reason}", file=f"MCP server `{server['command']}`") from None


def namespace_for(server_name: str | None, command: str) -> str:
    """A valid namespace from the server's name, else from the command's program name (a URL's host)."""
    if is_url(command):
        from urllib.parse import urlsplit

        raw = server_name or urlsplit(command).hostname or "mcp"
    else:
        raw = server_name or shlex.split(command)[0].rsplit("/", 1)[-1]
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw).strip("-.")[:64]
    return cleaned or "mcp"
