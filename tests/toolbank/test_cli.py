import json
import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from helpers import index_ids, store_ids

from toolbank import ToolBank
from toolbank.cli import main

GOOD = [
    {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
    {"name": "pdf_to_text", "description": "Convert a PDF document to plain text"},
]


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """Run `toolbank` against a hash-embedded bank in a temporary $AUTOTOOL_HOME."""
    monkeypatch.setenv("AUTOTOOL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AUTOTOOL_BANK", raising=False)
    runner = CliRunner()
    assert runner.invoke(main, ["init", "--embedder", "hash:64"]).exit_code == 0

    def run(*args):
        return runner.invoke(main, [str(a) for a in args])

    return run


def bank_state(tmp_path):
    bank = ToolBank.load(tmp_path / "home" / "bank")
    return [t.to_dict() for t in bank], bank.store.generation


def test_add_list_show_search_export(cli, write_json, tmp_path):
    result = cli("add", write_json("tools.json", GOOD))
    assert result.exit_code == 0 and "added 2" in result.output
    assert json.loads(cli("list", "--json").output)[0]["name"] == "get_weather"
    shown = json.loads(cli("show", "get_weather", "--json", "--format", "anthropic").output)
    assert shown["input_schema"]["properties"] == {"city": {"type": "string"}}
    hits = json.loads(cli("search", "convert pdf to text", "-k", "1", "--json").output)
    assert [h["name"] for h in hits] == ["pdf_to_text"] and hits[0]["score"] > 0
    assert "pdf_to_text" in cli("search", "pdf", "--mode", "bm25").output
    exported = cli("export", "--format", "openai").output
    assert [t["function"]["name"] for t in json.loads(exported)] == ["get_weather", "pdf_to_text"]
    stats = json.loads(cli("stats", "--json").output)
    assert stats["tools"] == 2 and stats["path"] == str(tmp_path / "home" / "bank")


def test_import_formats_and_namespace(cli, write_json):
    mcp = {"tools": [{"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object"}}]}
    assert cli("import", "--format", "mcp", "--namespace", "fs", write_json("mcp.json", mcp)).exit_code == 0
    assert json.loads(cli("show", "read_file", "--json").output)["namespace"] == "fs"
    result = cli("import", "--format", "anthropic", write_json("wrong.json", mcp))
    assert result.exit_code == 1 and "input_schema" in result.output


def test_bank_option_and_env(tmp_path, write_json, monkeypatch):
    runner = CliRunner()
    path = tmp_path / "explicit"
    assert (
        runner.invoke(
            main, ["--bank", str(path), "add", "--embedder", "hash:32", str(write_json("t.json", GOOD))]
        ).exit_code
        == 0
    )
    monkeypatch.setenv("AUTOTOOL_BANK", str(path))
    assert json.loads(runner.invoke(main, ["stats", "--json"]).output)["dim"] == 32


@pytest.mark.parametrize(
    "content, words",
    [
        (b'{"name": "a", ', "invalid JSON"),
        (b"", "is empty"),
        (b"\x00\x01\x02binary", "binary"),
        ('[{"name": "caf\u00e9"}]'.encode("latin-1"), "not UTF-8"),
        (json.dumps([GOOD[1], {"name": "bad name!"}]).encode(), "field 'name'"),
        (json.dumps([GOOD[1], {"description": "nameless"}]).encode(), "tool '#2': field 'name'"),
        (json.dumps([GOOD[1], {"name": "x", "parameters": {"type": "nope"}}]).encode(), "tool 'x': field 'parameters'"),
        (json.dumps([GOOD[1], {"name": "big", "description": "x" * 1_000_000}]).encode(), "field 'description'"),
    ],
)
def test_bad_input_names_file_and_changes_nothing(cli, write_json, tmp_path, content, words):
    cli("add", write_json("ok.json", [GOOD[0]]))
    before = bank_state(tmp_path)
    path = write_json("bad.json", None, raw=content)
    result = cli("add", path)
    assert result.exit_code == 1
    assert str(path) in result.output and words in result.output
    assert bank_state(tmp_path) == before  # GOOD[1] in the same batch was not added either


