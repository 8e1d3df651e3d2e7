"""Fault injection on a bank's files: processes killed (SIGKILL) at chosen points of a write, damaged index and
database files. After each, the next command must work or say clearly what is wrong, never leave a folder that
no command accepts or answer from garbage."""

import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from helpers import index_ids, store_ids, weather_tools

from toolbank import BankError, HashEmbedder, Tool, ToolBank
from toolbank.cli import main
from toolbank.index import VectorIndex

# Runs `toolbank ARGV...` in a fresh process that SIGKILLs itself on the Nth call of one function (a real
# kill -9 at a chosen point: no cleanup, no finally blocks, no atexit); with $CRASH_RAISE it raises
# sqlite3.OperationalError("database or disk is full") there instead (a failure the program sees).
CRASHER = r"""
import importlib, os, signal, sqlite3, sys
spec, nth, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
module, _, attr = spec.partition(":")
owner = importlib.import_module(module)
*parents, name = attr.split(".")
for parent in parents:
    owner = getattr(owner, parent)
original, calls = getattr(owner, name), [0]
def crashing(*args, **kwargs):
    calls[0] += 1
    if calls[0] == nth:
        if os.environ.get("CRASH_RAISE"):
            raise sqlite3.OperationalError("database or disk is full")
        os.kill(os.getpid(), signal.SIGKILL)
    return original(*args, **kwargs)
setattr(owner, name, crashing)
from toolbank.cli import main
main(argv, prog_name="toolbank")
"""

# (function, which call): the moments of an add at which the process dies.
FIRST_ADD_KILLS = [
    ("toolbank.store:Store.__init__", 1),  # the bank's folder made, no database yet
    ("toolbank.store:Store.set_meta", 3),  # inside the transaction that writes the bank's metadata
    ("toolbank.bank:atomic_write", 1),  # metadata committed, before the manifest
    ("os:replace", 1),  # the manifest's temporary written, not yet renamed
    ("toolbank.store:Store.upsert", 40),  # inside the transaction that adds the tools
    ("toolbank.index:VectorIndex.save", 1),  # the tools committed, before the index is saved
    ("os:replace", 3),  # the index saved, index.json's temporary not yet renamed
    ("os:rename", 1),  # the new bank complete, before it is renamed into place
]


def _tools_file(tmp_path, n=120, name="tools.jsonl"):
    path = tmp_path / name
    path.write_text(
        "".join(
            json.dumps({"name": f"tool_{i}", "description": f"Tool number {i} does task {i % 17}"}) + "\n"
            for i in range(n)
        )
    )
    return path


