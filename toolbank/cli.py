"""`toolbank`: register, inspect and search the tools of a bank.

    toolbank add tools.json                      # plain, OpenAI, Anthropic or MCP tools; JSON or JSONL
    toolbank search "convert a pdf to text" -k 5 --mode hybrid
    toolbank --bank ./mybank stats

The bank is `--bank PATH`, else `$AUTOTOOL_BANK`, else `$AUTOTOOL_HOME/bank` (default ~/.cache/autotool).
"""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path

import click

from toolbank.tool import FORMATS

MODES = ("dense", "bm25", "hybrid")  # toolbank.search.MODES, repeated so --help needs no numpy import


def _user_errors(fn):
    """Turn the library's errors into a `ClickException` (message, exit 1)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import sqlite3

        from toolbank.bank import BankError, database_error
        from toolbank.embed import EmbedderError
        from toolbank.index import IndexFactoryError
        from toolbank.tool import ToolError

        try:
            return fn(*args, **kwargs)
        except (BankError, EmbedderError, IndexFactoryError, ToolError) as e:
            raise click.ClickException(str(e)) from None
        except sqlite3.DatabaseError as e:  # damage that the check on open did not see
            raise click.ClickException(str(database_error(_bank_path(click.get_current_context()), e))) from None
        except KeyError as e:
            raise click.ClickException(e.args[0]) from None

    return wrapper


def _bank_path(ctx: click.Context) -> Path:
    from toolbank.bank import default_bank_path

    return Path(ctx.obj["bank"]) if ctx.obj["bank"] else default_bank_path()


def _load(ctx: click.Context):
    from toolbank.bank import ToolBank

    return ToolBank.load(require_bank(_bank_path(ctx)))


def require_bank(path: Path) -> Path:
    """`path`, when it holds a bank; else the error that says how to make one with this command line."""
    if not (path / "manifest.json").is_file() or not (path / "bank.sqlite").is_file():
        raise click.ClickException(
            f"{path} is not a bank (no manifest.json and bank.sqlite); create one with `toolbank --bank {path} add FILE`"
        )
    return path


def unknown_namespaces(bank, namespaces) -> str | None:
    """Why some of `namespaces` select nothing (they are not in the bank, whose namespaces it lists), or None."""
    existing = bank.store.namespaces()
    unknown = [n for n in namespaces if n is not None and n not in existing]
    if not unknown:
        return None
    named = sorted(n for n in existing if n)
    listed = (
        ", ".join(f"{n} ({existing[n]})" for n in named[:20])
        + (f" and {len(named) - 20} more" if len(named) > 20 else "")
        if named
        else "none"
    )
    return (
        f"namespace{'s' if len(unknown) > 1 else ''} {', '.join(repr(printable(n)) for n in unknown)} "
        f"{'do' if len(unknown) > 1 else 'does'} not exist in bank {bank.path}; its namespaces (tools): {listed}"
        + (f"; {existing[None]} tools have none" if existing.get(None) else "")
    )


def _warm(bank) -> None:
    """After a write: save what the next search, in any process, would otherwise build (`ToolBank.warm`). The
    write is done; a failure here is a warning."""
    try:
        bank.warm()
    except Exception as e:  # the next search will try again, and report it
        click.echo(
            f"warning: the bank is written, but preparing it for search failed: {type(e).__name__}: {e}", err=True
        )


def _echo_json(data) -> None:
    click.echo(_json_text(data))


_RAW_IN_JSON = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # json.dumps leaves them raw


def _json_text(data) -> str:
    """Indented JSON whose strings show no terminal control characters (all are \\u escapes)."""
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(data, indent=2, ensure_ascii=False))


@click.group()
@click.option(
    "--bank",
    type=click.Path(file_okay=False),
    envvar="AUTOTOOL_BANK",
    help="Bank folder. Default: $AUTOTOOL_BANK, else $AUTOTOOL_HOME/bank (~/.cache/autotool/bank).",
)
@click.pass_context
def main(ctx: click.Context, bank: str | None) -> None:
    """Register, inspect and search the tools an agent can call."""
    ctx.obj = {"bank": bank}


def _set_bank(ctx: click.Context, param, value: str | None) -> None:
    if value is not None:
        ctx.ensure_object(dict)["bank"] = value


def bank_here(fn):
    """`--bank` after the subcommand too (`toolbank search --bank ./bank ...`); it wins over one before it."""
    return click.option(
        "--bank",
        type=click.Path(file_okay=False),
        expose_value=False,
        callback=_set_bank,
        help="Bank folder (also accepted before the subcommand).",
    )(fn)


@main.command()
@bank_here
@click.option(
    "--embedder",
    default="default",
    show_default=True,
    help="'default' = 'tools' (all-MiniLM-L6-v2 fine-tuned on tool data, shipped as an adapter), 'stock' "
    "(all-MiniLM-L6-v2 as published), "
    "a local sentence-transformers or adapter folder, or hash:DIM.",
)
@click.option(
    "--index", "index_factory", default="flat", show_default=True, help="flat, hnsw, or a FAISS factory string."
)
@click.pass_context
@_user_errors
def init(ctx, embedder, index_factory):
    """Create an empty bank (add creates one with the defaults when needed)."""
    from toolbank.bank import ToolBank
    from toolbank.index import IndexFactoryError

    path = _bank_path(ctx)
    if (path / "manifest.json").exists():
        raise click.ClickException(
            f"{path} is already a bank; add tools with `toolbank --bank {path} add FILE`, or choose a new folder"
        )
    try:
        bank = ToolBank.create(path, embedder, index_factory)
    except IndexFactoryError as e:
        raise click.ClickException(f"--index {index_factory}: {e}") from None
    click.echo(f"created bank {bank.path} (embedder {bank.embedder_id}, dim {bank.dim}, index {bank.index_factory})")


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` for a terminal: control characters (escape sequences, bidi overrides) shown as `\\xNN`/`\\uNNNN`."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


def _read_files(files, fmt, namespace):
    """Every file's valid tools, the errors (each invalid tool, JSONL line or file that does not parse; a
    qualified name in two files) and notes (ignored keys)."""
    from toolbank.tool import ToolError, load_file

    tools, errors, notes, seen = [], [], [], {}
    for file in files:
        file_tools, file_errors = load_file(file, fmt, namespace=namespace, skip_invalid=True, notes=notes)
        errors += file_errors
        for tool in file_tools:
            if tool.qualified_name in seen:
                errors.append(
                    ToolError(
                        f"is also in {seen[tool.qualified_name]}; names must be unique across the files",
                        file=str(file),
                        tool=tool.qualified_name,
                        field="name",
                    )
                )
                continue
            seen[tool.qualified_name] = str(file)
            tools.append(tool)
    return tools, errors, notes


def _add(
    ctx,
    tools,
    errors,
    notes,
    replace,
    skip_invalid,
    embedder,
    prune=None,
    source="the input",
    replace_only_in=None,
    tags=(),
):
    import dataclasses

    from toolbank.bank import NameClash, ToolBank
    from toolbank.tool import SUSPICIOUS_TAG, short

    if tags:  # --tag: each tool keeps its own tags, then gets these (a bad tag is an error naming it)
        tools = [dataclasses.replace(t, tags=tuple(dict.fromkeys((*t.tags, *tags)))) for t in tools]

    for note in notes:
        click.echo(f"warning: {printable(note)}", err=True)
    for tool in tools:
        if not tool.description.strip():
            click.echo(
                f"warning: tool {printable(short(tool.qualified_name))!r} has no description; search and "
                "selection can match it only by its name and parameters",
                err=True,
            )
    for error in errors:
        click.echo(f"{'skipped' if skip_invalid else 'invalid'}: {printable(str(error))}", err=True)
    if errors and not skip_invalid:
        raise click.ClickException(
            f"{len(errors)} invalid {'entry' if len(errors) == 1 else 'entries'} in "
            f"{source} (listed above); nothing was changed. Fix them, or add the valid "
            "tools with --skip-invalid"
        )
    if not tools and prune is None:
        raise click.ClickException(f"no valid tools in {source}; nothing was changed")
    path = _bank_path(ctx)
    if (path / "manifest.json").exists() and embedder:
        raise click.ClickException(
            f"--embedder applies when creating a bank; {path} exists. "
            "To re-embed it use `toolbank reindex --embedder ...`"
        )
    # A new bank appears only with its tools: a failed or killed first add leaves the path as it was.
    try:
        bank, report = ToolBank.open_and_add(
            path,
            tools,
            embedder=embedder,
            replace=replace,
            progress=len(tools) >= 64,
            prune=prune,
            replace_only_in=replace_only_in,
        )
    except NameClash as e:
        raise click.ClickException(e.message("--replace")) from None
    _warm(bank)
    for name, phrase in report.flagged.items():
        click.echo(
            f"warning: tool {short(name)!r}: its text addresses the model ({printable(phrase)!r}); tagged "
            f"{SUSPICIOUS_TAG!r} (leave it out of a search with --exclude-tag {SUSPICIOUS_TAG}; MCP "
            "search_tools leaves it out)",
            err=True,
        )
    click.echo(
        f"{bank.path}: added {len(report.added)}, replaced {len(report.replaced)}, "
        f"unchanged {len(report.unchanged)}"
        + (f", removed {len(report.removed)}" if prune is not None else "")
        + f" ({report.embedded} texts embedded); {len(bank)} tools in all"
        + (f"; skipped {len(errors)} invalid" if errors else "")
    )


def serve_options(fn):
    """The options `toolbank serve` and `autotool serve` share: transport, address, writing, the token."""
    options = [
        click.option(
            "--transport",
            type=click.Choice(["stdio", "http"]),
            default="stdio",
            show_default=True,
            help="stdio (the client starts this command) or http (streamable HTTP at http://HOST:PORT/mcp).",
        ),
        click.option(
            "--host",
            default="127.0.0.1",
            show_default=True,
            help="HTTP: the address to bind (loopback only by default; any other needs a token).",
        ),
        click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="HTTP: the port."),
        click.option("--allow-write", is_flag=True, help="Also expose add_tool (read-only without it)."),
        click.option(
            "--token-file",
            type=click.Path(dir_okay=False),
            help="HTTP: a file holding the bearer token clients must send (else $AUTOTOOL_SERVE_TOKEN); "
            "required with a --host beyond loopback.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _add_files(ctx, files, fmt, namespace, tags, replace, skip_invalid, embedder):
    """`add FILES` (and `import FILES`): every file's tools in one transaction."""
    _add(
        ctx,
        *_read_files(files, fmt, namespace),
        replace,
        skip_invalid,
        embedder,
        source="FILES" if len(files) > 1 else files[0],
        tags=tags,
    )


