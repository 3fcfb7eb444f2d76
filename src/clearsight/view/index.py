"""The viewer's side index of a run: one SQLite row per ok record of a kind, with the columns a
listing filters, sorts and counts by, so a page is a SQL query instead of a read of the run.

The index is ``RUN/view-index.sqlite`` (``$CLEARSIGHT_CACHE/view-index/<hash>.sqlite`` where the
run directory is not writable), a separate file: the run's own database is only read, with no
lock, so a run being written can be viewed. It may be deleted at any time: the next page builds
it again. What it holds is an :class:`IndexDesign`, the protocol's (its view declares the
columns and how a chunk of records becomes rows); this module is the machinery only.

:func:`synced` brings it up to date before a page reads it, from the store's streaming read by
item id (:func:`clearsight.store.record_chunks`):

* the items after ``high`` (the highest item id read) up to the run's last record are read a
  chunk at a time, constant memory: their ok records become rows, the others (not answered
  yet, or failed) are kept in ``waiting``;
* the ``waiting`` items are read again by id, and those with an ok record now become rows (an
  ok record is final in the store, so a row never changes once written).

A design may also ask for a ``tally``: per group of its ``tally`` columns, the first item id,
and the count (of non-missing values) and sum of each of its ``tallied`` columns, kept up to
date with the rows (each row is added once and never changes, so the tally is added to, never
recomputed): a summary of the whole run is then a read of a small table.

Each chunk's rows, tally, ``waiting`` changes and the new ``high`` are one transaction, so a build
killed half way leaves a consistent index that the next request resumes; two processes
bringing one index up to date at once write each record once (:func:`_catch_up`). An index of
another design, an unreadable file or one that has read past the run's last record (the run was
replaced) is deleted and built again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from clearsight.cache import cache_dir
from clearsight.store import RecordChunk, RunStore, StoredRecord, last_record_id, record_chunks

__all__ = [
    "INDEX_NAME",
    "IndexDesign",
    "index_path",
    "page_of",
    "read_index",
    "record_of",
    "synced",
]

#: The index's file name in a run directory.
INDEX_NAME = "view-index.sqlite"
#: Records read a chunk at a time (a chunk of Python values in memory at a time).
CHUNK = 20_000
_LOCKS: dict[Path, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


@dataclass(frozen=True)
class IndexDesign:
    """What a protocol's index holds: the records of ``kind``; the store's frame columns it
    reads (``read``); its own ``columns`` (name -> SQL type, after the item ``id``), the
    SQL ``indexes`` on them, ``rows``, a chunk's frame (``id`` and ``read``) -> a frame of
    ``id`` and ``columns`` (the records it leaves out are not listed), and the ``tally``
    (module docstring: its group columns and ``tallied`` columns, none of them missing in a
    group column)."""

    kind: str
    read: tuple[str, ...]
    columns: Mapping[str, str]
    indexes: tuple[tuple[str, ...], ...]
    rows: Callable[[pd.DataFrame], pd.DataFrame]
    tally: tuple[str, ...] = ()
    tallied: tuple[str, ...] = ()

    @property
    def signature(self) -> str:
        """The design as text: an index written with another is built again."""
        shape = [self.kind, self.read, dict(self.columns), self.indexes, self.tally, self.tallied]
        return json.dumps(shape)


def index_path(run_dir: Path) -> Path:
    """Where the index of ``run_dir`` lives (module docstring)."""
    run_dir = Path(run_dir)
    if os.access(run_dir, os.W_OK):
        return run_dir / INDEX_NAME
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:24]
    folder = cache_dir() / "view-index"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{digest}.sqlite"


def _schema(conn: sqlite3.Connection, design: IndexDesign) -> None:
    columns = "".join(f", {name} {kind}" for name, kind in design.columns.items())
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(f"CREATE TABLE rows (id INTEGER PRIMARY KEY{columns})")
    conn.execute("CREATE TABLE waiting (id INTEGER PRIMARY KEY)")
    if design.tally:
        tallied = "".join(f", n_{c} INTEGER, s_{c} REAL" for c in design.tallied)
        groups = ", ".join(design.tally)
        conn.execute(f"CREATE TABLE tally ({groups}, first INTEGER{tallied}, UNIQUE ({groups}))")
    for n, names in enumerate(design.indexes):
        conn.execute(f"CREATE INDEX rows_{n} ON rows ({', '.join(names)})")
    meta = {"design": design.signature, "high": "0"}
    conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=60)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _open(path: Path, design: IndexDesign) -> sqlite3.Connection:
    """The index at ``path``, created (or deleted and created again: module docstring)."""
    try:
        conn = _connect(path)
        found = conn.execute("SELECT value FROM meta WHERE key = 'design'").fetchone()
        if found is not None and found[0] == design.signature:
            return conn
        conn.close()
    except sqlite3.DatabaseError:
        pass
    return _fresh(path, design)


def _fresh(path: Path, design: IndexDesign) -> sqlite3.Connection:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    conn = _connect(path)
    conn.execute("BEGIN IMMEDIATE")
    _schema(conn, design)
    conn.execute("COMMIT")
    return conn


def _lock(path: Path) -> threading.Lock:
    with _LOCKS_LOCK:
        return _LOCKS.setdefault(path, threading.Lock())


def synced(run_dir: Path, design: IndexDesign, *, chunk: int = CHUNK) -> sqlite3.Connection:
    """The index of ``run_dir`` brought up to date with its store (module docstring), open:
    the caller queries its ``rows`` table and closes it."""
    path = index_path(run_dir)
    with _lock(path):
        conn = _open(path, design)
        try:
            with RunStore.open(run_dir, read_only=True) as store:
                top = last_record_id(store)
                if _high(conn) > top:  # read past the run's end: another run is there now
                    conn.close()
                    conn = _fresh(path, design)
                _catch_up(conn, store, design, top, chunk)
        except BaseException:
            conn.close()
            raise
    return conn


def read_index(
    run_dir: Path,
    design: IndexDesign,
    sql: str,
    params: tuple[str, ...] = (),
) -> list[tuple[object, ...]]:
    """The rows of one query over the index of ``run_dir`` (brought up to date first)."""
    conn = synced(run_dir, design)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def page_of(
    run_dir: Path,
    design: IndexDesign,
    select: str,
    where: tuple[str, str, Mapping[str, object]],
    page: tuple[int, int],
) -> tuple[int, list[tuple[object, ...]]]:
    """A listing's count and one page of it over the index of ``run_dir``: the columns
    ``select`` of the rows ``where`` (its ``WHERE`` clause, ``ORDER BY`` terms and
    parameters) selects, page ``page[0]`` of ``page[1]`` rows."""
    clause, order, params = where
    conn = synced(run_dir, design)
    try:
        total = conn.execute(f"SELECT count(*) FROM rows WHERE {clause}", params).fetchone()[0]
        limits = {**params, "limit": page[1], "offset": page[0] * page[1]}
        sql = (
            f"SELECT {select} FROM rows WHERE {clause} ORDER BY {order} LIMIT :limit OFFSET :offset"
        )
        return int(total), conn.execute(sql, limits).fetchall()
    finally:
        conn.close()


def record_of(run_dir: Path, key: str, kind: str) -> StoredRecord | None:
    """The record of item ``key`` of ``kind`` in ``run_dir``, read by key (the store's key
    index, read-only: no lock); None where the run has no record of that kind for it."""
    with RunStore.open(run_dir, read_only=True) as store:
        found = store.record(key)
    return found if found is not None and found.protocol == kind else None


def _high(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT value FROM meta WHERE key = 'high'").fetchone()[0])


def _catch_up(
    conn: sqlite3.Connection, store: RunStore, design: IndexDesign, top: int, chunk: int
) -> None:
    """Read the waiting items again, then the items after ``high`` up to ``top``. Another
    process may catch up the same index at the same time: a chunk it wrote first is not written
    twice (:func:`_write`), and once it has moved ``high`` this one leaves the rest to it."""
    waiting = [row[0] for row in conn.execute("SELECT id FROM waiting")]
    if waiting:
        for part in record_chunks(store, design.kind, design.read, ids=waiting, chunk=chunk):
            _write(conn, design, part, None)
    high = _high(conn)
    if high < top:
        for part in record_chunks(
            store, design.kind, design.read, after=high, upto=top, chunk=chunk
        ):
            if not _write(conn, design, part, (high, part.last_id)):
                return
            high = part.last_id
        _write(conn, design, None, (high, top))


def _values(frame: pd.DataFrame) -> Iterable[tuple[object, ...]]:
    """A frame's rows as SQLite values (a missing value as NULL)."""
    cells = frame.astype(object).where(frame.notna(), None)
    return cells.itertuples(index=False, name=None)