def _killed(tmp_path, spec, nth, *argv, raise_instead=False):
    """Run `toolbank ARGV` and kill it at the `nth` call of `spec`; the exit status (-9 when it was killed), or
    with `raise_instead` the finished process."""
    env = os.environ | {"HF_HUB_OFFLINE": "1"} | ({"CRASH_RAISE": "1"} if raise_instead else {})
    proc = subprocess.run(
        [sys.executable, "-c", CRASHER, spec, str(nth), *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return proc if raise_instead else proc.returncode


def _temporaries(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp")) if folder.exists() else []


def _run(*argv):
    return CliRunner().invoke(main, [str(a) for a in argv])


def _check_recovers(tmp_path, bank_path, tools_file, n):
    """`add` then `list` work; the bank holds the `n` tools; no temporary is left over."""
    result = (
        _run("--bank", bank_path, "add", "--embedder", "hash:32", tools_file)
        if not (bank_path / "manifest.json").exists()
        else _run("--bank", bank_path, "add", tools_file)
    )
    assert result.exit_code == 0, result.output
    result = _run("--bank", bank_path, "list", "--json")
    assert result.exit_code == 0, result.output
    assert sorted(t["name"] for t in json.loads(result.output)) == sorted(f"tool_{i}" for i in range(n))
    bank = ToolBank.load(bank_path)
    assert index_ids(bank) == store_ids(bank) and len(bank) == n
    bank.close()
    assert _temporaries(bank_path) == [] and _temporaries(tmp_path) == []


# -- 2. a crash during the first add to a new path ---------------------------------------------------------
@pytest.mark.parametrize("empty_folder", [False, True], ids=["new-path", "empty-folder"])
@pytest.mark.parametrize("spec, nth", FIRST_ADD_KILLS, ids=[f"{s.split(':')[1]}#{n}" for s, n in FIRST_ADD_KILLS])
def test_first_add_killed_at_any_point_leaves_a_path_the_next_add_accepts(tmp_path, spec, nth, empty_folder):
    bank_path, tools_file = tmp_path / "bank", _tools_file(tmp_path)
    if empty_folder:
        bank_path.mkdir()
    code = _killed(tmp_path, spec, nth, "--bank", bank_path, "add", "--embedder", "hash:32", tools_file)
    assert code == -signal.SIGKILL
    # Either finished or nothing: the path is as it was (absent, or the empty folder), never half a bank.
    assert bank_path.exists() == empty_folder
    assert not empty_folder or sorted(p.name for p in bank_path.iterdir()) == []
    _check_recovers(tmp_path, bank_path, tools_file, 120)


@pytest.mark.parametrize("delay", [0.05, 0.15, 0.3, 0.6])
def test_first_add_killed_after_a_delay(tmp_path, delay):
    """kill -9 from outside at a time, not a chosen call: whatever it hits, the next add and list work."""
    bank_path, tools_file = tmp_path / "bank", _tools_file(tmp_path, 3000)
    ready = "import sys; print('ready', flush=True); from toolbank.cli import main; main(sys.argv[1:])"
    # toolbank's imports first (numpy, faiss), so that the delay lands in the add itself.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import toolbank.bank, toolbank.cli; " + ready,
            "--bank",
            str(bank_path),
            "add",
            "--embedder",
            "hash:32",
            str(tools_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout.readline().strip() == b"ready"
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # Absent, or a whole bank (when the add had finished its rename): never half of one.
    assert not bank_path.exists() or (bank_path / "manifest.json").is_file()
    _check_recovers(tmp_path, bank_path, tools_file, 3000)


def test_folder_an_earlier_version_left_unfinished_is_created_afresh(tmp_path):
    """A first add killed by toolbank before this fix left a 0-byte bank.sqlite, its journal and no manifest."""
    bank_path = tmp_path / "bank"
    bank_path.mkdir()
    (bank_path / "bank.sqlite").write_bytes(b"")
    (bank_path / "bank.sqlite-journal").write_bytes(b"\0" * 512)
    (bank_path / "bank.lock").write_bytes(b"")
    _check_recovers(tmp_path, bank_path, _tools_file(tmp_path), 120)
    # A folder with a file that is not ours is still refused, and left alone.
    other = tmp_path / "other"
    other.mkdir()
    (other / "bank.sqlite").write_bytes(b"")
    (other / "notes.txt").write_text("mine")
    result = _run("--bank", other, "add", "--embedder", "hash:32", tmp_path / "tools.jsonl")
    assert result.exit_code == 1 and "not an empty folder" in result.output
    assert sorted(p.name for p in other.iterdir()) == ["bank.sqlite", "notes.txt"]


# -- 10. kills and no-ops on an existing bank --------------------------------------------------------------
def test_add_re_run_after_a_kill_after_its_commit_is_unchanged(tmp_path):
    bank_path, tools_file = tmp_path / "bank", _tools_file(tmp_path)
    ToolBank.create(bank_path, "hash:32").close()
    assert _killed(tmp_path, "toolbank.index:VectorIndex.save", 1, "--bank", bank_path, "add", tools_file) == -9
    assert len(ToolBank.load(bank_path)) == 120  # committed before the kill
    result = _run("--bank", bank_path, "add", tools_file)  # the user runs the same command again
    assert result.exit_code == 0, result.output
    assert "added 0, replaced 0, unchanged 120" in result.output
    bank = ToolBank.load(bank_path)
    assert index_ids(bank) == store_ids(bank)
    # A different tool under a name already taken still needs --replace.
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps([{"name": "tool_3", "description": "Something else"}]))
    result = _run("--bank", bank_path, "add", changed)
    assert result.exit_code == 1 and "'tool_3' is already in the bank" in result.output and "--replace" in result.output


@pytest.mark.parametrize("nth, left", [(1, ".index.faiss."), (2, ".index.json.")])
def test_temporaries_of_a_killed_writer_are_cleared_on_open(tmp_path, nth, left):
    bank_path, tools_file = tmp_path / "bank", _tools_file(tmp_path)
    ToolBank.create(bank_path, "hash:32").close()
    assert _killed(tmp_path, "os:replace", nth, "--bank", bank_path, "add", tools_file) == -9
    assert [n for n in _temporaries(bank_path) if n.startswith(left)]  # the kill left one
    result = _run("--bank", bank_path, "list")
    assert result.exit_code == 0, result.output
    assert _temporaries(bank_path) == []
    bank = ToolBank.load(bank_path)
    assert len(bank) == 120 and index_ids(bank) == store_ids(bank)


def test_temporaries_are_kept_while_a_writer_holds_the_lock(tmp_path):
    import fcntl

    bank = ToolBank.create(tmp_path / "bank", HashEmbedder(16))
    (bank.path / ".index.json.999999.tmp").write_text("{}")
    with open(bank.path / "bank.lock", "a") as lock:  # a writer at work (its temporaries are in use)
        fcntl.flock(lock, fcntl.LOCK_EX)
        ToolBank.load(bank.path).close()
        assert _temporaries(bank.path) == [".index.json.999999.tmp"]
        fcntl.flock(lock, fcntl.LOCK_UN)
    ToolBank.load(bank.path).close()
    assert _temporaries(bank.path) == []


def test_add_that_changes_nothing_keeps_generation_and_index(tmp_path):
    bank = ToolBank.create(tmp_path / "bank", HashEmbedder(32))
    bank.add(weather_tools())
    generation, saved = bank.store.generation, (bank.path / "index.json").read_text()
    report = bank.add(weather_tools())
    assert report.unchanged == [t.qualified_name for t in weather_tools()] and not report.added
    assert bank.store.generation == generation
    assert (bank.path / "index.json").read_text() == saved
    # The saved index is still current: another process loads it instead of rebuilding.
    assert VectorIndex.load(bank.path, bank.index_factory, bank.store.generation, len(bank)) is not None
    bank.add([weather_tools()[0]], replace=True)  # identical, even with --replace
    assert bank.store.generation == generation


@pytest.mark.parametrize("existed", [False, True], ids=["new-path", "empty-folder"])
def test_failed_first_add_leaves_nothing(tmp_path, existed):
    bank_path, tools_file = tmp_path / "bank", _tools_file(tmp_path)
    if existed:
        bank_path.mkdir()
    # The disk fills up while the tools are written.
    proc = _killed(
        tmp_path,
        "toolbank.store:Store.upsert",
        7,
        "--bank",
        bank_path,
        "add",
        "--embedder",
        "hash:32",
        tools_file,
        raise_instead=True,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "SQLite failed: database or disk is full" in proc.stderr
    assert bank_path.exists() == existed and not (existed and any(bank_path.iterdir()))
    assert _temporaries(tmp_path) == []
    _check_recovers(tmp_path, bank_path, tools_file, 120)


def test_failed_first_add_through_the_library_leaves_nothing(tmp_path):
    with pytest.raises(BankError, match="repeat"):
        ToolBank.open_and_add(tmp_path / "api", [Tool("x", "one"), Tool("x", "two")], embedder=HashEmbedder(8))
    assert not (tmp_path / "api").exists()


# -- 3. an index whose header is fine and whose body is not -----------------------------------------------
def test_index_with_a_damaged_body_is_rebuilt_with_a_warning(tmp_path, caplog):
    embedder = HashEmbedder(64)
    bank = ToolBank.create(tmp_path / "bank", embedder)
    bank.add(weather_tools() + [Tool(f"tool_{i}", f"Tool number {i} does task {i % 17}") for i in range(300)])
    bank.close()
    path = bank.path / "index.faiss"
    data = bytearray(path.read_bytes())
    size = len(data)
    rng = random.Random(7)
    start = size // 4  # past the header; the vectors (300 x 64 floats), not the id map at the end
    data[start : start + size // 3] = bytes(rng.getrandbits(8) for _ in range(size // 3))
    path.write_bytes(bytes(data))
    assert faiss_reads(path)  # the damage is in the body: FAISS itself reads it without complaint

    fresh_path = tmp_path / "fresh"
    shutil.copytree(bank.path, fresh_path)
    for name in ("index.faiss", "index.json"):
        (fresh_path / name).unlink()
    queries = ["weather forecast tomorrow", "send an email", "tool number 117 task 15", "pdf to text"]
    fresh = ToolBank.load(fresh_path, embedder)  # rebuilt from bank.sqlite
    expected = [[(h.name, round(h.score, 5)) for h in fresh.search(q, k=5, mode="dense")] for q in queries]

    with caplog.at_level(logging.WARNING, logger="toolbank.index"):
        again = ToolBank.load(bank.path, embedder)
        got = [[(h.name, round(h.score, 5)) for h in again.search(q, k=5, mode="dense")] for q in queries]
    assert got == expected
    assert "does not match the checksum" in caplog.text and "rebuilding" in caplog.text
    assert index_ids(again) == store_ids(again)
    meta = json.loads((bank.path / "index.json").read_text())
    import hashlib

    assert meta["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()  # written back, sound


def faiss_reads(path) -> bool:
    import faiss

    return faiss.read_index(str(path)).ntotal == 304


# -- 4. a database with damaged pages -----------------------------------------------------------------------
CORRUPT_COMMANDS = [
    ["list"],
    ["list", "--json"],
    ["show", "tool_5"],
    ["search", "task 3", "--mode", "bm25"],
    ["search", "task 3", "--mode", "dense"],
    ["search", "task 3"],
    ["export"],
    ["export", "--format", "openai"],
    ["stats"],
    ["stats", "--json"],
    ["remove", "tool_1"],
    ["reindex"],
    ["add", "NEW"],
    ["add", "--replace", "NEW"],
    ["serve"],
]


@pytest.fixture
def corrupt_bank(tmp_path):
    """A bank of 220 tools whose bank.sqlite has 64 KB of random bytes in the middle; yields its path."""
    bank = ToolBank.create(tmp_path / "bank", HashEmbedder(384))  # the default embedder's dim: a 0.5 MB file
    bank.add([Tool(f"tool_{i}", f"Tool number {i} handles task {i % 97} for area {i % 13}") for i in range(220)])
    bank.close()
    db = bank.path / "bank.sqlite"
    data = bytearray(db.read_bytes())
    assert len(data) > 3 * 65536
    rng = random.Random(0)
    middle = len(data) // 2
    data[middle : middle + 65536] = bytes(rng.getrandbits(8) for _ in range(65536))
    db.write_bytes(bytes(data))
    return bank.path


@pytest.mark.parametrize("command", CORRUPT_COMMANDS, ids=" ".join)
def test_damaged_database_is_one_clear_error_for_every_command(corrupt_bank, tmp_path, command):
    new = tmp_path / "new.json"
    new.write_text(json.dumps([{"name": "fresh_tool", "description": "A new tool"}]))
    before = (corrupt_bank / "bank.sqlite").read_bytes()
    result = CliRunner().invoke(main, ["--bank", str(corrupt_bank)] + [str(new) if a == "NEW" else a for a in command])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # a message, not an exception
    assert "Traceback" not in result.output
    assert "bank.sqlite is damaged" in result.output and "Restore the bank folder from a backup" in result.output
    assert "toolbank --bank NEW add tools.json" in result.output
    assert (corrupt_bank / "bank.sqlite").read_bytes() == before  # nothing was written


def test_damaged_database_in_a_real_process_and_the_library(corrupt_bank):
    for command in (["list"], ["stats"], ["search", "task 3", "--mode", "bm25"]):
        proc = subprocess.run(
            [sys.executable, "-m", "toolbank", "--bank", str(corrupt_bank), *command],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert "bank.sqlite is damaged" in proc.stderr
    with pytest.raises(BankError, match="integrity check"):
        ToolBank.load(corrupt_bank)