_add_options = [
    click.option("--namespace", help="Put every tool in this namespace."),
    click.option(
        "--tag", "tags", multiple=True, help="Add this tag to every tool, beside the tags it has (repeatable)."
    ),
    click.option(
        "--replace",
        is_flag=True,
        help="Overwrite tools whose qualified name (namespace/name) is already in the bank.",
    ),
    click.option(
        "--skip-invalid", is_flag=True, help="Add the valid tools and list the invalid ones, instead of adding none."
    ),
    click.option("--embedder", default=None, help="Embedder of a bank created by this command (see init)."),
]


def _with_add_options(fn):
    for option in reversed(_add_options):
        fn = option(fn)
    return fn


@main.command()
@bank_here
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@_with_add_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Format of every tool; detected per tool by default.",
)
@click.pass_context
@_user_errors
def add(ctx, files, namespace, tags, replace, skip_invalid, embedder, fmt):
    """Register the tools in FILES (JSON or JSONL: one tool, a list, or an MCP tools/list result).

    All tools of all files go in one transaction: one invalid tool adds none, and every invalid one is listed
    (see --skip-invalid). Keys a format does not define are ignored with a warning; a schema under a key the
    format does not read is an error.
    """
    _add_files(ctx, files, fmt, namespace, tags, replace, skip_invalid, embedder)


