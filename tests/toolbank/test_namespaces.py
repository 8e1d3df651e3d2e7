"""A tool's identity is namespace plus name (`github/search`): two servers' `search` coexist; version-1 banks
(names unique across namespaces) are upgraded when opened."""

import json
import sqlite3

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import index_ids, store_ids, weather_tools

from toolbank import BankError, Tool, ToolBank
from toolbank.bank import NameClash
from toolbank.cli import main
from toolbank.index import VectorIndex
from toolbank.store import Store
from toolbank.tool import load_file

SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}}


def two_searches() -> list[Tool]:
    return [
        Tool("search", "Search code and issues on GitHub", SCHEMA, namespace="github"),
        Tool("search", "Search messages in Slack channels", SCHEMA, namespace="slack"),
    ]


@pytest.fixture
def searches(tmp_path, embedder):
    bank = ToolBank.create(tmp_path / "bank", embedder)
    bank.add(two_searches() + [Tool("calculator", "Evaluate a math expression")])
    yield bank
    bank.close()


def test_qualified_and_api_names():
    github, _ = two_searches()
    assert github.qualified_name == "github/search" and github.api_name == "github__search"
    assert Tool("calculator").qualified_name == Tool("calculator").api_name == "calculator"
    assert github.to_dict("openai")["function"]["name"] == "github__search"
    assert github.to_dict("anthropic")["name"] == "github__search"
    assert github.to_dict("mcp")["name"] == "search" and "namespace" not in github.to_dict("mcp")
    assert github.to_dict("plain") == {
        "name": "search",
        "description": github.description,
        "parameters": SCHEMA,
        "namespace": "github",
    }


def test_the_same_name_in_two_namespaces_coexists(searches):
    assert len(searches) == 3
    assert searches.get("github/search").description.startswith("Search code")
    assert searches.get("slack/search").description.startswith("Search messages")
    assert searches.get("github__search") == searches.get("github/search")  # the OpenAI / Anthropic form
    assert searches.get("calculator").namespace is None  # a bare name only one tool has
    assert "github/search" in searches and "slack__search" in searches and "gitlab/search" not in searches
    assert {h.name for h in searches.search("search", k=5, mode="bm25")} == {"github/search", "slack/search"}
    assert {h.tool.name for h in searches.search("search", k=5, mode="bm25")} == {"search"}
    vectors = searches.vectors(["github/search", "slack__search"])
    assert vectors.shape == (2, 64) and not np.allclose(vectors[0], vectors[1])


def test_an_ambiguous_bare_name_lists_the_qualified_ones(searches):
    message = (
        f"tool name 'search' is ambiguous in bank {searches.path}: it is 'github/search', 'slack/search'; "
        "give the qualified name (namespace/name)"
    )
    for use in (searches.get, lambda n: searches.vectors([n])):
        with pytest.raises(BankError) as info:
            use("search")
        assert str(info.value) == message
    assert "search" in searches and "gitlab/search" not in searches  # `in` answers; only `get` needs one tool
    with pytest.raises(BankError, match="'search' is ambiguous"):
        searches.remove(["search"])
    assert len(searches) == 3  # nothing was removed
    with pytest.raises(KeyError, match="no tool named 'gitlab/search'"):
        searches.get("gitlab/search")
    searches.remove(["slack/search"])
    assert searches.get("search").namespace == "github"  # now only one tool has the name
    assert index_ids(searches) == store_ids(searches)


def test_replace_replaces_only_the_same_qualified_name(searches):
    slack = searches.get("slack/search")
    changed = Tool("search", "Search repositories on GitHub", SCHEMA, namespace="github")
    with pytest.raises(NameClash, match="'github/search' is already in the bank; use replace=True"):
        searches.add([changed])
    report = searches.add([changed], replace=True)
    assert report.replaced == ["github/search"] and not report.added
    assert searches.get("github/search").description == "Search repositories on GitHub"
    assert searches.get("slack/search") == slack and len(searches) == 3
    # The same name in a new namespace is a new tool, with or without replace: nothing moves.
    report = searches.add([Tool("search", "Search Jira issues", SCHEMA, namespace="jira")], replace=True)
    assert report.added == ["jira/search"] and not report.replaced and len(searches) == 4
    assert searches.get("slack/search") == slack
    report = searches.add([Tool("search", "Search the web")])  # no namespace: its key is the bare name
    assert report.added == ["search"] and searches.get("search").namespace is None  # a qualified name wins
    with pytest.raises(BankError, match="repeat in this batch: github/search"):
        searches.add([changed, changed])


