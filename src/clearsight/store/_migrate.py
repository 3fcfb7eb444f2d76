"""Runs of older store schemas (1, 2 and 3) migrated to schema 4 by the writer that opens them,
one transaction per step, keys and values unchanged.

* schema 1 -> 2 (:func:`rekey_v1`): every item keyed by the one recipe;
* schema 2 -> 4 (:func:`repack_v2`): every item and record re-encoded in the compact layout
  (parts, shapes, 32-byte keys, integer ids);
* schema 3 -> 4 (:func:`name_key_index_v3`): the items' key index named instead of inline.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from clearsight.credentials import secret_values
from clearsight.specs import json_key
from clearsight.store._json import loads
from clearsight.store._keys import item_ids
from clearsight.store._schema import (
    ITEMS,
    SCHEMA_VERSION,
    build_key_index,
    create_schema,
    set_version,
    transaction,
)
from clearsight.store._tables import Tables

__all__ = ["CHUNK", "name_key_index_v3", "rekey_v1", "repack_v2"]

# Rows read at a time while a run is migrated.
CHUNK = 20_000


def rekey_v1(conn: sqlite3.Connection, path: Path) -> None:
    """Migrate schema 1 to 2 in one transaction: every item keyed by the one recipe.

    Schema 1 keyed a sweep item by ``content_hash`` of its spec with the question replaced by
    its hash and a grounding item by ``content_hash(spec)``; schema 2 keys every item by
    :func:`clearsight.specs.json_key` (``content_hash([kind, payload])``). Each item's key is
    recomputed from its stored spec and its record moves with it. Probe items were already keyed
    ``content_hash([kind, spec])``, so their keys — the only keys another spec refers to (a
    probe analysis names its transcript) — stay as they are.
    """
    rows = conn.execute("SELECT key, protocol, spec FROM items").fetchall()
    changed = []
    for key, kind, text in rows:
        new = json_key(kind, loads(text, path, "items", key, "spec"))
        if new != key:
            changed.append((new, key))
    with transaction(conn):
        conn.execute("PRAGMA defer_foreign_keys = ON")
        conn.executemany("UPDATE records SET key = ? WHERE key = ?", changed)
        conn.executemany("UPDATE items SET key = ? WHERE key = ?", changed)
        set_version(conn, 2)


def repack_v2(
    write: Callable[[], AbstractContextManager[sqlite3.Connection]], tables: Tables, path: Path
) -> None:
    """Migrate schema 2 to 4 in one ``write`` transaction (the store's): every item and record
    re-encoded in the compact layout (parts, shapes, 32-byte keys, integer ids), keys and
    values unchanged."""
    with write() as conn:
        conn.execute("ALTER TABLE records RENAME TO old_records")
        conn.execute("ALTER TABLE items RENAME TO old_items")
        create_schema(conn, manifest=False)
        secrets = secret_values()
        _repack_items(conn, tables, path, secrets)
        _repack_records(conn, tables, path, secrets)
        conn.execute("DROP TABLE old_records")
        conn.execute("DROP TABLE old_items")
        set_version(conn, SCHEMA_VERSION)


def _repack_items(
    conn: sqlite3.Connection, tables: Tables, path: Path, secrets: Sequence[str]
) -> None:
    """Schema 2's items into the new items table, :data:`CHUNK` at a time."""
    old = conn.execute("SELECT key, protocol, spec FROM old_items ORDER BY rowid")
    while batch := old.fetchmany(CHUNK):
        rows = [
            tables.spec_row(key, kind, loads(spec, path, "items", key, "spec"), None, secrets)
            for key, kind, spec in batch
        ]
        tables.save(conn)
        tables.saved()
        conn.executemany("INSERT INTO items (key, kind, spec) VALUES (?, ?, ?)", rows)


def _repack_records(
    conn: sqlite3.Connection, tables: Tables, path: Path, secrets: Sequence[str]
) -> None:
    """Schema 2's records into the new records table, :data:`CHUNK` at a time, each referring
    to its item by id."""
    old = conn.execute(
        "SELECT key, status, error, raw, readouts, elapsed_s, finished_at, attempt "
        "FROM old_records ORDER BY rowid"
    )
    while batch := old.fetchmany(CHUNK):
        ids = item_ids(conn, (row[0] for row in batch))
        records = [
            (
                ids[key],
                status,
                error,
                *(
                    tables.encode(loads(text, path, "records", key, column), column, secrets)
                    for column, text in (("raw", raw), ("readouts", readouts))
                ),
                *rest,
            )
            for key, status, error, raw, readouts, *rest in batch
        ]
        tables.save(conn)
        tables.saved()
        conn.executemany(
            "INSERT INTO records (id, status, error, raw, readouts, elapsed_s, "
            "finished_at, attempt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            records,
        )


def name_key_index_v3(conn: sqlite3.Connection) -> None:
    """Migrate schema 3 to 4 in one transaction: the items table rebuilt with its key index
    named (``items_key``) instead of declared inline, every row and id unchanged (SQLite's
    way to change a constraint: a new table, the rows copied, the old one dropped, with the
    foreign keys that refer to it checked after)."""
    conn.execute("PRAGMA foreign_keys = OFF")  # the records' table refers to the one replaced
    try:
        with transaction(conn):
            conn.execute(ITEMS.replace("TABLE items", "TABLE new_items"))
            conn.execute("INSERT INTO new_items SELECT id, key, kind, spec FROM items")
            conn.execute("DROP TABLE items")
            conn.execute("ALTER TABLE new_items RENAME TO items")
            build_key_index(conn)
            if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                raise RuntimeError("a record refers to no item after rebuilding the items table")
            set_version(conn, 4)
    finally:
        conn.execute("PRAGMA foreign_keys = ON")
