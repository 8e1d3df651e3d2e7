"""Serving beyond loopback: a bearer token (from $AUTOTOOL_SERVE_TOKEN or --token-file, never argv) is required,
requests without it get 401, and writes over MCP are logged with their client."""

import json
import os
import sys
import urllib.error
import urllib.request

import anyio
import pytest
from click.testing import CliRunner
from helpers import free_port, http_server, weather_tools
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from autotool.cli import main as autotool_main
from toolbank import HashEmbedder, ToolBank
from toolbank.cli import main as toolbank_main
from toolbank.serve import TOKEN_ENV, BearerAuth, build_server, http_app, is_loopback, serve_token

TOKEN = "s3cret-token-for-the-tests-0123456789"


@pytest.fixture
def served_bank(tmp_path):
    bank = ToolBank.create(tmp_path / "bank", HashEmbedder(64))
    bank.add(weather_tools())
    yield bank
    bank.close()


CLIS = {
    "toolbank": lambda bank, *flags: (toolbank_main, ["--bank", str(bank.path), "serve", *flags]),
    "autotool": lambda bank, *flags: (autotool_main, ["serve", "--bank", str(bank.path), *flags]),
}


@pytest.mark.parametrize("cli", CLIS)
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "myhost.example"])
def test_beyond_loopback_without_a_token_is_refused(served_bank, monkeypatch, cli, host):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    main, argv = CLIS[cli](served_bank, "--transport", "http", "--host", host, "--allow-write")
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert f"--host {host} serves beyond this machine" in result.output
    assert TOKEN_ENV in result.output and "--token-file PATH" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("cli", CLIS)
def test_bad_token_files_are_refused(served_bank, tmp_path, monkeypatch, cli):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "short").write_text("abc\n")
    for file, words in [
        (tmp_path / "empty", "is empty"),
        (tmp_path / "short", "at least 16 characters"),
        (tmp_path / "missing", "cannot read the token file"),
    ]:
        main, argv = CLIS[cli](served_bank, "--transport", "http", "--host", "0.0.0.0", "--token-file", str(file))
        result = CliRunner().invoke(main, argv)
        assert result.exit_code == 1 and words in result.output, result.output
    main, argv = CLIS[cli](served_bank, "--token-file", str(tmp_path / "short"))  # stdio
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 1 and "--token-file applies to --transport http" in result.output


@pytest.mark.parametrize("cli", CLIS)
@pytest.mark.parametrize("source", ["env", "file"])
def test_beyond_loopback_with_a_token_warns_and_serves_behind_the_token(
    served_bank, tmp_path, monkeypatch, cli, source
):
    """Up to the bind (which is stubbed: tests do not listen on 0.0.0.0)."""
    import uvicorn

    served = []

    async def serve(self, sockets=None):
        served.append(self.config)

    monkeypatch.setattr(uvicorn.Server, "serve", serve)
    flags = ["--transport", "http", "--host", "0.0.0.0", "--port", "8123"]
    if source == "env":
        monkeypatch.setenv(TOKEN_ENV, TOKEN)
    else:
        monkeypatch.delenv(TOKEN_ENV, raising=False)
        (tmp_path / "token").write_text(TOKEN + "\n")
        flags += ["--token-file", str(tmp_path / "token")]
    main, argv = CLIS[cli](served_bank, *flags)
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert "warning: serving on 0.0.0.0:8123, beyond this machine" in result.output
    (config,) = served
    assert (config.host, config.port) == ("0.0.0.0", 8123)
    assert isinstance(config.app, BearerAuth) and config.app.token == TOKEN.encode()