def test_a_file_may_hold_the_same_name_in_two_namespaces(write_json):
    objects = [t.to_dict() for t in two_searches()]
    tools, _ = load_file(write_json("both.json", objects))
    assert [t.qualified_name for t in tools] == ["github/search", "slack/search"]
    with pytest.raises(Exception, match="'github/search'.*appears twice"):
        load_file(write_json("twice.json", [objects[0], objects[0]]))


# -- the CLI ---------------------------------------------------------------------------------------
@pytest.fixture
def cli(tmp_path, write_json):
    runner = CliRunner()
    path = tmp_path / "clibank"
    assert runner.invoke(main, ["--bank", str(path), "init", "--embedder", "hash:64"]).exit_code == 0

    def run(*args):
        return runner.invoke(main, ["--bank", str(path), *map(str, args)])

    run.path = path
    assert run("add", write_json("both.json", [t.to_dict() for t in two_searches()])).exit_code == 0
    return run


def test_cli_shows_qualified_names(cli, write_json, tmp_path):
    lines = cli("list").output.splitlines()
    assert [line.split("\t")[:2] for line in lines] == [["github/search", "github"], ["slack/search", "slack"]]
    hits = json.loads(cli("search", "search slack messages", "--json").output)
    assert {h["name"] for h in hits} == {"github/search", "slack/search"}
    assert {(h["tool"]["name"], h["tool"]["namespace"]) for h in hits} == {("search", "github"), ("search", "slack")}
    assert "slack/search" in cli("search", "slack messages", "--mode", "bm25", "-k", "1").output
    shown = cli("show", "search")
    assert shown.exit_code == 1
    assert (
        f"tool name 'search' is ambiguous in bank {cli.path}: it is 'github/search', 'slack/search'; give the "
        "qualified name (namespace/name)" in shown.output
    )
    assert json.loads(cli("show", "github__search", "--json").output)["namespace"] == "github"
    assert json.loads(cli("show", "slack/search", "--json", "--format", "openai").output)["function"]["name"] == (
        "slack__search"
    )
    # --namespace puts the file's tool in github: the same qualified name, so a clash without --replace
    result = cli("add", "--namespace", "github", write_json("one.json", [{"name": "search", "description": "Other"}]))
    assert result.exit_code == 1
    assert "tool 'github/search' is already in the bank; use --replace to overwrite; nothing was added" in result.output
    removed = cli("remove", "search")
    assert removed.exit_code == 1 and "'search' is ambiguous" in removed.output
    assert cli("remove", "slack/search").exit_code == 0
    assert [line.split("\t")[0] for line in cli("list").output.splitlines()] == ["github/search"]


def test_cli_export_then_import_gives_the_same_tools(cli, tmp_path):
    exported = cli("export", "--format", "openai").output
    assert [t["function"]["name"] for t in json.loads(exported)] == ["github__search", "slack__search"]
    plain = tmp_path / "plain.json"
    assert cli("export", "-o", plain).exit_code == 0
    again = CliRunner().invoke(main, ["--bank", str(tmp_path / "again"), "import", "--embedder", "hash:64", str(plain)])
    assert again.exit_code == 0, again.output
    assert list(ToolBank.load(tmp_path / "again")) == list(ToolBank.load(cli.path)) == two_searches()


