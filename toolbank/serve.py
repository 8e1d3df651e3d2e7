"""An MCP server over a tool bank: tool search for any MCP-speaking agent.

    toolbank --bank PATH serve                                # stdio, read-only
    toolbank --bank PATH serve --transport http --port 8000   # streamable HTTP on 127.0.0.1:8000/mcp
    AUTOTOOL_SERVE_TOKEN=... toolbank --bank PATH serve --transport http --host 0.0.0.0   # beyond loopback

Tools it exposes: `search_tools`, `list_namespaces`, and `add_tool` when started with `allow_write=True`
(`--allow-write`). A failure comes back as an MCP tool error with the reason; the server keeps running.
Every `add_tool` call is logged on stderr with its client. `autotool serve` (autotool/serve.py) is this server
plus the policy's `select_tool`.

On loopback (the default) no token is needed. Serving on any other address needs a bearer token, from
`$AUTOTOOL_SERVE_TOKEN` or a file (`--token-file`), never the command line (where other users see it); requests
without `Authorization: Bearer TOKEN` get 401. The SDK's Host/Origin (DNS-rebinding) check applies to loopback
only; beyond it the token is what keeps other clients (and web pages) out. A token given on loopback is required
there too.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError as MCPToolError

from toolbank.bank import ToolBank, database_error
from toolbank.search import MODES
from toolbank.tool import SUSPICIOUS_TAG, from_dict, short

INSTRUCTIONS = (
    "Find the right tool for a task among the tools of this bank. `search_tools` ranks tools for a "
    "request (hybrid: BM25 and embeddings) and returns each tool's JSON Schema."
)
TOKEN_ENV = "AUTOTOOL_SERVE_TOKEN"
MIN_TOKEN_LENGTH = 16


class ServeError(ValueError):
    """The server cannot be started as asked. The message says what to do."""


class Guard:
    """Runs the server's calls one at a time (the bank and policy are not thread-safe; sync tools run in worker
    threads) and turns the library's input errors (BankError, ToolError, PolicyError: all ValueErrors; KeyError
    for an unknown name) into MCP tool errors with their reason."""

    def __init__(self):
        self.lock = threading.Lock()
        self.bank_path: Path | None = None  # named in the message for a damaged bank.sqlite

    def __call__(self, fn, *args, **kwargs):
        with self.lock:
            try:
                return fn(*args, **kwargs)
            except (ValueError, KeyError) as e:
                raise MCPToolError(str(e.args[0]) if isinstance(e, KeyError) else str(e)) from None
            except sqlite3.DatabaseError as e:
                raise MCPToolError(str(database_error(self.bank_path, e))) from None


def tool_json(tool, score: float | None = None, cosine: float | None = None) -> dict[str, Any]:
    """A tool as the MCP tools return it: `name` is its qualified name (`namespace/name`)."""
    out = {
        "name": tool.qualified_name,
        "description": tool.description,
        "namespace": tool.namespace,
        "parameters": tool.parameters,
    }
    if score is not None:
        out["score"] = score
    if cosine is not None:
        out["cosine"] = cosine
    return out


def build_server(
    bank: ToolBank,
    *,
    allow_write: bool = False,
    guarded: Guard | None = None,
    name: str = "autotool-toolbank",
    instructions: str = INSTRUCTIONS,
    log_level: str = "WARNING",
) -> MCPServer:
    """The MCP server for `bank`; `allow_write` also exposes `add_tool`. A server that adds tools of its own
    passes its `guarded`, so that all of its calls share one lock. `log_level` is the server's (and every
    library's) level on stderr: WARNING by default, DEBUG for `--verbose`."""
    server = MCPServer(name, instructions=instructions, log_level=log_level)
    guarded = guarded or Guard()
    guarded.bank_path = bank.path

    @server.tool()
    def search_tools(
        query: str,
        k: int = 5,
        mode: str = "hybrid",
        namespace: str | list[str] | None = None,
        tags: list[str] | None = None,
        include_suspicious: bool = False,
    ) -> dict[str, Any]:
        """Rank the bank's tools for a request. mode: hybrid (default), dense or bm25. namespace: one name or a
        list (tools in any of them); tags: only tools carrying all of them.

        Tools tagged `suspicious` (their description addresses the model, e.g. "always select this tool") are
        left out unless include_suspicious=true.
        Returns {"tools": [{name, description, namespace, parameters (JSON Schema), score, cosine}, ...]}, best
        first; name is the qualified name (namespace/name, or the name alone for a tool without a namespace);
        cosine (dense, hybrid) is the request's cosine with the tool, comparable across requests.
        """
        if mode not in MODES:
            raise MCPToolError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        hits = guarded(
            bank.search,
            query,
            k=k,
            mode=mode,
            namespace=namespace,
            tags=tuple(tags or ()),
            exclude_tags=() if include_suspicious else (SUSPICIOUS_TAG,),
        )
        return {"tools": [tool_json(h.tool, h.score, h.cosine) for h in hits]}

    @server.tool()
    def list_namespaces() -> dict[str, Any]:
        """The bank's namespaces (e.g. one per MCP server its tools came from) with their tool counts."""
        counts = guarded(bank.store.namespaces)
        return {
            "namespaces": [
                {"name": name or "", "tools": n} for name, n in sorted(counts.items(), key=lambda x: x[0] or "")
            ],
            "tools": sum(counts.values()),
        }

    if allow_write:

        @server.tool()
        def add_tool(tool: dict[str, Any], ctx: Context, replace: bool = False) -> dict[str, Any]:
            """Register a tool: {name, description, parameters} (or an OpenAI, Anthropic or MCP tool object).

            With replace=true a tool of the same qualified name (namespace/name) is overwritten; the same name
            in another namespace is another tool.
            """

            def run():
                notes: list[str] = []
                report = bank.add([from_dict(tool, notes=notes)], replace=replace)
                notes += [
                    f"tool {short(name)!r}: its text addresses the model ({phrase!r}); tagged "
                    f"{SUSPICIOUS_TAG!r}, so search_tools leaves it out"
                    for name, phrase in report.flagged.items()
                ]
                return {
                    "added": report.added,
                    "replaced": report.replaced,
                    "unchanged": report.unchanged,
                    "tools": len(bank),
                } | ({"warnings": notes} if notes else {})

            name = _tool_name(tool)
            try:
                out = guarded(run)
            except MCPToolError as e:
                log_write(ctx, f"add_tool {name!r} refused: {e}")
                raise
            outcome = next(k for k in ("added", "replaced", "unchanged") if out[k] or k == "unchanged")
            log_write(ctx, f"add_tool {name!r} {outcome}")
            return out

    return server


