"""The run store: one SQLite database per run directory holding items, records and the manifest.

Every protocol (sweep, grounding, probe) plans *items* (a key and the full spec that determines
the output), executes them and hands *records* (status, the backend's raw output, the read-outs
computed from it) to this store. The store is what makes a run resumable: a rerun asks
:meth:`RunStore.pending_keys` and only executes what has no ``ok`` record yet.

:class:`RunStore` opens a run (migrating an older schema: :mod:`clearsight.store._migrate`),
begins it with its manifest (:mod:`clearsight.store._manifest`), adds items
(:class:`~clearsight.store._items.Items`, encoded by :mod:`clearsight.store._tables`) and writes
records; its reads are :class:`~clearsight.store._reads.StoreReads`', its transactions
:class:`~clearsight.store._base.StoreBase`'. The tables are described in
:mod:`clearsight.store._schema`.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clearsight.credentials import secret_values
from clearsight.specs import Spec
from clearsight.store._bulk import collector_paused
from clearsight.store._connect import (
    DB_NAME,
    connect_reader,
    connect_writer,
    db_path,
    fault,
    is_fault,
    read_manifest,
)
from clearsight.store._items import Items, ItemTriple, Row, as_items
from clearsight.store._json import dumps
from clearsight.store._keys import item_ids, public_key
from clearsight.store._manifest import STORE_KEYS, RunStart, wrong_protocol
from clearsight.store._migrate import name_key_index_v3, rekey_v1, repack_v2
from clearsight.store._reads import StoreReads
from clearsight.store._records import Record
from clearsight.store._schema import (
    SCHEMA_VERSION,
    UPSERT_RECORD,
    build_key_index,
    has_key_index,
    transaction,
)
from clearsight.validate import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ADD_CHUNK", "BULK_ADD", "RunStore", "load_run", "run_manifest", "run_protocol"]

# Items added per transaction. Into a run that holds items, each commit rewrites every page of
# the key index its items touched, and random keys touch most of them once the index is large:
# 100,000 a commit costs 6.3 µs an item in SQLite over 1.8M random 32-byte keys where 20,000
# cost 10.9. The WAL (the chunk's rows and the touched index pages) peaked at 107 MB there; it
# is truncated back to 64 MiB after each checkpoint. (Into an empty run, a bulk add leaves the
# index out until its rows are in: RunStore.add_items.)
ADD_CHUNK = 100_000
# An add of at least this many items into a run without items goes in before its key index is
# built and its kinds are checked (RunStore.add_items).
BULK_ADD = 10_000


class RunStore(StoreReads):
    """One run's SQLite database: items to do, records done, and the manifest describing the run.

    Open it with :meth:`RunStore.open`; use it as a context manager or call :meth:`close`.
    """

    @classmethod
    def open(cls, run: Path | str, *, fresh: bool = False, read_only: bool = False) -> RunStore:
        """Open the store of the run directory ``run`` (or of the ``run.sqlite`` file itself).

        The writer (default) creates the directory and the database if needed; ``fresh=True``
        first deletes an existing database with its ``-wal``/``-shm`` files. ``read_only=True``
        opens an existing run for reading while a writer may be running; it never creates one.
        A run of an older schema (1, 2 or 3) is migrated by the writer on open, in one
        transaction per step; a reader refuses it, naming how to migrate it. A failure of the
        disk or the file (read-only, corrupted pages, an I/O error) is a
        :class:`~clearsight.faults.RunFault`.
        """
        path = db_path(Path(run))
        try:
            return cls._open(path, fresh=fresh, read_only=read_only)
        except sqlite3.Error as exc:
            if not is_fault(exc):
                raise
            raise fault(exc, "cannot open the run store", path) from exc

    @classmethod
    def _open(cls, path: Path, *, fresh: bool, read_only: bool) -> RunStore:
        """:meth:`open` of the database file ``path``, SQLite's errors as they are."""
        if read_only:
            if fresh:
                raise InputError("fresh=True deletes the run; it cannot be combined with read_only")
            return cls(path, connect_reader(path), read_only=True)
        if fresh:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        conn, version = connect_writer(path)
        try:
            if version == 1:
                rekey_v1(conn, path)
            store = cls(path, conn, read_only=False)
            if version in (1, 2):
                repack_v2(store._write, store._tables, path)
            elif version == 3:
                name_key_index_v3(conn)
            elif version == SCHEMA_VERSION and not has_key_index(conn):
                with transaction(conn):  # a bulk add was cut short: finish it
                    build_key_index(conn)
        except BaseException:
            conn.close()
            raise
        return store

    # ------------------------------------------------------------------------------ manifest

    def expect_protocol(self, *protocols: str) -> None:
        """InputError naming the right command when this run was made by a protocol other than
        ``protocols`` (a run whose manifest names none, or with no manifest yet, passes); the
        message names the first, the protocol the caller reads."""
        refusal = wrong_protocol(self.manifest().get("protocol"), protocols, self.path.parent)
        if refusal is not None:
            raise refusal

    def begin_run(self, manifest: Mapping[str, object], *, allow_mismatch: bool = False) -> None:
        """Record that a run (or a resume) starts with ``manifest``; check it matches the records.

        ``manifest`` holds at least ``config`` (the resolved run configuration, JSON-able) and
        anything else worth keeping (package versions, git revision, prompt hashes). The store
        adds ``config_hash`` (``content_hash`` of the config as stored), ``created_at`` (first
        start), ``schema_version`` and appends ``{started_at, config_hash}`` to ``starts``.

        If the run already has records made under a different config hash this raises
        :class:`~clearsight.store.ConfigMismatch`, unless ``allow_mismatch`` is set: then the
        previous manifest is appended to ``history`` (with ``superseded_at``) and the new one
        becomes current. A config change before any record exists is accepted the same way
        without complaint. The top-level caller entries are always those of the latest
        ``begin_run``.
        """
        start = RunStart.of(manifest)
        with self._write() as conn:

            def has_records() -> bool:
                return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM records)").fetchone()[0])

            stored = read_manifest(conn, self.path)
            rows = start.rows(stored, has_records, allow_mismatch, self.path)
            conn.execute(
                "DELETE FROM manifest WHERE key NOT IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(STORE_KEYS)),),
            )
            conn.executemany(
                "INSERT OR REPLACE INTO manifest (key, value) VALUES (?, ?)", rows.items()
            )

    def record_plan(self, plan: Mapping[str, object]) -> None:
        """Record what the driver planned (manifest entry ``plan``: the plan's fingerprint and
        the items it stored per kind), so a rerun with the same fingerprint need not plan."""
        self._put_entry("plan", dict(plan))

    def update_entry(self, key: str, value: object) -> None:
        """Replace the caller's manifest entry ``key`` while the run goes on (what a run learns
        as it runs: the batch sizes ``batch_size: auto`` chose, in ``loaded_models``); the
        entries the store writes itself are refused (InputError). The next start's manifest
        replaces it, as it replaces every caller entry."""
        if key in STORE_KEYS:
            raise InputError(f"manifest key {key!r} is written by the store itself")
        self._put_entry(key, value)

    def _put_entry(self, key: str, value: object) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO manifest (key, value) VALUES (?, ?)",
                (key, dumps(value, f"manifest entry {key!r}")),
            )

    # --------------------------------------------------------------------------------- items

    def add_items(self, items: Items[Any] | Iterable[Spec | ItemTriple]) -> int:
        """Add work items — :class:`~clearsight.store.Items` (a grid of them, say), or typed
        :class:`~clearsight.specs.Spec` values or ``(key, protocol, spec)`` triples in any
        iterable — and return how many were new.

        Items go in chunks of :data:`ADD_CHUNK`, one transaction each, so the cost is linear and
        the WAL stays bounded; a crash loses at most the chunk in flight (the rest is simply added
        again by the rerun). An item whose key is already stored is left as it is: a key is the
        content hash of its spec (principle 1), so the same key means the same item. Two items
        of one chunk with one key and different specs raise InputError. The items encode their
        own rows (:meth:`Items.rows`): a typed spec by its class's
        :class:`~clearsight.store._rows.RowEncoder` (key and row in one pass), a
        :class:`~clearsight.store.SpecGrid` straight from its groups, without building its
        items, learning its keys on the way.

        Into a run without items, at least :data:`BULK_ADD` items go in without the key index,
        which is built once they are all in (inserting 1.8M random keys into the index one by
        one cost 12 µs an item, against 4 for the rows and 2 for building it: measured in
        SQLite alone), and with each item's kind checked once at the end instead of per row
        (1.3 µs an item). The chunks still commit one by one; a key given in two chunks keeps
        its first row, as with the index. A writer that finds the index missing (the add was
        killed half-way) builds it when it opens the run; a reader meanwhile reads the rows as
        they are, looking keys up without the index.
        """
        source = as_items(items)
        self._tables.secrets = secret_values()
        rows = source.rows(self._tables)
        bulk = len(source) >= BULK_ADD and self._no_items()
        with collector_paused():  # a chunk's rows are all alive until its commit
            return self._bulk_add(rows) if bulk else self._add_rows(rows, indexed=True)

    def _bulk_add(self, rows: Iterator[Row]) -> int:
        """Add ``rows`` to a run without items: without the key index and the check of each
        item's kind while they go in, then the index built and every kind checked once (see
        :meth:`add_items`)."""
        conn = self.conn
        conn.execute("PRAGMA foreign_keys = OFF")  # outside a transaction, as SQLite needs
        try:
            with self._write() as write:
                write.execute("DROP INDEX items_key")
            try:
                added = self._add_rows(rows, indexed=False)
            finally:  # also when the add stops half-way (else the next writer's open does it)
                with self._write() as write:
                    repeated = build_key_index(write)
                    if write.execute("PRAGMA foreign_key_check(items)").fetchone() is not None:
                        raise RuntimeError("an item names a kind the store did not save")
        finally:
            conn.execute("PRAGMA foreign_keys = ON")
        return added - repeated

    def _no_items(self) -> bool:
        """Whether the run holds no item yet."""
        return self.conn.execute("SELECT 1 FROM items LIMIT 1").fetchone() is None

    def _add_rows(self, rows: Iterator[Row], indexed: bool) -> int:
        """Add ``rows`` in chunks of :data:`ADD_CHUNK`, one transaction each; how many were
        new (``indexed``: the key index is there to skip a stored key; else every row goes
        in, and the index built afterwards drops a key's later copies)."""
        added = 0
        while chunk := list(itertools.islice(rows, ADD_CHUNK)):
            added += self._add_chunk(chunk, indexed)
        return added

    def _add_chunk(self, chunk: Sequence[Row], indexed: bool) -> int:
        """Add one chunk of rows in one transaction (see :meth:`add_items`)."""
        rows: dict[str | bytes, Row] = {}
        for row in chunk:
            if rows.setdefault(row[0], row) != row:
                raise InputError(
                    f"item {public_key(row[0])} is given twice with different specs or "
                    f"protocols ({self._tables.kind_ids[row[1]][0]}: {row[2][:200]}); "
                    "a key must identify its spec"
                )
        with self._write() as conn:
            self._tables.save(conn)
            before = conn.total_changes
            conflict = " ON CONFLICT (key) DO NOTHING" if indexed else ""
            conn.executemany(
                f"INSERT INTO items (key, kind, spec) VALUES (?, ?, ?){conflict}", rows.values()
            )
            return conn.total_changes - before

    # ------------------------------------------------------------------------------- records

    def write_records(self, records: Sequence[Record]) -> int:
        """Store ``records`` in one transaction; return how many were written.

        A record for a key with a failed record replaces it and increments ``attempt``; a record
        for a key that already has an ``ok`` record is ignored (the first success is final and
        an at-least-once executor may deliver a result twice). Keys must be items already.
        """
        secrets = secret_values()
        for record in records:
            if not isinstance(record, Record):
                raise InputError(f"write_records takes Record objects, got {type(record).__name__}")
        ids = item_ids(self.conn, (r.key for r in records))
        missing = list(dict.fromkeys(r.key for r in records if r.key not in ids))
        if missing:
            raise InputError(
                f"{len(missing)} records have keys that are not items (e.g. {missing[:3]}); "
                "add_items() before writing their records"
            )
        rows = [self._tables.record_row(ids[r.key], r, secrets) for r in records]
        with self._write() as conn:
            self._tables.save(conn)
            before = conn.total_changes
            conn.executemany(UPSERT_RECORD, rows)
            return conn.total_changes - before


