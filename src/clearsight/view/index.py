"""The viewer's side index of a run (:class:`~clearsight.store.SideIndex`): one SQLite row per
ok record of a kind, with the columns a listing filters, sorts and counts by, so a page is an
indexed query instead of a read of the run. This module decides where the index lives and keeps
it up to date; its tables, writes and reads (each a typed :class:`~clearsight.store.Select`) are
the store's (:mod:`clearsight.store._side`), so no SQL is written here or in a protocol's view.

The index is ``RUN/view-index.sqlite`` (``$CLEARSIGHT_CACHE/view-index/<hash>.sqlite`` where the
run directory is not writable), a separate file: the run's own database is only read, with no
lock, so a run being written can be viewed. It may be deleted at any time: it is built again.
What it holds is an :class:`~clearsight.store.IndexDesign`, the protocol's (its view declares
the columns and how a chunk of records becomes rows).

:func:`synced` brings it up to date, from the store's streaming read by item id
(:func:`clearsight.store.record_chunks`):

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

A view reads its index through a :class:`RunIndex`, whose pages never wait for a build: where
at most :data:`INLINE` items are to be read (a run being written, between two reloads) the
page catches up itself, so new records appear on reload; where more are (a missing index, or
one far behind), the build runs in a background thread (:meth:`RunIndex.start`, called as the
viewer starts) and the page raises :class:`IndexNotReadyError` with how far it is, which the
app shows as an "indexing N of M" page. ``clearsight view RUN --index`` builds it ahead of time
(:meth:`RunIndex.build`). Where it lives is decided by :func:`writable` alone.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from clearsight.cache import cache_dir
from clearsight.store import IndexDesign, RunStore, SideIndex, last_record_id, record_chunks

if TYPE_CHECKING:
    from clearsight.store import Select, StoredRecord

__all__ = [
    "INDEX_NAME",
    "IndexNotReadyError",
    "Progress",
    "RunIndex",
    "index_path",
    "record_of",
    "synced",
]

#: The index's file name in a run directory.
INDEX_NAME = "view-index.sqlite"
#: Records read a chunk at a time (a chunk of Python values in memory at a time).
CHUNK = 20_000
#: The most items a page reads itself to bring the index up to date (a second or so: a run
#: being written, between two reloads); more, and the background build reads them.
INLINE = 2_000
#: The longest a page waits for another thread's catch-up (at most a chunk) before it says
#: the run is being indexed.
_WAIT_S = 10.0
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


#: Progress of a catch-up: items read so far (``high``) and the run's last record (``top``).
Progress = Callable[[int, int], None]


def synced(
    run_dir: Path, design: IndexDesign, *, chunk: int = CHUNK, progress: Progress | None = None
) -> SideIndex:
    """The index of ``run_dir`` brought up to date with its store (module docstring), open:
    the caller reads it and closes it. Waits for any other catch-up of it in this process;
    ``progress`` is told each chunk read."""
    path = index_path(run_dir)
    with _lock(path):
        index = _open(path, design)
        try:
            with RunStore.open(run_dir, read_only=True) as store:
                top = last_record_id(store)
                if index.meta("high") > top:  # read past the run's end: another run is there
                    index.close()
                    index = SideIndex.fresh(path, design)
                _catch_up(index, store, top, chunk, _told(path, progress))
        except BaseException:
            index.close()
            raise
    return index


class IndexNotReadyError(Exception):
    """The index a page reads is being built or brought up to date in the background:
    ``done`` of ``total`` items read (the page says so and asks to be reloaded)."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"indexing this run: {done:,} of {total:,} items read")
        self.done, self.total = done, total


@dataclass
class _Build:
    """A background catch-up of one index: its thread, and the error it ended with."""

    thread: threading.Thread
    error: BaseException | None = None


_BUILDS: dict[Path, _Build] = {}
_PROGRESS: dict[Path, tuple[int, int]] = {}


