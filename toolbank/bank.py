"""`ToolBank`: a folder holding a catalog of tools, their embeddings and a search index.

```
bank/  manifest.json  {format_version, embedder, dim, index_factory}  (written last: a mirror of the store)
       bank.sqlite    the source of truth; tools keyed by qualified name (`namespace/name`)
       index.faiss    derived; rebuilt when missing, corrupt or stale (index.json: its generation and sha256)
       bm25.npz       derived: the BM25 index, with the generation it was built from (rebuilt when stale)
       bank.lock      serialises writers across processes (every write into the folder holds it)
```

A new bank is built in a temporary sibling folder (`.NAME.PID.tmp`) and renamed into place when it is complete
(for `open_and_add`: with its first tools), so a crash or an error while creating leaves the path as it was.
Temporaries of dead writers are cleared when a bank is opened. `bank.sqlite` is checked (`PRAGMA quick_check`)
when a bank is opened: a damaged file is one `BankError` that says how to restore, not a traceback later.

A tool is named by its qualified name (`github/search`; `search` when it has no namespace), by its bare name when
only one tool has it, or by the `github__search` form the OpenAI and Anthropic formats write. Format version 2;
a version-1 bank (names unique across namespaces) is upgraded in place, under the write lock, when opened.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from toolbank.embed import DEFAULT_EMBEDDER, Embedder, load_embedder
from toolbank.index import VectorIndex, resolve_factory
from toolbank.paths import atomic_write, default_bank_path
from toolbank.search import MODES, RRF_K, BM25Index, SearchHit, reciprocal_rank_fusion
from toolbank.store import Store
from toolbank.tool import Tool, flag_suspicious, short

FORMAT_VERSION = 2  # 1: tool names unique across namespaces (upgraded when opened)
LARGE_BANK = 50_000  # above this, suggest an HNSW index
HYBRID_DEPTH = 100  # how deep each ranking goes before fusion


class BankError(ValueError):
    """A bank cannot be opened or changed as asked. The message says what to do."""


class NameClash(BankError):
    """Tools of these qualified names are already in the bank (and `replace` was not given)."""

    def __init__(self, names: Sequence[str], where: str = ""):
        self.names, self.where = list(names), where
        super().__init__(self.message("replace=True"))

    def message(self, how: str) -> str:
        """The message, with `how` to overwrite (the CLI says `--replace`)."""
        return (
            f"tool {short(self.names[0])!r} is already in the bank{self.where}"
            + (f" (and {len(self.names) - 1} more)" if len(self.names) > 1 else "")
            + f"; use {how} to overwrite; nothing was added"
        )


class _Taken(Exception):
    """Another process created a bank at the path while this one was building its own."""


# What a bank folder holds; anything else in a folder without a manifest means it is not ours to clear.
OWN_FILES = frozenset(
    {
        "manifest.json",
        "bank.sqlite",
        "bank.sqlite-wal",
        "bank.sqlite-shm",
        "bank.sqlite-journal",
        "bank.lock",
        "index.faiss",
        "index.json",
        "bm25.npz",
    }
)


def _damaged(db: Path | str, detail: str) -> BankError:
    detail = detail if len(detail) <= 300 else detail[:300] + "..."
    return BankError(
        f"{db} is damaged or not a bank database ({detail}). Restore the bank folder from a backup, "
        "or build a new bank from an export of the tools: `toolbank --bank NEW add tools.json` (export "
        f"from an earlier copy of the bank with `toolbank --bank COPY export -o tools.json`; "
        f"`sqlite3 {db} .recover` may salvage rows)"
    )


def database_error(path: Path | None, error: sqlite3.DatabaseError) -> BankError:
    """The `BankError` for a SQLite error met while using the bank at `path`: a damaged file says so and how to
    restore it; another failure (locked, disk I/O) names the file and SQLite's reason."""
    db = Path(path) / "bank.sqlite" if path is not None else "bank.sqlite"
    if type(error) is sqlite3.DatabaseError or getattr(error, "sqlite_errorname", "") in (
        "SQLITE_CORRUPT",
        "SQLITE_NOTADB",
    ):
        return _damaged(db, str(error))
    return BankError(f"{db}: SQLite failed: {error}")


