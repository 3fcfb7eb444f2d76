"""Item keys as the store holds them, and keys staged for one query.

Every protocol keys an item by a SHA-256 hex digest (:attr:`clearsight.specs.Spec.key`); the
store keeps such a key as its 32 bytes (half the index and the row) and any other key as its
text. :func:`public_key` gives back the text callers know. A call that asks about many keys (a
resume's 1.8 million) stages them in a temporary table, so the question is one query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

__all__ = ["item_ids", "public_key", "stored_key", "wanted"]

# The keys a call asks about, staged in a temporary table.
_WANTED = "CREATE TEMP TABLE IF NOT EXISTS wanted (pos INTEGER PRIMARY KEY, key NOT NULL)"


def stored_key(key: str) -> str | bytes:
    """An item key as stored: a lower-case SHA-256 hex digest as its 32 bytes, else the text."""
    if len(key) == 64:
        try:
            raw = bytes.fromhex(key)
        except ValueError:
            return key
        if raw.hex() == key:
            return raw
    return key


def public_key(stored: str | bytes) -> str:
    """The key text of a stored key (the inverse of :func:`stored_key`)."""
    return stored.hex() if type(stored) is bytes else str(stored)


@contextmanager
def wanted(conn: sqlite3.Connection, keys: Iterable[str]) -> Iterator[sqlite3.Connection]:
    """``keys`` staged in ``temp.wanted`` (column ``pos`` their order, ``key`` as stored),
    inside a transaction: the caller's, or one that ends with the block."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        conn.execute(_WANTED)
        conn.executemany(
            "INSERT INTO temp.wanted (key) VALUES (?)", ((stored_key(k),) for k in keys)
        )
        yield conn
    finally:
        conn.execute("DELETE FROM temp.wanted")
        if own:
            conn.execute("COMMIT")


def item_ids(conn: sqlite3.Connection, keys: Iterable[str]) -> dict[str, int]:
    """Item id of each of ``keys`` that is an item."""
    with wanted(conn, keys):
        query = "SELECT w.key, i.id FROM temp.wanted AS w JOIN items AS i ON i.key = w.key"
        return {public_key(key): id_ for key, id_ in conn.execute(query)}
