"""`python -m toolbank ...` is the `toolbank` command."""

from toolbank.cli import main

main()
