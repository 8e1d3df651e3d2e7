"""eval: held-out-tool evaluation of tool selection (`python -m eval --help`)."""