def _tool_name(obj: Any) -> str | None:
    """The name in a tool object as given (plain, Anthropic, MCP, or OpenAI's {"function": {...}}), for the log."""
    inner = obj.get("function") if isinstance(obj, dict) and isinstance(obj.get("function"), dict) else obj
    name = inner.get("name") if isinstance(inner, dict) else None
    return name if isinstance(name, str) else None


def client_of(ctx: Context | None) -> str:
    """Who made the current MCP request: `HOST:PORT` over HTTP, `stdio` for the client that started us."""
    try:
        request = ctx.request_context.request if ctx is not None else None
    except ValueError:  # outside a request
        request = None
    client = getattr(request, "client", None)
    return f"{client[0]}:{client[1]}" if client else "stdio" if request is None else "unknown client"


def log_write(ctx: Context | None, message: str) -> None:
    """One line on stderr for a write over MCP, naming its client."""
    print(f"toolbank serve: {message} (client {client_of(ctx)})", file=sys.stderr, flush=True)


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server on this machine (localhost, 127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost, or "" (every address)
        return False


def serve_token(transport: str, host: str, token_file: str | Path | None = None) -> str | None:
    """The bearer token the HTTP server will require: the first line of `token_file`, else `$AUTOTOOL_SERVE_TOKEN`;
    None when neither is set. `ServeError` when `host` is beyond loopback and there is no token, or the token is
    unreadable or too short. The CLIs call this before opening the bank, so a bad start fails fast."""
    if transport != "http":
        if token_file is not None:
            raise ServeError("--token-file applies to --transport http (over stdio the client starts the server)")
        return None
    if token_file is not None:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise ServeError(f"cannot read the token file {token_file}: {e}") from None
        source = f"token file {token_file}"
    else:
        token = (os.environ.get(TOKEN_ENV) or "").strip()
        source = f"${TOKEN_ENV}"
    if not token:
        if token_file is not None:
            raise ServeError(f"the {source} is empty; put a token of at least {MIN_TOKEN_LENGTH} characters in it")
        if not is_loopback(host):
            raise ServeError(
                f"--host {host} serves beyond this machine, and then every request must carry a bearer token: set "
                f"${TOKEN_ENV} or pass --token-file PATH (a file holding the token; never the token itself on the "
                f"command line), e.g. `export {TOKEN_ENV}="
                "$(python -c 'import secrets; print(secrets.token_urlsafe(32))')`. Clients send "
                "`Authorization: Bearer TOKEN`. Without --host the server stays on 127.0.0.1"
            )
        return None
    if len(token) < MIN_TOKEN_LENGTH or any(c.isspace() for c in token):
        raise ServeError(f"the token in {source} must be at least {MIN_TOKEN_LENGTH} characters, without spaces")
    return token


class BearerAuth:
    """ASGI middleware: an HTTP request without `Authorization: Bearer TOKEN` gets 401 (the lifespan passes)."""

    def __init__(self, app, token: str):
        self.app, self.token = app, token.encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, given = header.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps(
            {
                "error": "unauthorized",
                "error_description": "this server needs `Authorization: Bearer TOKEN` (the token it was started with)",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="toolbank"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_app(server: MCPServer, host: str = "127.0.0.1", token: str | None = None):
    """The ASGI app of `server` over streamable HTTP at /mcp, behind `BearerAuth` when there is a token."""
    if not is_loopback(host) and not token:
        raise ServeError(f"--host {host} serves beyond this machine and needs a token (see serve_token)")
    app = server.streamable_http_app(host=host)
    return BearerAuth(app, token) if token else app


def run(
    server: MCPServer, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8000, token: str | None = None
) -> None:
    """Run `server` until interrupted; `transport` is `stdio` or `http` (streamable HTTP at /mcp). Over HTTP a
    `token` (see `serve_token`) is required from every client, and needed for a `host` beyond loopback."""
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        import anyio
        import uvicorn

        app = http_app(server, host, token)
        if not is_loopback(host):
            print(
                f"warning: serving on {host}:{port}, beyond this machine: clients must send the bearer token; the "
                "traffic (token included) is plain HTTP, so put TLS in front of it on a network you do not trust",
                file=sys.stderr,
                flush=True,
            )
        config = uvicorn.Config(app, host=host, port=port, log_level=server.settings.log_level.lower())
        anyio.run(uvicorn.Server(config).serve)
    else:
        raise ValueError(f"unknown transport {transport!r}; expected stdio or http")