@main.command("import")
@bank_here
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@_with_add_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Format of every tool in FILES; detected per tool by default, as add does.",
)
@click.option(
    "--from-mcp",
    "command",
    metavar="COMMAND|URL",
    help='Start this MCP server over stdio (e.g. "python server.py --flag"), or connect to the running one at '
    "this http(s) URL (streamable HTTP, e.g. http://127.0.0.1:8000/mcp), and import its tools.",
)
@click.option(
    "--sync", is_flag=True, help="With --from-mcp: also remove the namespace's tools the server no longer lists."
)
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="NAME",
    help="With --from-mcp: an environment variable the server needs; `autotool serve --call-through` passes it "
    "on from its own environment (the value is not stored). Repeatable.",
)
@click.option(
    "--timeout",
    default=30.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="With --from-mcp: seconds for the whole exchange.",
)
@click.pass_context
@_user_errors
def import_(ctx, files, namespace, tags, replace, skip_invalid, embedder, fmt, command, sync, env, timeout):
    """Register tools exported from OpenAI, Anthropic or an MCP server's tools/list, or read from a live
    MCP server.

    \b
    toolbank import tools.json                  # the format of each tool is detected (--format forces one)
    toolbank import --from-mcp "npx -y @modelcontextprotocol/server-filesystem /tmp" --sync
    toolbank import --from-mcp http://127.0.0.1:8000/mcp   # a server already running, over HTTP

    From a server, the tools go in the namespace named after the server (its initialize name; --namespace
    overrides it). Importing the same server again updates its tools; with --sync the bank then mirrors the
    server. A tool of the same name in another namespace is another tool: both stay. If the server fails, times
    out or lists an invalid tool, the bank is left unchanged.
    """
    if bool(files) == bool(command):
        raise click.UsageError("give either FILES or --from-mcp COMMAND|URL")
    if command and fmt is not None:
        raise click.UsageError("--format applies to FILES; an MCP server's tools are MCP tools")
    if files:
        if sync or env:
            raise click.UsageError(f"{'--sync' if sync else '--env'} applies to --from-mcp")
        _add_files(ctx, files, fmt, namespace, tags, replace, skip_invalid, embedder)
        return
    from toolbank.mcp_import import list_server_tools, namespace_for
    from toolbank.tool import from_dicts

    server_name, objects = list_server_tools(command, timeout=timeout)
    namespace = namespace or namespace_for(server_name, command)
    source = f"MCP server `{command}`"
    notes = []
    tools, errors = from_dicts(objects, source, "mcp", namespace=namespace, skip_invalid=True, notes=notes)
    click.echo(f"{source}: {len(objects)} tools listed, namespace {namespace!r}", err=True)
    # The server's own tools from an earlier import are updated; the same name in another namespace is another
    # tool, left as it is.
    _add(
        ctx,
        tools,
        errors,
        notes,
        replace,
        skip_invalid,
        embedder,
        prune=namespace if sync else None,
        source=source,
        replace_only_in=None if replace else namespace,
        tags=tags,
    )
    _load(ctx).set_server(namespace, command, env)  # how `autotool serve --call-through` starts it


