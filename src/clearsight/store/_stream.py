"""A run's ok records of one kind read as frames a chunk at a time, by item id
(:func:`record_chunks`): the streaming read a side index is built and kept up to date with.

Items are walked in id order (the store's primary key, so a range from an id is a seek, never a
scan of the run). Each chunk says how far it read (``last_id``), which of its items have no ok
record yet (``waiting``: not yet answered, or failed, so read again later by id) and holds the
ok records' frame, columns as :meth:`RunStore.to_frame` names them plus ``id``. Memory is one
chunk, whatever the run's size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import pandas as pd

from clearsight.store._frames import CHUNK, _decode, _FrameReader
from clearsight.store._run_store import RunStore

__all__ = ["RecordChunk", "last_record_id", "record_chunks"]

_SELECT = (
    "SELECT i.id, r.status, i.key, i.kind, r.status, r.error, r.elapsed_s, r.finished_at, "
    "r.attempt, i.spec, r.readouts, NULL FROM items AS i LEFT JOIN records AS r ON r.id = i.id "
    "WHERE i.kind = ? AND "
)

#: Ids asked in one statement (well under SQLite's limit of bound parameters).
_MARKS = 900


class RecordChunk(NamedTuple):
    """Items read in one chunk: the last id read, the ids without an ok record, the ok
    records' frame (an ``id`` column first, then the columns asked)."""

    last_id: int
    waiting: tuple[int, ...]
    frame: pd.DataFrame


def last_record_id(store: RunStore) -> int:
    """The highest item id with a record (0: none), read from the records' primary key."""
    found = store.conn.execute("SELECT max(id) FROM records").fetchone()[0]
    return int(found or 0)


def _kind_id(store: RunStore, kind: str) -> int | None:
    found = store.conn.execute("SELECT id FROM kinds WHERE name = ?", (kind,)).fetchone()
    return None if found is None else int(found[0])


def record_chunks(
    store: RunStore,
    kind: str,
    columns: Sequence[str],
    *,
    after: int = 0,
    upto: int | None = None,
    ids: Sequence[int] | None = None,
    chunk: int = CHUNK,
) -> Iterator[RecordChunk]:
    """The items of ``kind`` with an id in ``(after, upto]`` (``upto`` None: every later one),
    or those of ``ids``, in id order, ``chunk`` at a time (module docstring)."""
    kind_id = _kind_id(store, kind)
    if kind_id is None:
        return
    if ids is not None:
        ordered, step = sorted(ids), min(chunk, _MARKS)
        for start in range(0, len(ordered), step):
            part = ordered[start : start + step]
            marks = ", ".join("?" * len(part))
            query = f"{_SELECT}i.id IN ({marks}) ORDER BY i.id"
            yield _chunk(store, store.conn.execute(query, (kind_id, *part)).fetchall(), columns)
        return
    high = upto if upto is not None else 2**62
    query = f"{_SELECT}i.id > ? AND i.id <= ? ORDER BY i.id LIMIT ?"
    while batch := store.conn.execute(query, (kind_id, after, high, chunk)).fetchall():
        yield _chunk(store, batch, columns)
        after = int(batch[-1][0])


def _chunk(store: RunStore, batch: list[tuple[Any, ...]], columns: Sequence[str]) -> RecordChunk:
    """One batch of :data:`_SELECT`'s rows as a :class:`RecordChunk`."""
    ok = [row for row in batch if row[1] == "ok"]
    waiting = tuple(int(row[0]) for row in batch if row[1] != "ok")
    last = int(batch[-1][0]) if batch else 0
    reader = _FrameReader(columns, None, include_raw=False)
    if ok:
        reader.add(_decode([row[2:] for row in ok], store._tables, store.conn, store.path))
    frame = reader.frame() if ok else pd.DataFrame(columns=list(columns))
    frame.insert(0, "id", [int(row[0]) for row in ok])
    return RecordChunk(last, waiting, frame)
