"""The run store's schema: its tables, the statements that read and write them, its version.

Layout: ``runs/NAME/run.sqlite`` in WAL mode. Schema (version :data:`SCHEMA_VERSION`)::

    manifest(key TEXT PRIMARY KEY, value TEXT NOT NULL)            -- value is JSON
    shapes(id INTEGER PRIMARY KEY, keys TEXT NOT NULL UNIQUE)       -- key tuples of packed JSON
    kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
          parts TEXT NOT NULL)                 -- JSON list: the spec fields held in parts
    parts(id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE,
          value TEXT NOT NULL)                 -- a value many items share, as JSON
    items(id INTEGER PRIMARY KEY, key BLOB NOT NULL,
          kind INTEGER NOT NULL REFERENCES kinds(id), spec TEXT NOT NULL)   -- spec: packed
    UNIQUE INDEX items_key ON items(key)       -- named: a bulk add builds it after the rows
    records(id INTEGER PRIMARY KEY REFERENCES items(id),
            status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
            error TEXT,                          -- NULL exactly when status = 'ok'
            raw TEXT NOT NULL,                   -- packed JSON: the backend's raw output
            readouts TEXT NOT NULL,              -- packed JSON object of read-outs from raw
            elapsed_s REAL NOT NULL CHECK (elapsed_s >= 0),
            finished_at TEXT NOT NULL,           -- ISO-8601 UTC
            attempt INTEGER NOT NULL CHECK (attempt >= 1))

Sized for millions of items (1.8 million measured): what repeats is stored once. A spec field
its kind declares a part (a sweep question, scene reference, physics settings, model options:
:class:`clearsight.specs.Part`) holds the id of a ``parts`` row, the part's value stored once
under its content hash; the key names of every JSON object are stored once in ``shapes``
(:mod:`clearsight.store._packed`); an item key that is a SHA-256 hex digest (every protocol's
key) is stored as its 32 bytes (:mod:`clearsight.store._keys`), and records refer to items by
integer id. The public key of an item is unchanged: the hex text :mod:`clearsight.specs`
computes.

JSON columns are declared ``TEXT`` on purpose: a declared type ``JSON`` gets SQLite's NUMERIC
affinity, which would silently turn a raw output such as ``"42"`` into the integer 42.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "FRAME_COLUMNS",
    "ITEMS",
    "ITEMS_AND_OK_PER_KIND",
    "ITEM_KINDS",
    "KEY_INDEX",
    "MIGRATED_VERSIONS",
    "RECORDS_PER_KIND",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SELECT_RECORDS",
    "UPSERT_RECORD",
    "build_key_index",
    "create_schema",
    "filters",
    "has_key_index",
    "set_version",
    "transaction",
]

SCHEMA_VERSION = 4
# Versions a writer migrates on open (clearsight.store._migrate); a reader refuses them with
# the command that migrates.
MIGRATED_VERSIONS = (1, 2, 3)

ITEMS = """CREATE TABLE items (
    id   INTEGER PRIMARY KEY,
    key  BLOB NOT NULL,
    kind INTEGER NOT NULL REFERENCES kinds(id),
    spec TEXT NOT NULL
)"""
KEY_INDEX = "CREATE UNIQUE INDEX items_key ON items (key)"

SCHEMA = f"""
CREATE TABLE manifest (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE shapes (
    id   INTEGER PRIMARY KEY,
    keys TEXT NOT NULL UNIQUE
);
CREATE TABLE kinds (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL UNIQUE,
    parts TEXT NOT NULL
);
CREATE TABLE parts (
    id     INTEGER PRIMARY KEY,
    digest BLOB NOT NULL UNIQUE,
    value  TEXT NOT NULL
);
{ITEMS};
{KEY_INDEX};
CREATE TABLE records (
    id          INTEGER PRIMARY KEY REFERENCES items(id),
    status      TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    error       TEXT,
    raw         TEXT NOT NULL,
    readouts    TEXT NOT NULL,
    elapsed_s   REAL NOT NULL CHECK (elapsed_s >= 0),
    finished_at TEXT NOT NULL,
    attempt     INTEGER NOT NULL CHECK (attempt >= 1),
    CHECK ((status = 'ok') = (error IS NULL))
)
"""

# A record for a key whose stored record is 'ok' is ignored (the first success is final: an item
# is a pure function of its spec); a record for a failed key replaces it and counts an attempt.
UPSERT_RECORD = """
INSERT INTO records (id, status, error, raw, readouts, elapsed_s, finished_at, attempt)
VALUES (?, ?, ?, ?, ?, ?, ?, 1)
ON CONFLICT (id) DO UPDATE SET
    status = excluded.status,
    error = excluded.error,
    raw = excluded.raw,
    readouts = excluded.readouts,
    elapsed_s = excluded.elapsed_s,
    finished_at = excluded.finished_at,
    attempt = records.attempt + 1
WHERE records.status <> 'ok'
"""

# Columns of a run's frame that come from the records and items tables, in order ("raw" is
# appended on request): clearsight.store._frames.
FRAME_COLUMNS: tuple[str, ...] = (
    "key",
    "protocol",
    "status",
    "error",
    "elapsed_s",
    "finished_at",
    "attempt",
)

# Reads of records with their items. {raw} is r.raw or NULL (a caller that needs no raw output).
SELECT_RECORDS = (
    "SELECT i.key, r.status, r.error, {raw}, r.readouts, r.elapsed_s, r.finished_at, "
    "i.kind, i.spec, r.attempt FROM records AS r JOIN items AS i ON i.id = r.id"
)
ITEM_KINDS = (
    "SELECT name FROM kinds WHERE EXISTS (SELECT 1 FROM items WHERE kind = kinds.id) ORDER BY name"
)
ITEMS_AND_OK_PER_KIND = (
    "SELECT k.name, count(*), count(r.id) FROM items AS i JOIN kinds AS k ON k.id = i.kind "
    "LEFT JOIN records AS r ON r.id = i.id AND r.status = 'ok' GROUP BY k.name ORDER BY k.name"
)
RECORDS_PER_KIND = (
    "SELECT k.name, count(*) FROM records AS r JOIN items AS i ON i.id = r.id "
    "JOIN kinds AS k ON k.id = i.kind GROUP BY k.name ORDER BY k.name"
)


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A ``BEGIN IMMEDIATE`` transaction of a connection without the store's checks (creating
    or migrating a database as it opens): committed if the block succeeds, else rolled back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def set_version(conn: sqlite3.Connection, version: int) -> None:
    """Record schema ``version`` in the manifest (in the caller's transaction)."""
    conn.execute(
        "UPDATE manifest SET value = ? WHERE key = 'schema_version'", (json.dumps(version),)
    )


def create_schema(conn: sqlite3.Connection, *, manifest: bool = True) -> None:
    """Create the tables (the manifest's too, with the schema version, unless ``manifest`` is
    False: a migration keeps its own) in the caller's transaction."""
    for statement in SCHEMA.split(";"):
        if statement.strip() and (manifest or "TABLE manifest" not in statement):
            conn.execute(statement)
    if manifest:
        conn.execute(
            "INSERT INTO manifest (key, value) VALUES ('schema_version', ?)",
            (json.dumps(SCHEMA_VERSION),),
        )


def has_key_index(conn: sqlite3.Connection) -> bool:
    """Whether the items' key index is there (a bulk add drops it while it adds)."""
    query = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'items_key'"
    return conn.execute(query).fetchone() is not None


def build_key_index(conn: sqlite3.Connection) -> int:
    """Build the items' unique key index (in the caller's transaction); a key stored twice
    (given in two chunks of one bulk add) keeps its first row, as the index would have kept
    it. Returns how many later rows were dropped."""
    try:
        conn.execute(KEY_INDEX)
        return 0
    except sqlite3.IntegrityError:  # the statement alone is undone
        dropped = conn.execute(
            "DELETE FROM items WHERE id NOT IN (SELECT min(id) FROM items GROUP BY key)"
        ).rowcount
        conn.execute(KEY_INDEX)
        return int(dropped)


def filters(status: str | None, kind: str | None) -> tuple[str, list[str | int | bytes]]:
    """The ``WHERE`` clause and its parameters selecting records by status and item kind."""
    where: list[str] = []
    params: list[str | int | bytes] = []
    if status is not None:
        where.append("r.status = ?")
        params.append(status)
    if kind is not None:
        where.append("i.kind = (SELECT id FROM kinds WHERE name = ?)")
        params.append(kind)
    return (f" WHERE {' AND '.join(where)}" if where else ""), params
