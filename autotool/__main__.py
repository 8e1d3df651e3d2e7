"""`python -m autotool`: the `autotool` command."""

from autotool.cli import main

main()