def _temp_pid(name: str) -> int | None:
    """The process id in the name of an `atomic_path` temporary (`.NAME.PID.tmp`), else None."""
    parts = name.split(".")
    return int(parts[-2]) if len(parts) >= 4 and parts[0] == "" and parts[-1] == "tmp" and parts[-2].isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _only_ours(folder: Path) -> bool:
    return all(p.name in OWN_FILES or _temp_pid(p.name) is not None for p in folder.iterdir())


@contextmanager
def _write_lock_if_free(folder: Path) -> Iterator[bool]:
    """Hold a bank folder's write lock for the block if no writer holds it now: yields True; False, holding
    nothing, when a writer does or the folder is read-only (for work that can wait for a later process)."""
    try:
        lock = open(folder / "bank.lock", "a")
    except OSError:  # a read-only folder
        lock = None
    if lock is None:
        yield False  # outside the except block, so that an error in the body is not chained to this one
        return
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = True
        except OSError:
            held = False
        try:
            yield held
        finally:
            if held:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _clear_stale_temps(folder: Path) -> None:
    """Remove the temporaries (`.NAME.PID.tmp`) that writers killed mid-write left in a bank folder. Every write
    there holds the write lock, so while this process holds it no temporary is in use; when another writer
    holds it, they are left for a later open."""
    if not any(_temp_pid(p.name) is not None for p in folder.iterdir()):
        return
    with _write_lock_if_free(folder) as held:
        if held:
            for p in folder.iterdir():
                if _temp_pid(p.name) is not None:
                    _remove(p)


def _clear_stale_builds(path: Path) -> None:
    """Remove the folders (`.NAME.PID.tmp` next to the bank) in which processes now dead were creating it."""
    try:
        siblings = list(path.parent.glob(f".{path.name}.*.tmp"))
    except OSError:
        return
    for p in siblings:
        pid = _temp_pid(p.name)
        if pid is not None and pid != os.getpid() and not _alive(pid) and p.is_dir() and _only_ours(p):
            shutil.rmtree(p, ignore_errors=True)


def _unfinished(path: Path) -> bool:
    """Whether `path` is a folder that a creation killed midway left (an earlier toolbank built a new bank in
    place): no manifest, only a bank's own files, and no tools in its database."""
    if not path.is_dir() or path.is_symlink() or (path / "manifest.json").exists() or not any(path.iterdir()):
        return False
    if not _only_ours(path):
        return False
    db = path / "bank.sqlite"
    if not db.exists() or db.stat().st_size == 0:
        return True
    try:
        con = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            return con.execute("SELECT COUNT(*) FROM tools").fetchone()[0] == 0
        finally:
            con.close()
    except sqlite3.Error:
        return False


@dataclass
class AddReport:
    """What `ToolBank.add` did."""

    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # by `prune`
    embedded: int = 0  # texts that went through the embedder (unchanged texts reuse their embedding)
    flagged: dict[str, str] = field(default_factory=dict)  # name -> the phrase addressing the model (tagged suspicious)