def test_duplicate_needs_replace(cli, write_json, tmp_path):
    path = write_json("tools.json", GOOD)
    cli("add", path)
    before = bank_state(tmp_path)
    result = cli("add", path)  # the same tools again (e.g. an add re-run after a crash): unchanged, no error
    assert result.exit_code == 0 and "added 0, replaced 0, unchanged 2" in result.output
    assert bank_state(tmp_path) == before  # generation too: the index stays current
    changed = [{**GOOD[0], "description": "Weather now"}]
    result = cli("add", write_json("new.json", changed))  # the same name, other content
    assert result.exit_code == 1 and "already in the bank" in result.output and "--replace" in result.output
    assert bank_state(tmp_path) == before
    assert "replaced 1" in cli("add", "--replace", write_json("new.json", changed)).output


def test_skip_invalid_adds_the_good_and_lists_the_bad(cli, write_json):
    result = cli("add", "--skip-invalid", write_json("mixed.json", [GOOD[0], {"name": "no good"}, GOOD[1]]))
    assert result.exit_code == 0 and "added 2" in result.output and "skipped 1 invalid" in result.output
    assert "'no good'" in result.output


def test_unknown_format_and_missing_names(cli, write_json):
    result = cli("add", "--format", "yaml", write_json("t.json", GOOD))
    assert result.exit_code == 2 and "yaml" in result.output
    assert cli("show", "nope").exit_code == 1 and "no tool named 'nope'" in cli("show", "nope").output
    result = cli("remove", "nope")
    assert result.exit_code == 1 and "no tool named 'nope'" in result.output


def test_not_a_bank(tmp_path, write_json):
    folder = tmp_path / "junk"
    folder.mkdir()
    (folder / "file.txt").write_text("x")
    runner = CliRunner()
    result = runner.invoke(main, ["--bank", str(folder), "stats"])
    assert result.exit_code == 1 and "is not a bank" in result.output
    result = runner.invoke(main, ["--bank", str(folder), "add", str(write_json("t.json", GOOD))])
    assert result.exit_code == 1 and "not an empty folder" in result.output
    assert sorted(p.name for p in folder.iterdir()) == ["file.txt"]


def test_help_lists_commands_without_loading_torch():
    out = subprocess.run([sys.executable, "-m", "toolbank", "--help"], capture_output=True, text=True, check=True)
    for command in ["add", "import", "remove", "list", "show", "search", "export", "stats", "reindex"]:
        assert command in out.stdout
    code = "import sys, toolbank.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'sentence_transformers')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"


def _tools_file(tmp_path, prefix, n):
    path = tmp_path / f"{prefix}.jsonl"
    path.write_text(
        "".join(
            json.dumps({"name": f"{prefix}_{i}", "description": f"{prefix} tool number {i} does task {i % 17}"}) + "\n"
            for i in range(n)
        )
    )
    return path


def test_two_processes_adding_at_once_lose_nothing(tmp_path):
    bank_path = tmp_path / "bank"
    ToolBank.create(bank_path, "hash:64").close()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolbank",
                "--bank",
                str(bank_path),
                "add",
                str(_tools_file(tmp_path, prefix, 200)),
            ],
            stderr=subprocess.PIPE,
        )
        for prefix in ("alpha", "beta")
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
    bank = ToolBank.load(bank_path)
    assert len(bank) == 400
    assert index_ids(bank) == store_ids(bank)
    assert bank.search("beta number 117", k=1, mode="bm25")[0].name == "beta_117"


KILLED_ADDER = """
import sys
from toolbank import Tool, ToolBank
bank = ToolBank.load(sys.argv[1])
print("ready", flush=True)
for batch in range(10_000):
    bank.add([Tool(f"t{batch}_{i}", f"tool {i} of batch {batch} for task {i % 13}") for i in range(500)])
"""


