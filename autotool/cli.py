"""`autotool`: the policy's choice from the command line, and over MCP.

    autotool select "Will it rain in Paris tomorrow?" -k 3 --mode fast
    autotool serve --bank ./bank --transport http --port 8000

The bank is `--bank PATH`, else `$AUTOTOOL_BANK`, else `$AUTOTOOL_HOME/bank` (default ~/.cache/autotool).
"""

from __future__ import annotations

import functools
import json
import time

import click

from toolbank.cli import serve_options

MODES = ("reason", "fast")  # autotool.select.MODES, repeated so --help needs no torch import


def _user_errors(fn):
    """The library's input errors (all ValueErrors, KeyError for an unknown name) as a message and exit 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError as e:
            raise click.ClickException(str(e)) from None
        except KeyError as e:
            raise click.ClickException(str(e.args[0])) from None

    return wrapper


def _bank(path: str | None):
    from pathlib import Path

    from toolbank import ToolBank, default_bank_path
    from toolbank.cli import require_bank

    return ToolBank.load(require_bank(Path(path) if path else default_bank_path()))


def _policy(path: str | None, bank):
    from autotool.policy import Policy
    from autotool.select import default_policy

    return Policy.load(path, bank) if path else default_policy(bank)


bank_option = click.option(
    "--bank",
    type=click.Path(file_okay=False),
    envvar="AUTOTOOL_BANK",
    help="Bank folder. Default: $AUTOTOOL_BANK, else $AUTOTOOL_HOME/bank.",
)
policy_option = click.option(
    "--policy",
    "policy_path",
    type=click.Path(file_okay=False, exists=True),
    help="Policy folder (default: $AUTOTOOL_HOME/policy, else the shipped policy).",
)


@click.group()
def main() -> None:
    """Choose the tool for a request with the autotool policy, say why, and fill its arguments."""


@main.command()
@click.argument("query")
@click.option("-k", default=5, show_default=True, type=click.IntRange(min=1), help="How many candidates to list.")
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="reason",
    show_default=True,
    help="reason: write a rationale first (seconds on a CPU); fast: no rationale.",
)
@click.option(
    "--args/--no-args",
    "arguments",
    default=False,
    show_default=True,
    help="Also fill the chosen tool's arguments (a few seconds more on a CPU).",
)
@click.option("--namespace", help="Only tools in this namespace.")
@click.option(
    "--min-cosine",
    type=float,
    default=None,
    help="Say no tool fits when the request's cosine with the best tool is below this (default: the threshold "
    "fitted for the bank's embedder, 0.255 for the default (fine-tuned) one, 0.22 for stock all-MiniLM-L6-v2; "
    "0: always choose).",
)
@click.option(
    "--rerank/--no-rerank",
    default=True,
    show_default=True,
    help="Let the policy's reranker (a cross-encoder, where the policy has one) reorder the best few.",
)
@click.option("--json", "as_json", is_flag=True, help="JSON output for scripts.")
@bank_option
@policy_option
@_user_errors
def select(query, k, mode, arguments, namespace, min_cosine, rerank, as_json, bank, policy_path):
    """Choose the tool for QUERY."""
    from autotool.select import select_tool
    from toolbank.cli import unknown_namespaces

    tool_bank = _bank(bank)
    if problem := unknown_namespaces(tool_bank, [namespace]):
        raise click.ClickException(problem)
    selection = select_tool(
        query,
        bank=tool_bank,
        policy=_policy(policy_path, tool_bank),
        k=k,
        mode=mode,
        arguments=arguments,
        namespace=namespace,
        min_cosine=min_cosine,
        rerank=rerank,
    )
    error = "; ".join(selection.argument_errors) or None
    if as_json:
        out = {
            "tool": None if selection.tool is None else selection.tool.qualified_name,
            "probability": selection.probability,
            "cosine": selection.cosine,
            "rationale": selection.rationale,
            "arguments": selection.arguments,
            "candidates": [{"name": t.qualified_name, "probability": p} for t, p in selection.candidates],
        }
        if error is not None:
            out["argument_error"] = error
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    if selection.tool is None:
        click.echo(f"no tool fits (the closest has cosine {selection.cosine:.2f} with the request)")
    else:
        click.echo(f"{selection.tool.qualified_name}  (p={selection.probability:.3f}, cosine {selection.cosine:.2f})")
    if selection.rationale:
        click.echo(f"  why: {selection.rationale}")
    if selection.arguments is not None:
        click.echo(f"  arguments: {json.dumps(selection.arguments, ensure_ascii=False)}")
    if error is not None:
        click.echo(f"  arguments: none valid ({error})")
    for rank, (tool, probability) in enumerate(selection.candidates, 1):
        click.echo(f"{rank:>4}. {probability:.3f}  {tool.qualified_name}")


@main.command()
@serve_options
@click.option(
    "--preload",
    is_flag=True,
    help="Load the indexes, the embedder and the policy with its language model (converting them the "
    "first time) before serving, and say when ready; else the policy loads on the first select_tool.",
)
@click.option(
    "--call-through",
    is_flag=True,
    help="Also expose call_tool: it calls a tool imported with `toolbank import --from-mcp` on its own server "
    "(started from the command recorded at import), so an agent needs only this one MCP connection.",
)
@click.option("--verbose", is_flag=True, help="Also log debug lines and progress bars on stderr.")
@bank_option
@policy_option
@_user_errors
def serve(transport, host, port, allow_write, token_file, preload, call_through, verbose, bank, policy_path):
    """Serve the bank to agents over MCP: search_tools, select_tool, list_namespaces (and add_tool).

    \b
    autotool serve --bank ./bank                          # for an MCP client that starts it
    autotool serve --bank ./bank --transport http --port 8000
    """
    from autotool.serve import build_server
    from toolbank.cli import announce_serving, preload_bank, quiet_logs
    from toolbank.serve import run, serve_token

    token = serve_token(transport, host, token_file)  # a ValueError: before the bank opens, a refused start fails fast
    quiet_logs(verbose)
    tool_bank = _bank(bank)
    policy, loaded = None, None
    if preload:
        start = time.perf_counter()
        preload_bank(tool_bank)
        policy = _policy(policy_path, tool_bank)
        policy.warm()
        loaded = f"indexes, embedder and policy (language model included) loaded in {time.perf_counter() - start:.1f} s"
    announce_serving(tool_bank, transport, host, port, allow_write, loaded)
    run(
        build_server(
            tool_bank,
            allow_write=allow_write,
            policy_path=policy_path,
            policy=policy,
            log_level="DEBUG" if verbose else "WARNING",
            call_through=call_through,
        ),
        transport,
        host=host,
        port=port,
        token=token,
    )


if __name__ == "__main__":
    main()