class ToolBank:
    """A catalog of tools with dense, BM25 and hybrid search. Open with `create`, `load` or `open`."""

    def __init__(self, path: Path, store: Store, embedder: Embedder | None = None):
        self.path, self.store = path, store
        self._embedder = embedder
        self._index: VectorIndex | None = None
        self._bm25: tuple[int, BM25Index] | None = None
        self._filters: tuple[int, dict] | None = None  # (generation, {filter: allowed row ids})

    # -- opening --------------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path, embedder: str | Embedder = DEFAULT_EMBEDDER, index: str = "flat") -> ToolBank:
        """Create an empty bank in `path` (a new or empty folder).

        Args:
            path: Folder of the bank.
            embedder: An embedder spec (see `toolbank.embed`) or an `Embedder`.
            index: `flat`, `hnsw` or a FAISS factory string.
        """
        path = Path(path)
        model, factory = cls._new_settings(path, embedder, index)
        try:
            with cls._building(path, model, factory):
                pass
        except _Taken:
            raise BankError(f"{path} is already a bank; open it with ToolBank.load") from None
        return cls.load(path, model)

    @classmethod
    def open_and_add(
        cls,
        path: str | Path | None,
        tools: Iterable[Tool],
        *,
        embedder: str | Embedder | None = None,
        index: str = "flat",
        **options,
    ) -> tuple[ToolBank, AddReport]:
        """`add` `tools` (with `options`, see `add`) to the bank at `path` (default: `default_bank_path()`),
        creating it when the folder is new: a new bank appears only once it holds the tools, so a failed or
        interrupted first add leaves the path as it was. Returns the bank and the `AddReport`."""
        path = Path(path) if path else default_bank_path()
        if not (path / "manifest.json").exists():
            model, factory = cls._new_settings(path, embedder or DEFAULT_EMBEDDER, index)
            try:
                with cls._building(path, model, factory) as bank:
                    report = bank.add(tools, **options)
                return cls.load(path, model), report
            except _Taken:  # another process created it meanwhile: add to that one
                pass
        bank = cls.load(path, embedder)
        return bank, bank.add(tools, **options)

    @staticmethod
    def _new_settings(path: Path, embedder: str | Embedder, index: str) -> tuple[Embedder, str]:
        """Check that a bank can be created at `path`; its embedder and index factory."""
        if (path / "manifest.json").exists():
            raise BankError(f"{path} is already a bank; open it with ToolBank.load")
        if path.exists() and (not path.is_dir() or any(path.iterdir())) and not _unfinished(path):
            raise BankError(f"{path} exists and is not an empty folder; choose a new folder for the bank")
        model = load_embedder(embedder) if isinstance(embedder, str) else embedder
        factory = resolve_factory(index)
        VectorIndex.build(factory, model.dim, np.zeros(0, np.int64), np.zeros((0, model.dim), np.float32), 0)
        return model, factory

    @classmethod
    @contextmanager
    def _building(cls, path: Path, model: Embedder, factory: str) -> Iterator[ToolBank]:
        """A new empty bank in a temporary sibling of `path`, renamed to `path` when the block ends without an
        error; on an error (or a crash) `path` stays as it was. `_Taken` when another process made `path` a bank
        meanwhile. The rename never replaces a folder that has files (but a creation an earlier toolbank left
        unfinished, see `_unfinished`)."""
        path = path.resolve() if path.is_symlink() else path  # a link to an empty folder: build next to that
        path.parent.mkdir(parents=True, exist_ok=True)
        _clear_stale_builds(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        _remove(tmp)
        tmp.mkdir()
        bank = None
        try:
            store = Store(tmp / "bank.sqlite")
            bank = cls(tmp, store, model)
            with store.transaction():
                store.set_meta("format_version", str(FORMAT_VERSION))
                store.set_meta("embedder", model.id)
                store.set_meta("dim", str(model.dim))
                store.set_meta("index_factory", factory)
            bank._write_manifest()
            yield bank
            bank.close()  # the last connection: SQLite folds the WAL into bank.sqlite
            if _unfinished(path):
                for p in path.iterdir():
                    _remove(p)
            try:
                os.rename(tmp, path)  # a folder onto a missing or empty folder, in one step
            except OSError:
                if (path / "manifest.json").exists():
                    raise _Taken from None
                raise BankError(f"{path} exists and is not an empty folder; choose a new folder for the bank") from None
        finally:
            if bank is not None:
                bank.close()
            _remove(tmp)

    @classmethod
    def load(cls, path: str | Path, embedder: str | Embedder | None = None) -> ToolBank:
        """Open an existing bank. A version-1 bank is upgraded to version 2 in place first (`BankError` when it
        cannot be written).

        Args:
            path: Folder of the bank.
            embedder: Optional; when given it must be the bank's own embedder (else `BankError`).
                By default the bank's embedder is loaded on first use.
        """
        path = Path(path)
        if not (path / "manifest.json").is_file() or not (path / "bank.sqlite").is_file():
            raise BankError(
                f"{path} is not a bank (no manifest.json and bank.sqlite); create one with "
                "`toolbank --bank PATH add FILE` or ToolBank.create(PATH)"
            )
        try:
            manifest = json.loads((path / "manifest.json").read_text())
        except (OSError, ValueError) as e:
            raise BankError(f"{path / 'manifest.json'} is unreadable: {e}") from None
        version = manifest.get("format_version") if isinstance(manifest, dict) else None
        if version not in (1, FORMAT_VERSION):
            raise BankError(
                f"{path / 'manifest.json'}: field 'format_version' is {version!r}; this toolbank "
                f"reads version {FORMAT_VERSION} (and upgrades version 1)"
            )
        try:
            bank = cls(path, Store(path / "bank.sqlite"))
            _ = bank.dim  # reads the store's metadata (TypeError when it has none)
            problem = bank.store.check()
        except sqlite3.DatabaseError as e:
            raise database_error(path, e) from None
        except TypeError:  # no dim in the metadata
            raise _damaged(path / "bank.sqlite", "it holds no bank metadata") from None
        if problem is not None:
            bank.close()
            raise _damaged(path / "bank.sqlite", f"SQLite's integrity check: {problem}")
        if version == 1 or bank.store.needs_migration():
            bank._upgrade()
        _clear_stale_temps(path)
        _clear_stale_builds(path)
        if embedder is not None:
            model = load_embedder(embedder) if isinstance(embedder, str) else embedder
            if (model.id, model.dim) != (bank.embedder_id, bank.dim):
                raise BankError(
                    f"bank {path} was embedded with {bank.embedder_id} (dim {bank.dim}), not {model.id} "
                    f"(dim {model.dim}); re-embed it with `toolbank --bank {path} reindex --embedder {model.id}`"
                )
            bank._embedder = model
        return bank

    @classmethod
    def open(
        cls, path: str | Path | None = None, embedder: str | Embedder | None = None, index: str = "flat"
    ) -> ToolBank:
        """Load the bank at `path` (default: `default_bank_path()`), creating it when the folder is new."""
        path = Path(path) if path else default_bank_path()
        if not (path / "manifest.json").exists():
            try:
                return cls.create(path, embedder or DEFAULT_EMBEDDER, index)
            except BankError:
                if not (path / "manifest.json").exists():
                    raise
                # another process created it meanwhile
        return cls.load(path, embedder)

    def _upgrade(self) -> None:
        """Migrate a version-1 bank to version 2 in place (`Store.migrate`, one transaction), then write the
        manifest; under the write lock, so concurrent openers migrate it once. `BankError` when the files
        cannot be written (the bank is then left as it was)."""
        db = self.path / "bank.sqlite"
        try:
            with self._write_lock():
                self.store.migrate()
                self._write_manifest()
        except (OSError, sqlite3.OperationalError) as e:
            self.close()
            raise BankError(
                f"{db} is a version-1 bank (tool names unique across namespaces); this toolbank reads version "
                f"{FORMAT_VERSION} and upgrades it once, in place, but cannot write it ({e}). Open it once with "
                f"write access to the folder and the file (e.g. `toolbank --bank {self.path} stats` as its owner), "
                "or copy the folder somewhere writable and use the copy"
            ) from None
        except sqlite3.DatabaseError as e:
            self.close()
            raise database_error(self.path, e) from None

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> ToolBank:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- properties -----------------------------------------------------------------------------
    @property
    def embedder_id(self) -> str:
        return self.store.get_meta("embedder")

    @property
    def dim(self) -> int:
        return int(self.store.get_meta("dim"))

    @property
    def index_factory(self) -> str:
        return self.store.get_meta("index_factory")

    @property
    def embedder(self) -> Embedder:
        """The bank's embedder, loaded on first use."""
        if self._embedder is None:
            self._embedder = load_embedder(self.embedder_id)
        return self._embedder

    def __len__(self) -> int:
        return len(self.store)

    def __contains__(self, name: str) -> bool:
        """Whether `name` names a tool (see `get`); a bare name that several tools have is in the bank too
        (`get` then asks for the qualified name)."""
        try:
            return name in self._keys([name])
        except BankError:  # ambiguous: more than one tool has it
            return True

    def __iter__(self) -> Iterator[Tool]:
        return self.store.iter_tools()

    def get(self, name: str) -> Tool:
        """The tool `name` names: its qualified name (`github/search`; the name itself without a namespace),
        its bare name when exactly one tool has it, or the `github__search` form of the OpenAI and Anthropic
        formats. `KeyError` naming it when absent; `BankError` listing the candidates when ambiguous."""
        tool = self.store.get(name) if isinstance(name, str) else None
        if tool is None and isinstance(name, str) and (key := self._resolve(name)) is not None:
            tool = self.store.get(key)
        if tool is None:
            raise KeyError(f"no tool named {name!r} in bank {self.path}")
        return tool

    def _keys(self, names: Iterable[str]) -> dict[str, str]:
        """The qualified name each of `names` stands for (see `get`), for those that name a tool."""
        names = [n for n in dict.fromkeys(names) if isinstance(n, str)]
        found = {key: key for key in self.store.ids_by_key(names)}
        for name in names:
            if name not in found and (key := self._resolve(name)) is not None:
                found[name] = key
        return found

    def _resolve(self, name: str) -> str | None:
        """The qualified name of the one tool whose bare name, or `namespace__name` form, is `name` (which is no
        qualified name in the bank); None when none; `BankError` when several."""
        keys = [] if "/" in name else self.store.keys_named(name)
        splits = [i for i in range(1, len(name) - 2) if name.startswith("__", i)]
        if splits:
            keys += self.store.ids_by_key(f"{name[:i]}/{name[i + 2 :]}" for i in splits)
        keys = sorted(set(keys))
        if len(keys) > 1:
            listed = ", ".join(repr(k) for k in keys[:10]) + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")
            raise BankError(
                f"tool name {short(name)!r} is ambiguous in bank {self.path}: it is {listed}; "
                "give the qualified name (namespace/name)"
            )
        return keys[0] if keys else None

    # -- writing --------------------------------------------------------------------------------
    @contextmanager
    def _write_lock(self) -> Iterator[None]:
        with open(self.path / "bank.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write_manifest(self) -> None:
        manifest = {
            "format_version": FORMAT_VERSION,
            "embedder": self.embedder_id,
            "dim": self.dim,
            "index_factory": self.index_factory,
        }
        atomic_write(self.path / "manifest.json", json.dumps(manifest, indent=2) + "\n")

    def add(
        self,
        tools: Iterable[Tool],
        *,
        replace: bool = False,
        progress: bool = False,
        prune: str | None = None,
        replace_only_in: str | None = None,
    ) -> AddReport:
        """Add tools in one transaction: all of them or, on any error, none.

        Args:
            tools: Tools with qualified names (`namespace/name`) unique in the batch.
            replace: Overwrite tools of the same qualified name; without it an existing one is a `BankError`.
                A tool of the same name in another namespace is another tool: it is added beside it.
            progress: Show a progress bar while embedding.
            prune: A namespace: in the same transaction, remove its tools that are not in `tools` (to
                mirror a source that dropped some).
            replace_only_in: A namespace: overwrite tools of the same qualified name only where they are in it
                (a source re-importing its own tools); a tool of another namespace in `tools` that is already
                in the bank is a `BankError`. Checked under the write lock, so another writer cannot slip a
                clashing tool in between.

        Returns:
            An `AddReport`. A tool identical to the stored one is left as it is; a text that did not
            change is not re-embedded. A tool whose text addresses the model ("always select this tool",
            "ignore previous instructions") is stored with the tag `suspicious` and listed in `flagged`.
        """
        report = AddReport()
        tools = list(tools)
        for i, tool in enumerate(tools):
            tools[i], phrase = flag_suspicious(tool)
            if phrase is not None:
                report.flagged[tool.qualified_name] = phrase
        names = [t.qualified_name for t in tools]
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise BankError(
                f"tool names repeat in this batch: {', '.join(short(n) for n in twice[:10])}; nothing was added"
            )
        self._check_clash(tools, replace, replace_only_in)  # before embedding, so a clash fails fast
        # Embed outside the lock so two writers embed in parallel; texts already stored are reused.
        known = self.store.embeddings_by_hash(t.text_hash for t in tools)
        fresh = {t.text_hash: t.text for t in tools if t.text_hash not in known}
        vectors = dict(zip(fresh, self.embedder.encode(list(fresh.values()), progress=progress))) if fresh else {}
        report.embedded = len(fresh)
        with self._write_lock():
            existing = self._check_clash(tools, replace, replace_only_in)  # again: another writer may have added
            generation = self.store.generation
            with self.store.transaction():
                missing = [t.text_hash for t in tools if t.text_hash not in vectors]
                for text_hash, blob in self.store.embeddings_by_hash(missing).items():
                    vectors[text_hash] = np.frombuffer(blob, dtype=np.float32)
                new_ids, new_vectors = [], []
                for tool in tools:
                    old = existing.get(tool.qualified_name)
                    if old == tool:
                        report.unchanged.append(tool.qualified_name)
                        continue
                    if tool.text_hash not in vectors:  # removed by another process since we looked
                        vectors[tool.text_hash] = self.embedder.encode([tool.text])[0]
                        report.embedded += 1
                    rowid = self.store.upsert(tool, vectors[tool.text_hash])
                    (report.replaced if old else report.added).append(tool.qualified_name)
                    new_ids.append(rowid)
                    new_vectors.append(vectors[tool.text_hash])
                if prune is not None:
                    stale = self.store.tools(self.store.ids_where(prune)).values()
                    report.removed = sorted(t.qualified_name for t in stale if t.qualified_name not in set(names))
                    self.store.delete(report.removed)
            if report.added or report.replaced or report.removed:
                index = self._index
                if index is not None and index.generation == generation and not (report.replaced or report.removed):
                    index.add(np.array(new_ids), np.stack(new_vectors), self.store.generation)
                    index.save(self.path)
                else:
                    self._rebuild_index()
        return report

    def _check_clash(self, tools: list[Tool], replace: bool, replace_only_in: str | None) -> dict[str, Tool]:
        """The stored tools of the same qualified names; `NameClash` for those `add` may not overwrite."""
        existing = self.store.tools(self.store.ids_by_key([t.qualified_name for t in tools]).values())
        existing = {t.qualified_name: t for t in existing.values()}
        given = {t.qualified_name: t for t in tools}
        # A tool identical to the stored one is unchanged, not a clash (so an add re-run after a crash is a no-op).
        clash = (
            []
            if replace
            else sorted(
                n
                for n, t in existing.items()
                if t != given[n] and (replace_only_in is None or t.namespace != replace_only_in)
            )
        )
        if clash:
            raise NameClash(clash, "" if replace_only_in is None else f" outside namespace {replace_only_in!r}")
        return existing

    def set_server(self, namespace: str, command: str, env: Sequence[str] = ()) -> None:
        """Record how to start the MCP server whose tools are in `namespace` (`toolbank import --from-mcp`):
        its shell-style command line, and the names of the environment variables it is given from the
        environment of whoever starts it (their values are not stored)."""
        record = json.dumps({"command": command, "env": list(env)})
        with self._write_lock(), self.store.transaction():
            self.store.set_meta(f"server:{namespace}", record)

    def server(self, namespace: str | None) -> dict | None:
        """`{"command", "env"}` of the MCP server recorded for `namespace` (`set_server`), or None."""
        record = None if namespace is None else self.store.get_meta(f"server:{namespace}")
        return None if record is None else json.loads(record)

    def remove(self, names: Sequence[str]) -> None:
        """Remove tools by name (as `get` takes them), in one transaction; `BankError` naming the first unknown
        or ambiguous one."""
        with self._write_lock():
            found = self._keys(names)
            unknown = [n for n in names if n not in found]
            if unknown:
                raise BankError(f"no tool named {unknown[0]!r} in bank {self.path}; nothing was removed")
            with self.store.transaction():
                self.store.delete(set(found.values()))
            self._rebuild_index()

    def reindex(self, embedder: str | Embedder | None = None, index: str | None = None, progress: bool = False) -> None:
        """Re-embed every tool with `embedder` and/or rebuild the index as `index` (flat, hnsw, factory)."""
        with self._write_lock():
            if embedder is not None:
                model = load_embedder(embedder) if isinstance(embedder, str) else embedder
                rows = self.store.tools()
                vectors = model.encode([t.text for t in rows.values()], progress=progress)
                with self.store.transaction():
                    for (rowid, tool), vector in zip(rows.items(), vectors):
                        self.store.set_embedding(rowid, tool.text_hash, vector)
                    self.store.set_meta("embedder", model.id)
                    self.store.set_meta("dim", str(model.dim))
                self._embedder = model
            if index is not None:
                factory = resolve_factory(index)
                VectorIndex.build(factory, self.dim, np.zeros(0, np.int64), np.zeros((0, self.dim), np.float32), 0)
                with self.store.transaction():
                    self.store.set_meta("index_factory", factory)
            self._rebuild_index()
            self._write_manifest()

    # -- the index ------------------------------------------------------------------------------
    def _rebuild_index(self) -> VectorIndex:
        """Build the index from one consistent snapshot of the store and save it."""
        self.store.db.execute("BEGIN")
        try:
            generation = self.store.generation
            ids, vectors = self.store.embeddings(self.dim)
        finally:
            self.store.db.execute("COMMIT")
        self._index = VectorIndex.build(self.index_factory, self.dim, ids, vectors, generation)
        self._index.save(self.path)
        return self._index

    def index(self) -> VectorIndex:
        """The FAISS index at the store's current generation: in memory, from disk, or rebuilt."""
        generation = self.store.generation
        if self._index is not None and self._index.generation == generation:
            return self._index
        self._index = VectorIndex.load(self.path, self.index_factory, generation, len(self.store), warn=False)
        if self._index is None:  # missing, stale or damaged: load again under the lock (warning), else rebuild
            with self._write_lock():
                self._index = VectorIndex.load(self.path, self.index_factory, self.store.generation, len(self.store))
                if self._index is None:
                    self._rebuild_index()
        return self._index

    def _bm25_index(self) -> BM25Index:
        """The BM25 index at the store's current generation: in memory, from `bm25.npz`, or built (and saved)."""
        generation = self.store.generation
        if self._bm25 is None or self._bm25[0] != generation:
            index = BM25Index.load(self.path / "bm25.npz", generation, len(self.store))
            if index is None:
                self.store.db.execute("BEGIN")  # one snapshot: the generation and the texts it names
                try:
                    generation = self.store.generation
                    tools = self.store.tools()
                finally:
                    self.store.db.execute("COMMIT")
                index = BM25Index(list(tools), [t.text for t in tools.values()])
                self._save_bm25(index, generation)
            self._bm25 = (generation, index)
        return self._bm25[1]

    def _save_bm25(self, index: BM25Index, generation: int) -> None:
        """Save a built BM25 index for the next process, when the write lock is free at once and the store is
        still at `generation` (a writer holds the lock: it will have changed it; a read-only folder: never)."""
        with _write_lock_if_free(self.path) as held:
            if held and self.store.generation == generation:
                with suppress(OSError):
                    index.save(self.path / "bm25.npz", generation)

    def warm(self) -> None:
        """Load what a search needs, building and saving what is missing or stale: the FAISS index, the BM25
        index (`bm25.npz`) and the embedder's query path (for the default embedder, its ONNX export). Writers
        and servers call it so that the next search, in any process, starts at once."""
        if len(self):
            self.index()
            self._bm25_index()
        self.embedder.encode(["warm up"])

    # -- search ---------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        k: int = 5,
        mode: str = "hybrid",
        namespace: str | Sequence[str] | None = None,
        tags: Sequence[str] = (),
        query_vector: np.ndarray | None = None,
        exclude_tags: Sequence[str] = (),
    ) -> list[SearchHit]:
        """Rank tools for `query`.

        Args:
            query: What the agent needs to do, in words.
            k: How many hits at most.
            mode: `dense` (cosine of embeddings), `bm25` or `hybrid` (reciprocal rank fusion of both; its
                `score` is the fused sum over the best possible, and every dense or hybrid hit has its `cosine`).
            namespace: Only tools in this namespace, or in any of these (a list).
            tags: Only tools carrying all these tags.
            exclude_tags: No tool carrying any of these tags (e.g. `suspicious`, set by `add` on tools whose
                text addresses the model).
            query_vector: (dim,) unit vector to use for the dense part instead of embedding `query`
                (e.g. when queries were embedded in a batch).

        Returns:
            Hits, best first.
        """
        if mode not in MODES:
            raise BankError(f"unknown search mode {mode!r}; expected one of {', '.join(MODES)}")
        if not isinstance(query, str) or not query.strip():
            raise BankError("the query is empty; say what the tool should do")
        if k < 1:
            raise BankError(f"k must be at least 1, got {k}")
        if isinstance(tags, str) or isinstance(exclude_tags, str):
            raise BankError("tags and exclude_tags are lists of tags, not one string")
        if namespace is not None and not isinstance(namespace, str):
            namespace = tuple(dict.fromkeys(namespace))
            if not namespace or not all(isinstance(n, str) for n in namespace):
                raise BankError(f"namespace must be a name or a non-empty list of names, got {list(namespace)!r}")
        allowed = self._allowed_ids(namespace, tuple(tags), tuple(exclude_tags))
        depth = max(k, HYBRID_DEPTH) if mode == "hybrid" else k
        ranked: list[tuple[int, float]]
        cosines: dict[int, float] = {}  # row id -> the request's cosine with the tool (dense and hybrid)
        if mode in ("dense", "hybrid"):
            vector = self.embedder.encode([query])[0] if query_vector is None else query_vector  # (dim,)
            scores, ids = self.index().search(vector, depth, allowed)
            ranked = list(zip(ids.tolist(), scores.tolist()))
            cosines = dict(ranked)
        if mode in ("bm25", "hybrid"):
            scores, ids = self._bm25_index().search(query, depth, allowed)
            bm25_ranked = list(zip(ids.tolist(), scores.tolist()))
            ranked = (
                bm25_ranked
                if mode == "bm25"
                else reciprocal_rank_fusion([i for i, _ in ranked], [i for i, _ in bm25_ranked])
            )
        ranked = ranked[:k]
        if mode == "hybrid":
            ranked = [(i, s * (RRF_K + 1) / 2) for i, s in ranked]  # over the best possible: 2 / (k + 1)
        tools = self.store.tools(i for i, _ in ranked)
        ranked = [(i, s) for i, s in ranked if i in tools]
        if mode == "bm25":
            return [SearchHit(tools[i], float(s)) for i, s in ranked]
        only_bm25 = [i for i, _ in ranked if i not in cosines]  # hybrid hits outside the dense top: from the store
        if only_bm25:
            looked_up = self.vectors([tools[i].qualified_name for i in only_bm25]) @ vector
            cosines.update(zip(only_bm25, looked_up.tolist()))
        return [SearchHit(tools[i], float(s), float(cosines[i])) for i, s in ranked]

    def _allowed_ids(
        self, namespace: str | tuple[str, ...] | None, tags: tuple[str, ...], exclude_tags: tuple[str, ...]
    ) -> list[int] | None:
        """Row ids a search with these filters may return (None: any); kept per generation, as a filter such as
        MCP search's `suspicious` one applies to every query."""
        if namespace is None and not tags and not exclude_tags:
            return None
        generation = self.store.generation
        if self._filters is None or self._filters[0] != generation or len(self._filters[1]) > 64:
            self._filters = (generation, {})
        key = (namespace, tags, exclude_tags)
        if key not in self._filters[1]:
            excluded = set()
            for tag in exclude_tags:
                excluded.update(self.store.ids_where(None, [tag]))
            if namespace is None and not tags and not excluded:
                allowed = None
            else:
                ids = (
                    self.store.ids_where(namespace, tags)
                    if namespace is None or isinstance(namespace, str)
                    else sorted({i for ns in namespace for i in self.store.ids_where(ns, tags)})
                )
                allowed = [i for i in ids if i not in excluded]
            self._filters[1][key] = allowed
        return self._filters[1][key]

    def vectors(self, names: Sequence[str]) -> np.ndarray:
        """(len(names), dim) stored embeddings of the named tools (names as `get` takes them); `KeyError` naming
        a missing one, `BankError` an ambiguous one."""
        keys = self._keys(names)
        missing = [n for n in names if n not in keys]
        if missing:
            raise KeyError(f"no tool named {missing[0]!r} in bank {self.path}")
        blobs = self.store.embeddings_by_key(set(keys.values()))
        return np.stack([np.frombuffer(blobs[keys[n]], dtype=np.float32) for n in names]).reshape(len(names), self.dim)

    def stats(self) -> dict:
        """Counts and configuration, for `toolbank stats`."""
        n = len(self)
        files = {f: (self.path / f).stat().st_size for f in ("bank.sqlite", "index.faiss") if (self.path / f).exists()}
        out = {
            "path": str(self.path),
            "tools": n,
            "namespaces": {k or "": v for k, v in self.store.namespaces().items()},
            "embedder": self.embedder_id,
            "dim": self.dim,
            "index_factory": self.index_factory,
            "generation": self.store.generation,
            "bytes": files,
        }
        if n > LARGE_BANK and "HNSW" not in self.index_factory:
            out["hint"] = f"{n:,} tools: `toolbank reindex --index hnsw` makes dense search faster"
        return out