@pytest.mark.parametrize("delay", [0.3, 0.9, 1.7])
def test_a_process_killed_mid_add_leaves_a_consistent_bank(tmp_path, delay):
    bank_path = tmp_path / "bank"
    ToolBank.create(bank_path, "hash:32").close()
    proc = subprocess.Popen([sys.executable, "-c", KILLED_ADDER, str(bank_path)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ready"
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    bank = ToolBank.load(bank_path)
    assert len(bank) % 500 == 0  # whole batches or nothing
    assert index_ids(bank) == store_ids(bank)
    if len(bank):
        assert bank.search("tool 3 of batch 0", k=1, mode="dense")


# -- one way to say things (issue #24) -------------------------------------------------------------
NAMESPACED = [
    {"name": "get_weather", "description": "Current weather for a city", "namespace": "weather"},
    {"name": "read_file", "description": "Read a file", "namespace": "fs"},
    {"name": "send_email", "description": "Send an email", "namespace": "mail"},
    {"name": "ping", "description": "Check that the host answers"},
]


def test_bank_goes_after_the_subcommand_too(cli, write_json, tmp_path):
    """Every subcommand takes --bank after its name; it wins over the default bank (the fixture's, at
    $AUTOTOOL_HOME/bank) and over a --bank before the subcommand."""
    other = tmp_path / "other"
    tools = write_json("tools.json", GOOD)
    assert cli("init", "--bank", other, "--embedder", "hash:32").exit_code == 0
    assert cli("add", tools, "--bank", other).exit_code == 0
    openai = write_json(
        "openai.json", [{"type": "function", "function": {"name": "search_web", "description": "Search the web"}}]
    )
    assert cli("import", openai, "--bank", other).exit_code == 0
    assert [t["name"] for t in json.loads(cli("list", "--bank", other, "--json").output)] == [
        "get_weather",
        "pdf_to_text",
        "search_web",
    ]
    assert json.loads(cli("list", "--json").output) == []  # the default bank was not touched
    assert "search_web" in cli("show", "search_web", "--bank", other).output
    assert "pdf_to_text" in cli("search", "pdf", "--mode", "bm25", "--bank", other).output
    assert len(json.loads(cli("export", "--bank", other).output)) == 3
    stats = json.loads(cli("stats", "--bank", other, "--json").output)
    assert stats["path"] == str(other) and stats["dim"] == 32
    assert cli("remove", "search_web", "--bank", other).exit_code == 0
    assert cli("reindex", "--bank", other).exit_code == 0
    assert json.loads(cli("--bank", tmp_path / "nowhere", "stats", "--bank", other, "--json").output)["tools"] == 2
    result = cli("serve", "--bank", tmp_path / "nowhere")
    assert result.exit_code == 1 and f"{tmp_path / 'nowhere'} is not a bank" in result.output


def test_import_detects_the_format_as_add_does(cli, write_json):
    mixed = [
        {"type": "function", "function": {"name": "a_openai", "description": "x", "parameters": {"type": "object"}}},
        {"name": "b_anthropic", "description": "y", "input_schema": {"type": "object"}},
        {"name": "c_mcp", "description": "z", "inputSchema": {"type": "object"}},
    ]
    result = cli("import", write_json("mixed.json", mixed))
    assert result.exit_code == 0, result.output
    assert [t["name"] for t in json.loads(cli("list", "--json").output)] == ["a_openai", "b_anthropic", "c_mcp"]
    result = cli("import", "--from-mcp", "python server.py", "--format", "mcp")
    assert result.exit_code == 2 and "--format applies to FILES" in result.output


def test_add_and_import_tag_every_tool(cli, write_json, tmp_path):
    tagged = [GOOD[0] | {"tags": ["weather"]}, GOOD[1]]
    assert cli("add", write_json("t.json", tagged), "--tag", "team-a", "--tag", "weather").exit_code == 0
    tools = {t["name"]: t.get("tags") for t in json.loads(cli("list", "--json").output)}
    assert tools == {"get_weather": ["weather", "team-a"], "pdf_to_text": ["team-a", "weather"]}
    openai = [{"type": "function", "function": {"name": "c", "description": "c", "parameters": {"type": "object"}}}]
    assert cli("import", write_json("o.json", openai), "--tag", "imported").exit_code == 0
    assert json.loads(cli("show", "c", "--json").output)["tags"] == ["imported"]
    assert [h["name"] for h in json.loads(cli("search", "c", "--tag", "imported", "--json").output)] == ["c"]
    before = bank_state(tmp_path)
    result = cli("add", write_json("u.json", [{"name": "d", "description": "d"}]), "--tag", "")
    assert result.exit_code == 1 and "tags" in result.output and "Traceback" not in result.output
    assert bank_state(tmp_path) == before


def test_export_by_namespace_and_unknown_namespaces(cli, write_json):
    assert cli("add", write_json("t.json", NAMESPACED)).exit_code == 0
    exported = json.loads(cli("export", "--namespace", "fs", "--namespace", "mail").output)
    assert [t["name"] for t in exported] == ["read_file", "send_email"]
    result = cli("export", "--namespace", "fs", "--namespace", "nope")
    assert result.exit_code == 0 and [t["name"] for t in json.loads(result.stdout)] == ["read_file"]
    assert "warning: namespace 'nope' does not exist" in result.stderr
    # search: an unknown namespace is an error that lists the existing ones, not "no matching tools"
    result = cli("search", "weather", "--namespace", "wether")
    assert result.exit_code == 1
    assert "namespace 'wether' does not exist in bank" in result.output
    assert "fs (1), mail (1), weather (1)" in result.output and "1 tools have none" in result.output
    assert "no matching tools" not in result.output
    result = cli("list", "--namespace", "wether")
    assert result.exit_code == 0 and result.stdout == "" and "namespace 'wether' does not exist" in result.stderr
    assert cli("search", "weather", "--namespace", "weather").exit_code == 0  # a namespace that exists: no warning
    assert "warning" not in cli("list", "--namespace", "weather").stderr


def test_a_tool_without_description_is_added_with_a_warning(cli, write_json):
    result = cli("add", write_json("t.json", [{"name": "mystery", "description": "  "}, GOOD[1]]))
    assert result.exit_code == 0 and "added 2" in result.stdout
    assert "warning: tool 'mystery' has no description" in result.stderr
    assert "pdf_to_text" not in result.stderr


def test_errors_name_command_line_flags(cli, write_json):
    assert cli("add", write_json("t.json", GOOD)).exit_code == 0
    result = cli("search", "pdf", "-k", "0")
    assert result.exit_code == 2 and "'-k'" in result.output and "k must" not in result.output
    result = cli("add", write_json("u.json", [GOOD[0] | {"description": "other"}]))
    assert result.exit_code == 1 and "--replace" in result.output and "replace=True" not in result.output
    result = cli("add", write_json("v.json", [{"name": "z", "description": "z"}]), "--embedder", "hash:8")
    assert result.exit_code == 1 and "--embedder applies when creating a bank" in result.output
    result = cli("import", write_json("w.json", GOOD), "--sync")
    assert result.exit_code == 2 and "--sync applies to --from-mcp" in result.output
    result = cli("reindex", "--index", "bogus")
    assert result.exit_code == 1 and "--index bogus: FAISS cannot build index" in result.output
    assert "could not parse index string bogus" in result.output and ".cpp" not in result.output
    result = cli("import", "--from-mcp", "python server.py", "--timeout", "0")
    assert result.exit_code == 2 and "'--timeout'" in result.output
    result = cli("serve", "--transport", "http", "--port", "70000")
    assert result.exit_code == 2 and "'--port'" in result.output
    result = cli("--bank", write_json("x.json", {}).parent / "nowhere", "list")
    assert result.exit_code == 1 and "is not a bank" in result.output and "ToolBank" not in result.output
