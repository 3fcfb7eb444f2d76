"""The viewer's side index of a run (:class:`~clearsight.store.SideIndex`): one SQLite row per
ok record of a kind, with the columns a listing filters, sorts and counts by, so a page is an
indexed query instead of a read of the run. This module decides where the index lives and keeps
it up to date; its tables, writes and reads (each a typed :class:`~clearsight.store.Select`) are
the store's (:mod:`clearsight.store._side`), so no SQL is written here or in a protocol's view.

The index is ``RUN/view-index.sqlite`` (``$CLEARSIGHT_CACHE/view-index/<hash>.sqlite`` where the
run directory is not writable), a separate file: the run's own database is only read, with no
lock, so a run being written can be viewed. It may be deleted at any time: the next page builds
it again. What it holds is an :class:`~clearsight.store.IndexDesign`, the protocol's (its view
declares the columns and how a chunk of records becomes rows).

:func:`synced` brings it up to date before a page reads it, from the store's streaming read by
item id (:func:`clearsight.store.record_chunks`):

* the items after ``high`` (the highest item id read) up to the run's last record are read a
  chunk at a time, constant memory: their ok records become rows, the others (not answered
  yet, or failed) are kept in ``waiting``;
* the ``waiting`` items are read again by id, and those with an ok record now become rows (an
  ok record is final in the store, so a row never changes once written).

Each chunk's rows, tally, ``waiting`` changes and the new ``high`` are one transaction, so a build
killed half way leaves a consistent index that the next request resumes; two processes
bringing one index up to date at once write each record once (:func:`_catch_up`). An index of
another design, an unreadable file or one that has read past the run's last record (the run was
replaced) is deleted and built again.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from clearsight.cache import cache_dir
from clearsight.store import IndexDesign, RunStore, SideIndex, last_record_id, record_chunks

if TYPE_CHECKING:
    from clearsight.store import Select, StoredRecord

__all__ = [
    "INDEX_NAME",
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


def writable(run_dir: Path) -> bool:
    """Whether the index may be written beside the run: the one test of where it lives."""
    return os.access(run_dir, os.W_OK)


def index_path(run_dir: Path) -> Path:
    """Where the index of ``run_dir`` lives (module docstring)."""
    run_dir = Path(run_dir)
    if writable(run_dir):
        return run_dir / INDEX_NAME
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:24]
    folder = cache_dir() / "view-index"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{digest}.sqlite"


def _open(path: Path, design: IndexDesign) -> SideIndex:
    """The index at ``path``, created (or deleted and created again: module docstring)."""
    return SideIndex.open(path, design)


def _lock(path: Path) -> threading.Lock:
    with _LOCKS_LOCK:
        return _LOCKS.setdefault(path, threading.Lock())


def synced(run_dir: Path, design: IndexDesign, *, chunk: int = CHUNK) -> SideIndex:
    """The index of ``run_dir`` brought up to date with its store (module docstring), open:
    the caller reads it and closes it."""
    path = index_path(run_dir)
    with _lock(path):
        index = _open(path, design)
        try:
            with RunStore.open(run_dir, read_only=True) as store:
                top = last_record_id(store)
                if index.meta("high") > top:  # read past the run's end: another run is there
                    index.close()
                    index = SideIndex.fresh(path, design)
                _catch_up(index, store, design, top, chunk)
        except BaseException:
            index.close()
            raise
    return index


def read_index(run_dir: Path, design: IndexDesign, select: Select) -> list[tuple[Any, ...]]:
    """The rows ``select`` reads of the index of ``run_dir`` (brought up to date first)."""
    index = synced(run_dir, design)
    try:
        return index.rows(select)
    finally:
        index.close()


def page_of(
    run_dir: Path, design: IndexDesign, select: Select
) -> tuple[int, list[tuple[Any, ...]]]:
    """A listing's count (its limit and offset aside) and the rows ``select`` reads, over the
    index of ``run_dir`` (brought up to date first)."""
    index = synced(run_dir, design)
    try:
        return index.count(select), index.rows(select)
    finally:
        index.close()


def record_of(run_dir: Path, key: str, kind: str) -> StoredRecord | None:
    """The record of item ``key`` of ``kind`` in ``run_dir``, read by key (the store's key
    index, read-only: no lock); None where the run has no record of that kind for it."""
    with RunStore.open(run_dir, read_only=True) as store:
        found = store.record(key)
    return found if found is not None and found.protocol == kind else None


def _catch_up(index: SideIndex, store: RunStore, design: IndexDesign, top: int, chunk: int) -> None:
    """Read the waiting items again, then the items after ``high`` up to ``top``. Another
    process may catch up the same index at the same time: a chunk it wrote first is not written
    twice (:meth:`~clearsight.store.SideIndex.write`), and once it has moved ``high`` this one
    leaves the rest to it. The rows are made before each transaction, so it holds the index's
    write lock only to write them."""
    waiting = index.waiting()
    if waiting:
        for part in record_chunks(store, design.kind, design.read, ids=waiting, chunk=chunk):
            ids = [int(i) for i in part.frame["id"]]
            index.write(_rows_of(design, part.frame), ids, (), None)
    high = index.meta("high")
    if high < top:
        index.set_top(top)
        for part in record_chunks(
            store, design.kind, design.read, after=high, upto=top, chunk=chunk
        ):
            rows = _rows_of(design, part.frame)
            if not index.write(rows, (), part.waiting, (high, part.last_id)):
                return
            high = part.last_id
        index.write(None, (), (), (high, top))


def _rows_of(design: IndexDesign, frame: pd.DataFrame) -> pd.DataFrame:
    """A chunk's ok records as the design's rows, in the index's column order."""
    return design.rows(frame)[["id", *design.columns]]