def _tally(conn: sqlite3.Connection, design: IndexDesign, rows: pd.DataFrame) -> None:
    """Add a chunk's rows to the design's tally (in the caller's transaction)."""
    if not design.tally or rows.empty:
        return
    sums = {f"n_{c}": (c, "count") for c in design.tallied}
    sums |= {f"s_{c}": (c, "sum") for c in design.tallied}
    groups = rows.groupby(list(design.tally), sort=False).agg(first=("id", "min"), **sums)
    names = ["first", *(f"{p}_{c}" for c in design.tallied for p in "ns")]
    groups = groups.reset_index()[[*design.tally, *names]]
    updates = ", ".join(f"{n} = {n} + excluded.{n}" for n in names[1:])
    conn.executemany(
        f"INSERT INTO tally VALUES ({', '.join('?' * groups.shape[1])}) "
        f"ON CONFLICT ({', '.join(design.tally)}) DO UPDATE SET "
        f"first = min(first, excluded.first), {updates}",
        _values(groups),
    )


def _write(
    conn: sqlite3.Connection,
    design: IndexDesign,
    part: RecordChunk | None,
    move: tuple[int, int] | None,
) -> bool:
    """One chunk's rows, tally and waiting items, and ``high`` moved from ``move[0]`` to
    ``move[1]`` (None: a chunk of waiting items, ``high`` unchanged), in one transaction.
    False, with nothing written, where ``high`` is no longer ``move[0]`` (another process
    wrote these items); of waiting items, only those still waiting are written. The rows are
    made before the transaction, so it holds the index's write lock only to write them."""
    rows = None if part is None else design.rows(part.frame)[["id", *design.columns]]
    conn.execute("BEGIN IMMEDIATE")
    try:
        if move is not None and _high(conn) != move[0]:
            conn.execute("ROLLBACK")
            return False
        if part is not None and rows is not None:
            _add(conn, design, part, rows, fresh=move is not None)
        if move is not None:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'high'", (str(move[1]),))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return True


def _add(
    conn: sqlite3.Connection,
    design: IndexDesign,
    part: RecordChunk,
    rows: pd.DataFrame,
    *,
    fresh: bool,
) -> None:
    """A chunk's ``rows``, tally and waiting items (in the caller's transaction); ``fresh``:
    items after ``high``, else items read again that another process may have written."""
    frame = part.frame
    if not fresh:
        still = {row[0] for row in conn.execute("SELECT id FROM waiting")}
        frame, rows = frame[frame["id"].isin(still)], rows[rows["id"].isin(still)]
    marks = ", ".join("?" * (len(design.columns) + 1))
    conn.executemany(f"INSERT INTO rows VALUES ({marks})", _values(rows))
    _tally(conn, design, rows)
    conn.executemany("DELETE FROM waiting WHERE id = ?", [(int(i),) for i in frame["id"]])
    if fresh:
        conn.executemany("INSERT OR IGNORE INTO waiting VALUES (?)", [(i,) for i in part.waiting])