@main.command()
@bank_here
@click.argument("names", nargs=-1, required=True)
@click.pass_context
@_user_errors
def remove(ctx, names):
    """Remove tools by name (all or none): namespace/name, or a name only one tool has."""
    bank = _load(ctx)
    bank.remove(list(names))
    _warm(bank)
    click.echo(f"removed {len(names)}; {len(bank)} tools left")


@main.command("list")
@bank_here
@click.option("--namespace", help="Only tools in this namespace.")
@click.option("--json", "as_json", is_flag=True, help="JSON output for scripts.")
@click.pass_context
@_user_errors
def list_(ctx, namespace, as_json):
    """List the tools in the bank: qualified name (namespace/name), namespace, description's first line."""
    bank = _load(ctx)
    if problem := unknown_namespaces(bank, [namespace]):
        click.echo(f"warning: {problem}", err=True)
    tools = [t for t in bank if namespace is None or t.namespace == namespace]
    if as_json:
        _echo_json([t.to_dict() for t in tools])
        return
    for t in tools:
        line = t.description.splitlines()[0] if t.description else ""
        click.echo(f"{t.qualified_name}\t{(t.namespace or '')}\t{printable(line[:100])}")


@main.command()
@bank_here
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="plain", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="JSON output for scripts.")
@click.pass_context
@_user_errors
def show(ctx, name, fmt, as_json):
    """Show one tool (NAME: namespace/name, or a name only one tool has): description, schema and the text
    that is embedded."""
    tool = _load(ctx).get(name)
    if as_json:
        _echo_json(tool.to_dict(fmt))
        return
    click.echo(_json_text(tool.to_dict(fmt)))
    click.echo("\nembedded text:\n" + "\n".join(printable(line) for line in tool.text.split("\n")))