def test_loopback_needs_no_token(monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert is_loopback(host) and serve_token("http", host) is None
    for host in ("0.0.0.0", "::", "", "10.0.0.1", "example.com"):
        assert not is_loopback(host)


async def _asgi(app, headers: list[tuple[bytes, bytes]]) -> tuple[int, dict, bytes]:
    """One POST /mcp through the ASGI app; (status, headers, body)."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"10.0.0.5:8000"), (b"content-type", b"application/json")] + headers,
        "client": ("10.0.0.9", 5555),
        "server": ("10.0.0.5", 8000),
    }
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return (
        start["status"],
        dict(start["headers"]),
        b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"),
    )


def test_bearer_middleware_in_process(served_bank):
    reached = []

    async def inner(scope, receive, send):
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    app = BearerAuth(inner, TOKEN)
    for value in (None, b"Bearer wrong", TOKEN.encode(), b"Basic " + TOKEN.encode(), b"Bearer " + TOKEN.encode()[:-1]):
        headers = [] if value is None else [(b"authorization", value)]
        status, out_headers, body = anyio.run(_asgi, app, headers)
        assert status == 401 and out_headers[b"www-authenticate"].startswith(b"Bearer")
        assert json.loads(body)["error"] == "unauthorized"
    assert reached == []
    assert anyio.run(_asgi, app, [(b"authorization", b"Bearer " + TOKEN.encode())])[0] == 200
    assert anyio.run(_asgi, app, [(b"authorization", b"bearer " + TOKEN.encode())])[0] == 200
    assert reached == ["/mcp", "/mcp"]
    # The real app for a host beyond loopback is wrapped; without a token it is not built at all.
    assert isinstance(http_app(build_server(served_bank), "0.0.0.0", TOKEN), BearerAuth)
    with pytest.raises(ValueError, match="beyond this machine"):
        http_app(build_server(served_bank), "0.0.0.0", None)


@pytest.fixture
def token_server(served_bank):
    """`toolbank serve --transport http --allow-write` on loopback with $AUTOTOOL_SERVE_TOKEN set (a token given
    is required on loopback too: the same checks a server beyond loopback makes); yields (url, process)."""
    port = free_port()
    env = os.environ | {TOKEN_ENV: TOKEN}
    argv = [
        sys.executable,
        "-m",
        "toolbank",
        "--bank",
        str(served_bank.path),
        "serve",
        "--transport",
        "http",
        "--port",
        str(port),
        "--allow-write",
    ]
    with http_server(argv, port, env) as (url, process):
        yield url, process


def _post(url: str, headers: dict) -> int:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "add_tool", "arguments": {"tool": {"name": "evil", "description": "x"}}},
        }
    )
    request = urllib.request.Request(
        url,
        data=body.encode(),
        method="POST",
        headers={"content-type": "application/json", "accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


def test_http_server_requires_the_token_and_logs_writes(token_server, served_bank):
    url, process = token_server
    assert _post(url, {}) == 401
    assert _post(url, {"authorization": "Bearer not-the-token-at-all"}) == 401

    async def session(token: str):
        http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
            hits = await client.call_tool("search_tools", {"query": "weather forecast", "k": 2})
            assert not hits.is_error
            tool = {"name": "translate_text", "description": "Translate text into another language"}
            added = await client.call_tool("add_tool", {"tool": tool})
            assert not added.is_error and added.structured_content["added"] == ["translate_text"]
            clash = await client.call_tool("add_tool", {"tool": tool | {"description": "Other"}})
            assert clash.is_error

    anyio.run(session, TOKEN)
    with pytest.raises(Exception):  # noqa: B017 -- the client fails on the 401, whatever it raises
        anyio.run(session, "wrong-token-wrong-token")
    process.terminate()
    stderr = process.communicate(timeout=10)[1]
    assert "evil" not in stderr and "evil" not in ToolBank.load(served_bank.path)
    assert "toolbank serve: add_tool 'translate_text' added (client 127.0.0.1:" in stderr
    assert "toolbank serve: add_tool 'translate_text' refused: tool 'translate_text' is already in the bank" in stderr
    assert "translate_text" in ToolBank.load(served_bank.path, HashEmbedder(64))