def load_run(
    path: Path | str,
    *,
    include_raw: bool = False,
    columns: Sequence[str] | None = None,
    where: Mapping[str, object] | None = None,
    status: str | None = None,
    kind: str | None = None,
) -> pd.DataFrame:
    """The records of a run as a DataFrame (see :meth:`RunStore.to_frame` for the columns and
    for ``columns``/``where``, which select only what is asked for, in bounded memory).

    ``path`` is the run directory or its ``run.sqlite``. Opens read-only, so it is safe while the
    run is still being written. Raises InputError if there is no clearsight run there.
    """
    with RunStore.open(path, read_only=True) as store:
        return store.to_frame(
            include_raw=include_raw, status=status, kind=kind, columns=columns, where=where
        )


def run_manifest(path: Path | str) -> dict[str, Any]:
    """The manifest of the run in ``path`` (its directory or its ``run.sqlite``), read without
    writing; a path that holds no run is an InputError saying so."""
    run = Path(path)
    if not (run / DB_NAME).is_file() and not run.is_file():
        raise InputError(f"{run} holds no run (no {DB_NAME}): give a run directory")
    with RunStore.open(run, read_only=True) as store:
        return store.manifest()


def run_protocol(path: Path | str) -> str:
    """The protocol that made the run in ``path``, as its manifest names it (``sweep`` for a
    run whose manifest names none: runs stored before manifests named their protocol), the
    key of its face (:func:`clearsight.faces.face_of`)."""
    return str(run_manifest(path).get("protocol") or "sweep")