@main.command()
@bank_here
@click.argument("query")
@click.option("-k", default=5, show_default=True, type=click.IntRange(min=1), help="How many tools.")
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="hybrid",
    show_default=True,
    help="dense: embedding cosine; bm25: keywords; hybrid: reciprocal rank fusion of both.",
)
@click.option("--namespace", help="Only tools in this namespace.")
@click.option("--tag", "tags", multiple=True, help="Only tools with this tag (repeatable).")
@click.option(
    "--exclude-tag",
    "exclude_tags",
    multiple=True,
    help="No tools with this tag (repeatable), e.g. suspicious: tools whose text addresses the model.",
)
@click.option("--json", "as_json", is_flag=True, help="JSON output for scripts.")
@click.pass_context
@_user_errors
def search(ctx, query, k, mode, namespace, tags, exclude_tags, as_json):
    """Rank the bank's tools for QUERY."""
    bank = _load(ctx)
    if problem := unknown_namespaces(bank, [namespace]):
        raise click.ClickException(problem)
    hits = bank.search(query, k=k, mode=mode, namespace=namespace, tags=tags, exclude_tags=exclude_tags)
    if as_json:
        _echo_json([{"name": h.name, "score": h.score, "cosine": h.cosine, "tool": h.tool.to_dict()} for h in hits])
        return
    if not hits:
        click.echo("no matching tools")
    for rank, hit in enumerate(hits, 1):
        line = hit.tool.description.splitlines()[0][:90] if hit.tool.description else ""
        click.echo(f"{rank:>2}. {hit.score:8.4f}  {hit.name}  {printable(line)}")


@main.command()
@bank_here
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="plain", show_default=True)
@click.option("--jsonl", is_flag=True, help="One tool per line instead of a JSON list.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file (default stdout).")
@click.option("--namespace", "namespaces", multiple=True, help="Only tools in this namespace (repeatable).")
@click.pass_context
@_user_errors
def export(ctx, fmt, jsonl, output, namespaces):
    """Write every tool in the bank (or in the namespaces given) in FORMAT."""
    from toolbank.tool import dump

    bank = _load(ctx)
    if problem := unknown_namespaces(bank, namespaces):
        click.echo(f"warning: {problem}", err=True)
    text = dump([t for t in bank if not namespaces or t.namespace in namespaces], fmt, jsonl=jsonl)
    if output:
        Path(output).write_text(text)
    else:
        sys.stdout.write(text)


