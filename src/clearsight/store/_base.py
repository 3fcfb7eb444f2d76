"""The base of a run store: its open connection, the in-memory side of its small tables, and the
one transaction every write goes through.

Every write is one ``BEGIN IMMEDIATE`` transaction (:meth:`StoreBase._write`). Before it commits,
the writer checks that the database is still the file at its path, so a run whose directory was
deleted (or whose ``run.sqlite`` was replaced) stops instead of writing on into a file nobody can
open; that, and a failure of the disk or the file (full, read-only, corrupted pages), is a
:class:`~clearsight.faults.RunFault` naming the store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import Self

from clearsight.faults import RunFault
from clearsight.store._connect import fault, identity, is_fault
from clearsight.store._tables import Tables
from clearsight.validate import InputError

__all__ = ["StoreBase"]


class StoreBase:
    """One run's open database (see :class:`~clearsight.store.RunStore`, which builds on it)."""

    def __init__(self, path: Path, conn: sqlite3.Connection, *, read_only: bool) -> None:
        """Wrap an open connection; use :meth:`RunStore.open` rather than calling this."""
        self.path = path
        self.read_only = read_only
        self._conn: sqlite3.Connection | None = conn
        #: The file the writer opened (device, inode): every commit checks it is still there.
        self._identity = None if read_only else identity(path)
        self._tables = Tables()
        self._tables.load(conn)

    def close(self) -> None:
        """Close the connection (idempotent); the last close checkpoints and removes the WAL."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Self:
        """Use the store in a ``with`` block; it is closed on exit."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store; a failure of the disk or the database file in the block (full,
        read-only, corrupted pages) leaves it as a :class:`~clearsight.faults.RunFault` that
        names this store."""
        self.close()
        if exc is not None and is_fault(exc):
            raise fault(exc, "database error", self.path) from exc

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection, for checks of the database itself (``PRAGMA integrity_check``).
        Read and write through the methods: they keep the transactions and checks, and they
        are the one place that knows the schema (nothing outside this package runs SQL)."""
        if self._conn is None:
            raise InputError(f"the run store {self.path} is closed")
        return self._conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction: committed if the block succeeds, else rolled back
        (with the shapes, kinds and parts it had added to the caches).

        Before it commits, the store checks that it is still the file at its path
        (:meth:`_check_in_place`). A failure of the disk or the file (full, read-only, an I/O
        error, corrupted pages) is a :class:`~clearsight.faults.RunFault` naming the store."""
        if self.read_only:
            raise InputError(f"the run store {self.path} was opened read-only")
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            self._check_in_place()
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:  # a failed COMMIT (disk full, say) may leave it open
                with suppress(sqlite3.Error):  # the failure itself is what the user needs
                    conn.execute("ROLLBACK")
            self._tables.forget_new()
            if is_fault(exc):
                raise fault(exc, "cannot write the run store", self.path) from exc
            raise
        self._tables.saved()

    def _check_in_place(self) -> None:
        """Raise :class:`~clearsight.faults.RunFault` when the database this writer holds open
        is no longer the file at its path: the run directory was deleted or moved, or its
        ``run.sqlite`` replaced, while the run wrote it (what it writes would go into a file
        nobody can open again)."""
        try:
            now = identity(self.path)
        except FileNotFoundError:
            now = None
        if now != self._identity:
            what = "the run store was removed" if now is None else "the run store was replaced"
            raise RunFault(
                what,
                self.path,
                "its run directory was deleted or moved, or run.sqlite replaced, while this run "
                "wrote it; the run stopped (nothing more is written there); rerun the command to "
                "start it again",
            )
