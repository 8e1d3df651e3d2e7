"""What the training and bench commands share: click help from a module docstring, `--help` that lists a
config's keys, and a `main(argv) -> exit code` for a click command (as the tests and scripts call them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import click

from training.config import keys, show


class CommandError(click.ClickException):
    """The command's arguments, config or inputs are wrong: the message, exit code 2."""

    exit_code = 2


def doc_help(doc: str) -> str:
    """A module docstring as click help: indented blocks (command lines, examples) kept as written, the rest
    wrapped as click wraps."""
    paragraphs = re.split(r"\n\s*\n", doc.strip())
    return "\n\n".join("\b\n" + p if p.startswith((" ", "```")) or "\n " in p else p for p in paragraphs)


class ConfigCommand(click.Command):
    """A click command whose `--help` also lists every key of a config dataclass (dotted for sections) with
    its type, default and help (the fields' `metadata["help"]`); the `--KEY VALUE` overrides arrive in
    `ctx.args` (unknown options and extra arguments are allowed)."""

    def __init__(self, *args, config_class=None, **kwargs):
        kwargs.setdefault("context_settings", {}).update(
            ignore_unknown_options=True, allow_extra_args=True, help_option_names=["-h", "--help"]
        )
        kwargs.setdefault("options_metavar", "[--config PATH] [--KEY VALUE]...")
        super().__init__(*args, **kwargs)
        self.config_class = config_class

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help(ctx, formatter)
        rows = [
            (f"--{key} {kind}", f"{text}  [default: {show(default)}]".strip())
            for key, kind, default, text in keys(self.config_class())
        ]
        with formatter.section("Config keys (--KEY VALUE; values are YAML, dotted keys reach into sections)"):
            formatter.write_dl(rows, col_max=26)


def run(command: click.Command, argv: Sequence[str] | None = None) -> int:
    """Run `command` on `argv` (default `sys.argv[1:]`); returns its exit code instead of exiting."""
    try:
        result = command.main(args=None if argv is None else list(argv), standalone_mode=False)
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except click.Abort:
        click.echo("Aborted!", err=True)
        return 1
    return result if isinstance(result, int) else 0