@dataclass(frozen=True)
class RunIndex:
    """The side index of one run for a view (``design``, the protocol's): built ahead of time
    (:meth:`build`), in the background (:meth:`start`), and read by pages (:meth:`read`,
    :meth:`page`) that never wait for more than :data:`INLINE` items' catch-up: where more are
    to be read, they start the background build and raise :class:`IndexNotReadyError` with its
    progress."""

    run_dir: Path
    design: IndexDesign

    def build(self, progress: Progress | None = None, *, chunk: int = CHUNK) -> None:
        """Bring the index up to date now, telling ``progress`` each chunk read."""
        synced(self.run_dir, self.design, chunk=chunk, progress=progress).close()

    def start(self) -> None:
        """Bring the index up to date in a background thread where more than :data:`INLINE`
        items are to be read (none is started while one runs); returns at once."""
        with suppress(IndexNotReadyError):
            self._ready().close()

    def read(self, select: Select) -> list[tuple[Any, ...]]:
        """The rows ``select`` reads (:class:`IndexNotReadyError` while it is built)."""
        index = self._ready()
        try:
            return index.rows(select)
        finally:
            index.close()

    def page(self, select: Select) -> tuple[int, list[tuple[Any, ...]]]:
        """A listing's count (its limit and offset aside) and the rows ``select`` reads."""
        index = self._ready()
        try:
            return index.count(select), index.rows(select)
        finally:
            index.close()

    def _ready(self) -> SideIndex:
        """The index up to date, caught up here where at most :data:`INLINE` items are to be
        read; else the background build started (or still running) and
        :class:`IndexNotReadyError` raised."""
        path = index_path(self.run_dir)
        with _LOCKS_LOCK:
            build = _BUILDS.get(path)
            if build is not None and build.thread.is_alive():
                raise IndexNotReadyError(*_PROGRESS.get(path, (0, 0)))
            if build is not None and _BUILDS.pop(path).error is not None:
                raise RuntimeError(f"indexing {self.run_dir} failed") from build.error
        lock = _lock(path)
        if not lock.acquire(timeout=_WAIT_S):  # another thread is catching up
            raise IndexNotReadyError(*_PROGRESS.get(path, (0, 0)))
        try:
            return self._caught_up(path)
        finally:
            lock.release()

    def _caught_up(self, path: Path) -> SideIndex:
        """The index at ``path`` caught up here (the caller holds its lock), or the background
        build started and :class:`IndexNotReadyError` raised."""
        index = _open(path, self.design)
        try:
            with RunStore.open(self.run_dir, read_only=True) as store:
                top, high = last_record_id(store), index.meta("high")
                behind = top - high + len(index.waiting()) if high <= top else top
                if behind > INLINE:
                    index.close()
                    self._background(path, (min(high, top), top))
                    raise IndexNotReadyError(min(high, top), top)
                if high > top:  # read past the run's end: another run is there
                    index.close()
                    index = SideIndex.fresh(path, self.design)
                _catch_up(index, store, top, CHUNK, _told(path, None))
        except BaseException:
            index.close()
            raise
        return index

    def _background(self, path: Path, progress: tuple[int, int]) -> None:
        build = _Build(threading.Thread(target=self._run, args=(path,), daemon=True))
        with _LOCKS_LOCK:
            _PROGRESS[path] = progress
            _BUILDS[path] = build
        build.thread.start()

    def _run(self, path: Path) -> None:
        try:
            self.build()
        except BaseException as exc:  # kept for the next page to report
            _BUILDS[path].error = exc


def _told(path: Path, progress: Progress | None) -> Progress:
    """A catch-up's progress kept for the pages of this process, and told to ``progress``."""

    def tell(done: int, total: int) -> None:
        _PROGRESS[path] = (done, total)
        if progress is not None:
            progress(done, total)

    return tell


def record_of(run_dir: Path, key: str, kind: str) -> StoredRecord | None:
    """The record of item ``key`` of ``kind`` in ``run_dir``, read by key (the store's key
    index, read-only: no lock); None where the run has no record of that kind for it."""
    with RunStore.open(run_dir, read_only=True) as store:
        found = store.record(key)
    return found if found is not None and found.protocol == kind else None


def _catch_up(index: SideIndex, store: RunStore, top: int, chunk: int, tell: Progress) -> None:
    """Read the waiting items again, then the items after ``high`` up to ``top``. Another
    process may catch up the same index at the same time: a chunk it wrote first is not written
    twice (:meth:`~clearsight.store.SideIndex.write`), and once it has moved ``high`` this one
    leaves the rest to it. The rows are made before each transaction, so it holds the index's
    write lock only to write them. ``tell``: told each chunk read (items read, of ``top``)."""
    design, waiting = index.design, index.waiting()
    if waiting:
        for part in record_chunks(store, design.kind, design.read, ids=waiting, chunk=chunk):
            ids = [int(i) for i in part.frame["id"]]
            index.write(_rows_of(design, part.frame), ids, (), None)
    high = index.meta("high")
    if high < top:
        for part in record_chunks(
            store, design.kind, design.read, after=high, upto=top, chunk=chunk
        ):
            rows = _rows_of(design, part.frame)
            if not index.write(rows, (), part.waiting, (high, part.last_id)):
                return
            high = part.last_id
            tell(high, top)
        index.write(None, (), (), (high, top))
    tell(top, top)


def _rows_of(design: IndexDesign, frame: pd.DataFrame) -> pd.DataFrame:
    """A chunk's ok records as the design's rows, in the index's column order."""
    return design.rows(frame)[["id", *design.columns]]