@main.command()
@bank_here
@click.option("--json", "as_json", is_flag=True, help="JSON output for scripts.")
@click.pass_context
@_user_errors
def stats(ctx, as_json):
    """Counts, embedder, index type and file sizes."""
    info = _load(ctx).stats()
    if as_json:
        _echo_json(info)
        return
    for key, value in info.items():
        click.echo(f"{key:>14}: {value}")


@main.command()
@bank_here
@serve_options
@click.option(
    "--preload",
    is_flag=True,
    help="Load the indexes and the embedder (exporting it to ONNX the first time) before serving, and "
    "say when ready; else they load on the first call.",
)
@click.option("--verbose", is_flag=True, help="Also log debug lines and progress bars on stderr.")
@click.pass_context
@_user_errors
def serve(ctx, transport, host, port, allow_write, token_file, preload, verbose):
    """Serve the bank's search to agents over MCP: search_tools, list_namespaces (and add_tool).

    `autotool serve` serves the same tools plus the policy's select_tool.

    \b
    toolbank --bank ./bank serve                          # for an MCP client that starts it
    toolbank --bank ./bank serve --transport http --port 8000
    AUTOTOOL_SERVE_TOKEN=... toolbank --bank ./bank serve --transport http --host 0.0.0.0
    """
    from toolbank.serve import ServeError, build_server, run, serve_token

    try:
        token = serve_token(transport, host, token_file)  # before the bank opens: a refused start fails fast
    except ServeError as e:
        raise click.ClickException(str(e)) from None
    quiet_logs(verbose)
    bank = _load(ctx)
    loaded = preload_bank(bank) if preload else None
    announce_serving(bank, transport, host, port, allow_write, loaded)
    run(
        build_server(bank, allow_write=allow_write, log_level="DEBUG" if verbose else "WARNING"),
        transport,
        host=host,
        port=port,
        token=token,
    )


def quiet_logs(verbose: bool) -> None:
    """Progress bars on stderr only with --verbose (the server's log level, WARNING or DEBUG, does the rest)."""
    if not verbose:
        import os

        os.environ.setdefault("TQDM_DISABLE", "1")  # read by tqdm at each bar, in this process and its children


def preload_bank(bank) -> str:
    """Load what the bank's searches need (see `ToolBank.warm`); what was loaded and how long it took."""
    import time

    start = time.perf_counter()
    bank.warm()
    return f"indexes and embedder loaded in {time.perf_counter() - start:.1f} s"


def announce_serving(bank, transport: str, host: str, port: int, allow_write: bool, loaded: str | None = None) -> None:
    """One line on stderr: what is served, where, and whether it can be written to; with `loaded` (--preload), it
    comes once everything is loaded, starting `ready:`, before the first request is read."""
    click.echo(
        ("ready: " if loaded else "")
        + f"serving {bank.path} ({len(bank)} tools) over {transport}"
        + (f" at http://{host}:{port}/mcp" if transport == "http" else "")
        + ("; add_tool enabled" if allow_write else "; read-only")
        + (f"; {loaded}" if loaded else ""),
        err=True,
    )


@main.command()
@bank_here
@click.option(
    "--embedder", help="Re-embed every tool with this embedder (default = tools, stock, a folder, or hash:DIM)."
)
@click.option("--index", "index_factory", help="Rebuild the index as flat, hnsw or a FAISS factory string.")
@click.pass_context
@_user_errors
def reindex(ctx, embedder, index_factory):
    """Rebuild the index, optionally re-embedding with another embedder or switching index type."""
    from toolbank.index import IndexFactoryError

    bank = _load(ctx)
    try:
        bank.reindex(embedder=embedder, index=index_factory, progress=True)
    except IndexFactoryError as e:
        raise click.ClickException(f"--index {index_factory}: {e}") from None
    _warm(bank)
    click.echo(f"reindexed {len(bank)} tools (embedder {bank.embedder_id}, index {bank.index_factory})")