# -- version 1 -------------------------------------------------------------------------------------
V1_SCHEMA = """
CREATE TABLE tools (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    namespace TEXT,
    tags TEXT NOT NULL,
    description TEXT NOT NULL,
    parameters TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    embedding BLOB NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX tools_text_hash ON tools (text_hash);
CREATE INDEX tools_namespace ON tools (namespace);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
FACTORY = "IDMap2,Flat"


def v1_tools() -> list[Tool]:
    return weather_tools() + [Tool("calculator", "Evaluate a math expression", {})]


def write_v1_bank(path, embedder) -> np.ndarray:
    """A bank as toolbank format 1 wrote it: the tools of `v1_tools` (ids 1-5; a sixth tool was removed, so
    AUTOINCREMENT's counter is at 6), the generation at 7 and a saved index of that generation. Returns the
    tools' embeddings."""
    path.mkdir()
    tools = v1_tools()
    vectors = embedder.encode([t.text for t in tools + [Tool("dropped", "Removed later")]])
    db = sqlite3.connect(path / "bank.sqlite")
    db.executescript(V1_SCHEMA)
    meta = {"format_version": "1", "embedder": embedder.id, "dim": str(embedder.dim), "index_factory": FACTORY}
    db.executemany("INSERT INTO meta VALUES (?, ?)", list((meta | {"generation": "7"}).items()))
    for tool, vector in zip(tools + [Tool("dropped", "Removed later")], vectors):
        db.execute(
            "INSERT INTO tools (name, namespace, tags, description, parameters, text_hash, embedding, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1.0, 1.0)",
            (
                tool.name,
                tool.namespace,
                json.dumps(list(tool.tags)),
                tool.description,
                json.dumps(tool.parameters),
                tool.text_hash,
                vector.astype(np.float32).tobytes(),
            ),
        )
    db.execute("DELETE FROM tools WHERE name = 'dropped'")
    db.commit()
    db.close()
    VectorIndex.build(FACTORY, embedder.dim, np.arange(1, 6), vectors[:5], 7).save(path)
    manifest = {"format_version": 1, "embedder": embedder.id, "dim": embedder.dim, "index_factory": FACTORY}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return vectors[:5]


def test_a_version_1_bank_is_migrated_when_opened(tmp_path, embedder):
    vectors = write_v1_bank(tmp_path / "old", embedder)
    bank = ToolBank.load(tmp_path / "old", embedder)
    assert json.loads((bank.path / "manifest.json").read_text())["format_version"] == 2
    assert bank.store.get_meta("format_version") == "2" and not bank.store.needs_migration()
    indexes = {r[0] for r in bank.store.db.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'tools'")}
    assert {"tools_name", "tools_text_hash", "tools_namespace"} <= indexes
    # every tool, with its row id, vector and qualified name
    assert list(bank) == v1_tools()
    assert {i: t.qualified_name for i, t in bank.store.tools().items()} == {
        1: "weather/get_weather",
        2: "weather/get_forecast",
        3: "files/pdf_to_text",
        4: "mail/send_email",
        5: "calculator",
    }
    np.testing.assert_array_equal(bank.vectors([t.qualified_name for t in v1_tools()]), vectors)
    # the ids, vectors and texts did not change: the generation stays, and the saved index is still current
    assert bank.store.generation == 7
    assert VectorIndex.load(bank.path, FACTORY, 7, len(bank)) is not None
    fresh = ToolBank.create(tmp_path / "fresh", embedder)
    fresh.add(v1_tools())
    for query in ("weather forecast in Paris", "convert a pdf", "2 + 2"):
        for mode in ("dense", "bm25", "hybrid"):
            got = [(h.name, round(h.score, 5)) for h in bank.search(query, k=5, mode=mode)]
            assert got == [(h.name, round(h.score, 5)) for h in fresh.search(query, k=5, mode=mode)]
    assert bank.get("get_weather").namespace == "weather"
    # names are no longer unique, and a removed tool's id is never reused
    report = bank.add(two_searches())
    assert report.added == ["github/search", "slack/search"]
    assert sorted(bank.store.tools())[-2:] == [7, 8] and index_ids(bank) == store_ids(bank)
    bank.close()
    again = ToolBank.load(tmp_path / "old", embedder)  # already version 2: opened as it is
    assert len(again) == 7 and again.store.generation == 8


def test_a_version_1_bank_that_cannot_be_written_is_a_clear_error(tmp_path, embedder, monkeypatch):
    write_v1_bank(tmp_path / "old", embedder)

    def read_only(self):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(Store, "migrate", read_only)
    with pytest.raises(BankError) as info:
        ToolBank.load(tmp_path / "old", embedder)
    db = tmp_path / "old" / "bank.sqlite"
    assert str(info.value) == (
        f"{db} is a version-1 bank (tool names unique across namespaces); this toolbank reads version 2 and "
        "upgrades it once, in place, but cannot write it (attempt to write a readonly database). Open it once "
        f"with write access to the folder and the file (e.g. `toolbank --bank {tmp_path / 'old'} stats` as its "
        "owner), or copy the folder somewhere writable and use the copy"
    )
    assert json.loads((tmp_path / "old" / "manifest.json").read_text())["format_version"] == 1
    monkeypatch.undo()
    assert len(ToolBank.load(tmp_path / "old", embedder)) == 5  # once it can be written, it is upgraded
