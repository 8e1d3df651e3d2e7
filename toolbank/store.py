"""SQLite store: the source of truth of a bank (tools, schemas, text hashes, embeddings).

Every write is one transaction; one that changed rows bumps `generation`, which the derived FAISS index
records so a stale index is noticed. Row ids are never reused (AUTOINCREMENT): they key the FAISS index.
A tool's row is keyed by its qualified name (`key`: `namespace/name`, or `name` without a namespace), so the
same name may be in several namespaces. A version-1 table (`name` unique, no `key`) is upgraded in place by
`migrate`, which keeps the row ids.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from toolbank.tool import Tool

_TOOLS_TABLE = """
CREATE TABLE {table} (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    namespace TEXT,
    tags TEXT NOT NULL,
    description TEXT NOT NULL,
    parameters TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    embedding BLOB NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
)"""
_INDEXES = [
    "CREATE INDEX IF NOT EXISTS tools_name ON tools (name)",
    "CREATE INDEX IF NOT EXISTS tools_text_hash ON tools (text_hash)",
    "CREATE INDEX IF NOT EXISTS tools_namespace ON tools (namespace)",
]
SCHEMA = (
    _TOOLS_TABLE.format(table="IF NOT EXISTS tools")
    + ";\n"
    + ";\n".join(_INDEXES)
    + ";\nCREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
)
# A version-1 row's key: what `Tool.qualified_name` gives.
_KEY_OF_ROW = "CASE WHEN namespace IS NULL OR namespace = '' THEN name ELSE namespace || '/' || name END"
_COPIED_COLUMNS = "id, name, namespace, tags, description, parameters, text_hash, embedding, created_at, updated_at"
_TOOL_COLUMNS = "id, name, namespace, tags, description, parameters"


def _row_to_tool(row: tuple) -> tuple[int, Tool]:
    rowid, name, namespace, tags, description, parameters = row
    return rowid, Tool.trusted(name, description, json.loads(parameters), namespace, tuple(json.loads(tags)))


class Store:
    """One bank's SQLite database."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        if not self.needs_migration():  # a version-1 table is left as it is until `migrate`
            self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def check(self) -> str | None:
        """SQLite's `PRAGMA quick_check`: None when the file is sound, else its first finding. It reads every
        page (about 5 ms for 4,000 tools, 8.7 MB, warm cache), so a damaged page is found on open rather than by
        whichever command happens to read it."""
        rows = self.db.execute("PRAGMA quick_check(1)").fetchall()
        return None if rows == [("ok",)] else "; ".join(str(r[0]) for r in rows).replace("\n", " ")

    # -- format ---------------------------------------------------------------------------------
    def needs_migration(self) -> bool:
        """Whether the tools table is version 1's (`name` unique, no `key` column)."""
        columns = [row[1] for row in self.db.execute("PRAGMA table_info(tools)")]
        return bool(columns) and "key" not in columns

    def migrate(self) -> bool:
        """Upgrade a version-1 tools table to version 2 in one transaction: a new table with `key` (the
        qualified name) unique, every row copied with its id, the old table dropped, the new one renamed, its
        indexes made, and meta `format_version` set to 2. The generation is left as it is: the ids, vectors
        and texts the derived indexes hold do not change. Returns whether it migrated (False: already
        version 2). `sqlite3.OperationalError` when the file cannot be written; then nothing changed."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            migrated = self.needs_migration()  # again, inside the transaction: another process may have done it
            if migrated:
                row = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'tools'").fetchone()
                self.db.execute(_TOOLS_TABLE.format(table="tools_v2"))
                self.db.execute(
                    f"INSERT INTO tools_v2 (key, {_COPIED_COLUMNS}) SELECT {_KEY_OF_ROW}, {_COPIED_COLUMNS} FROM tools"
                )
                self.db.execute("DROP TABLE tools")
                self.db.execute("ALTER TABLE tools_v2 RENAME TO tools")
                for statement in _INDEXES:
                    self.db.execute(statement)
                # AUTOINCREMENT's counter: ids of tools removed in version 1 stay unused
                seqs = [r[0] for r in self.db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'tools'")]
                seq = max(seqs + ([row[0]] if row else []), default=None)
                if seq is not None:
                    self.db.execute("DELETE FROM sqlite_sequence WHERE name = 'tools'")
                    self.db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('tools', ?)", (seq,))
            self.set_meta("format_version", "2")
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        return migrated

    # -- meta -----------------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation", "0"))

    def _bump_generation(self) -> int:
        generation = self.generation + 1
        self.set_meta("generation", str(generation))
        return generation

    # -- reads ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM tools").fetchone()[0]

    def get(self, key: str) -> Tool | None:
        """The tool whose qualified name is `key`, or None."""
        row = self.db.execute(f"SELECT {_TOOL_COLUMNS} FROM tools WHERE key = ?", (key,)).fetchone()
        return _row_to_tool(row)[1] if row else None

    def keys_named(self, name: str) -> list[str]:
        """The qualified names of the tools whose bare name is `name`, sorted."""
        return [r[0] for r in self.db.execute("SELECT key FROM tools WHERE name = ? ORDER BY key", (name,))]

    def _select_in(self, columns: str, key: str, values: Iterable) -> list[tuple]:
        """`SELECT columns FROM tools WHERE key IN values`, chunked under SQLite's parameter cap."""
        values, rows = list(values), []
        for start in range(0, len(values), 900):
            chunk = values[start : start + 900]
            rows += self.db.execute(
                f"SELECT {columns} FROM tools WHERE {key} IN ({','.join('?' * len(chunk))})", chunk
            ).fetchall()
        return rows

    def tools(self, ids: Iterable[int] | None = None) -> dict[int, Tool]:
        """Tools by row id, in id order: all of them, or those in `ids`."""
        if ids is None:
            rows = self.db.execute(f"SELECT {_TOOL_COLUMNS} FROM tools ORDER BY id").fetchall()
        else:
            rows = sorted(self._select_in(_TOOL_COLUMNS, "id", ids))
        return dict(_row_to_tool(row) for row in rows)

    def iter_tools(self) -> Iterator[Tool]:
        for row in self.db.execute(f"SELECT {_TOOL_COLUMNS} FROM tools ORDER BY id"):
            yield _row_to_tool(row)[1]

    def ids_by_key(self, keys: Iterable[str]) -> dict[str, int]:
        """Row ids by qualified name, for those of `keys` in the store."""
        return dict(self._select_in("key, id", "key", keys))

    def embeddings_by_key(self, keys: Iterable[str]) -> dict[str, bytes]:
        return dict(self._select_in("key, embedding", "key", keys))

    def embeddings_by_hash(self, hashes: Iterable[str]) -> dict[str, bytes]:
        return dict(self._select_in("text_hash, embedding", "text_hash", set(hashes)))

    def ids_where(self, namespace: str | None = None, tags: Iterable[str] = ()) -> list[int]:
        """Row ids of tools in `namespace` (any when None) carrying every tag in `tags`."""
        tags = list(tags)
        rows = self.db.execute(
            "SELECT id, tags FROM tools WHERE (? IS NULL OR namespace = ?) ORDER BY id", (namespace, namespace)
        ).fetchall()
        return [rowid for rowid, row_tags in rows if set(tags) <= set(json.loads(row_tags))]

    def embeddings(self, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """All row ids (n,) int64 and embeddings (n, dim) float32, in id order."""
        rows = self.db.execute("SELECT id, embedding FROM tools ORDER BY id").fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
        return ids, vectors

    def namespaces(self) -> dict[str | None, int]:
        return dict(self.db.execute("SELECT namespace, COUNT(*) FROM tools GROUP BY namespace ORDER BY namespace"))

    # -- writes ---------------------------------------------------------------------------------
    def transaction(self) -> _Transaction:
        """`with store.transaction() as tx:`: an IMMEDIATE transaction that bumps the generation when it changed
        a row (one that changed nothing leaves the generation, and so the saved index, as they were)."""
        return _Transaction(self)

    def upsert(self, tool: Tool, embedding: np.ndarray) -> int:
        """Insert `tool`, or update the row of the same qualified name in place (same id). Returns the row id."""
        now = time.time()
        blob = np.ascontiguousarray(embedding, dtype=np.float32).tobytes()
        self.db.execute(
            "INSERT INTO tools (key, name, namespace, tags, description, parameters, text_hash, embedding,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET"
            " tags = excluded.tags, description = excluded.description,"
            " parameters = excluded.parameters, text_hash = excluded.text_hash, embedding = excluded.embedding,"
            " updated_at = excluded.updated_at",
            (
                tool.qualified_name,
                tool.name,
                tool.namespace,
                json.dumps(list(tool.tags)),
                tool.description,
                json.dumps(tool.parameters, ensure_ascii=False),
                tool.text_hash,
                blob,
                now,
                now,
            ),
        )
        return self.db.execute("SELECT id FROM tools WHERE key = ?", (tool.qualified_name,)).fetchone()[0]

    def delete(self, keys: Iterable[str]) -> None:
        """Delete the tools of these qualified names."""
        self.db.executemany("DELETE FROM tools WHERE key = ?", [(k,) for k in keys])

    def set_embedding(self, rowid: int, text_hash: str, embedding: np.ndarray) -> None:
        self.db.execute(
            "UPDATE tools SET embedding = ?, text_hash = ? WHERE id = ?",
            (np.ascontiguousarray(embedding, dtype=np.float32).tobytes(), text_hash, rowid),
        )


class _Transaction:
    def __init__(self, store: Store):
        self.store = store

    def __enter__(self) -> Store:
        self.store.db.execute("BEGIN IMMEDIATE")
        self.changes = self.store.db.total_changes
        return self.store

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            if self.store.db.total_changes != self.changes:
                self.store._bump_generation()
            self.store.db.execute("COMMIT")
        else:
            self.store.db.execute("ROLLBACK")
