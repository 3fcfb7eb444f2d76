"""The run store: one SQLite database per run directory holding items, records and the manifest.

Every protocol (sweep, grounding, probe) plans *items* (a key and the full spec that determines
the output), executes them and hands *records* (status, the backend's raw output, the read-outs
computed from it) to this store. The store is what makes a run resumable: a rerun asks
:meth:`RunStore.pending_keys` and only executes what has no ``ok`` record yet.

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

Sized for the paper's 1.8 million items: what repeats is stored once. A spec field its kind
declares a part (a sweep question, scene reference, physics settings, model options:
:class:`clearsight.specs.Part`) holds the id of a ``parts`` row, the part's value stored once
under its content hash; the key names of every JSON object are stored once in ``shapes``
(:mod:`clearsight.store._packed`); an item key that is a SHA-256 hex digest (every protocol's
key) is stored as its 32 bytes, and records refer to items by integer id. The public key of an
item is unchanged: the hex text :mod:`clearsight.specs` computes.

JSON columns are declared ``TEXT`` on purpose: a declared type ``JSON`` gets SQLite's NUMERIC
affinity, which would silently turn a raw output such as ``"42"`` into the integer 42. Values are
written by :func:`json.dumps` with NaN and infinities kept as the ``NaN``/``Infinity`` tokens
(Python reads them back exactly; SQLite's JSON functions accept them from 3.42 on).

Concurrency: exactly one writer process (the executor's main process) keeps a connection; every
write is one ``BEGIN IMMEDIATE`` transaction. Any number of readers (:func:`load_run`, a UI) may
read at the same time thanks to WAL. Crash safety: with WAL and ``synchronous=NORMAL`` a process
killed at any point loses at most the transaction in flight and the file stays consistent (a
power cut may additionally lose the last few committed transactions, never consistency).
Each commit first checks that the database is still the file at its path, so a run whose
directory was deleted (or whose ``run.sqlite`` was replaced) stops instead of writing on into
a file nobody can open; that, and a failure of the disk or the file (full, read-only,
corrupted pages), is a :class:`~clearsight.faults.RunFault` naming the store.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, Self, TypeGuard

from clearsight.credentials import redact, redact_value, secret_values, url_secrets
from clearsight.faults import RunFault
from clearsight.seeding import content_hash
from clearsight.specs import Part, Spec, json_key, spec_class
from clearsight.store._bulk import collector_paused
from clearsight.store._frames import compact, join_chunks
from clearsight.store._grid import SpecGrid, SpecGrids
from clearsight.store._packed import Shapes, pack, unpack
from clearsight.store._rows import RowEncoder
from clearsight.validate import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DB_NAME",
    "SCHEMA_VERSION",
    "ConfigMismatch",
    "Record",
    "RunStore",
    "Status",
    "StoredRecord",
    "compact_json",
    "load_run",
]

DB_NAME = "run.sqlite"
SCHEMA_VERSION = 4
# Versions a writer migrates on open (schema 1 re-keyed by _rekey_v1, then it and schema 2
# repacked by RunStore._repack_v2; schema 3's items table rebuilt by _name_key_index_v3); a
# reader refuses them with the command that migrates.
_MIGRATED_VERSIONS = (1, 2, 3)

Status = Literal["ok", "failed"]
STATUSES: tuple[str, ...] = ("ok", "failed")

# Manifest keys the store writes itself; a caller's manifest may not use them.
_STORE_KEYS = frozenset(
    {"schema_version", "created_at", "config_hash", "starts", "history", "plan"}
)

# How each protocol's report is made, for the message that refuses a run of another protocol.
_REPORT_COMMANDS = {
    "sweep": "clearsight report {run}",
    "probe": "clearsight report {run}",
    "probe.build": "clearsight report {run}",
    "grounding": "clearsight grounding --out {run} (it writes the grounding report)",
}

# Columns of to_frame() that come from the records table, in order; "raw" is appended on request.
FRAME_COLUMNS: tuple[str, ...] = (
    "key",
    "protocol",
    "status",
    "error",
    "elapsed_s",
    "finished_at",
    "attempt",
)

# Rows read at a time: one chunk of Python values at a time while a frame is built (or a run
# is migrated).
CHUNK = 20_000
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

_ITEMS = """CREATE TABLE items (
    id   INTEGER PRIMARY KEY,
    key  BLOB NOT NULL,
    kind INTEGER NOT NULL REFERENCES kinds(id),
    spec TEXT NOT NULL
)"""
_KEY_INDEX = "CREATE UNIQUE INDEX items_key ON items (key)"

_SCHEMA = f"""
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
{_ITEMS};
{_KEY_INDEX};
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
_UPSERT_RECORD = """
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

# Reads of records with their items. {raw} is r.raw or NULL (a caller that needs no raw output).
_SELECT_RECORDS = (
    "SELECT i.key, r.status, r.error, {raw}, r.readouts, r.elapsed_s, r.finished_at, "
    "i.kind, i.spec, r.attempt FROM records AS r JOIN items AS i ON i.id = r.id"
)
_ITEM_KINDS = (
    "SELECT name FROM kinds WHERE EXISTS (SELECT 1 FROM items WHERE kind = kinds.id) ORDER BY name"
)
_RECORDS_PER_KIND = (
    "SELECT k.name, count(*) FROM records AS r JOIN items AS i ON i.id = r.id "
    "JOIN kinds AS k ON k.id = i.kind GROUP BY k.name ORDER BY k.name"
)
# The keys a call asks about, staged in a temporary table (a key list may hold 1.8M keys).
_WANTED = "CREATE TEMP TABLE IF NOT EXISTS wanted (pos INTEGER PRIMARY KEY, key NOT NULL)"


class ConfigMismatch(InputError):  # noqa: N818 - the name the CLI and callers use
    """An existing run with records was started with a different configuration."""

    def __init__(self, run: Path, old_hash: str, new_hash: str, changed: list[str]) -> None:
        self.old_hash = old_hash
        self.new_hash = new_hash
        self.changed = changed
        detail = "; ".join(changed) if changed else "(no top-level key differs)"
        super().__init__(
            f"{run} already holds records made with config {old_hash}, but this run's config "
            f"hashes to {new_hash}. Top-level config keys that differ: {detail}. Rerun with "
            "--fresh to discard the old records and start over, or with --allow-mismatch to "
            "keep them and continue under the new config (the old manifest is kept in history)."
        )


def _utc_now() -> str:
    """The current time as ISO-8601 UTC with milliseconds (what ``finished_at`` holds)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _json_default(obj: Any) -> Any:
    """Encode the non-JSON values a backend or config plausibly holds (numpy, paths, dates)."""
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return obj.tolist()
    if isinstance(obj, datetime | date):
        return obj.isoformat()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


# One encoder for every write: json.dumps with options would build a new encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_json_default)


def compact_json(value: Any) -> str:
    """``value`` as JSON text the way the store writes its columns: compact, key order and
    non-ASCII kept, NaN and infinities as tokens. A stored column decoded and encoded again
    reads as it is stored, so a listing can preview the decoded values of a record."""
    return _ENCODER.encode(value)


def _dumps(obj: Any, what: str, secrets: Sequence[str] | None = None) -> str:
    """Compact JSON of ``obj`` (key order kept), with the value of every key variable
    redacted (:func:`~clearsight.credentials.redact`: nothing the store writes holds a key);
    ``what`` names it in the error if it fails. ``secrets``: the values to redact, when the
    caller read them once for a whole batch (reading the environment costs ~40 µs, more than
    encoding a record)."""
    try:
        text = compact_json(obj)
        found = _secrets_in(text, secret_values() if secrets is None else secrets)
        return compact_json(redact_value(obj, found)) if found else text
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} is not JSON-able: {exc}") from exc


def _secrets_in(text: str, secrets: Sequence[str]) -> list[str]:
    """The ``secrets`` that JSON ``text`` holds, as they are or as JSON escapes them, and the
    credentials its URLs hold (:func:`~clearsight.credentials.url_secrets`)."""
    found = [s for s in secrets if s in text or _ENCODER.encode(s)[1:-1] in text]
    return found + url_secrets(text) if "://" in text else found


@dataclass(frozen=True)
class Record:
    """The outcome of one item, as the executor hands it to :meth:`RunStore.write_records`.

    ``raw`` is the backend's raw output (any JSON-able value; always stored so read-outs can be
    recomputed without the model), ``readouts`` the flat-or-nested dict of read-outs computed from
    it. A failed record carries the error message and whatever raw output exists (often None).
    ``finished_at`` defaults to the moment the record is made, i.e. when the work finished.
    """

    key: str
    status: Status
    error: str | None
    raw: Any
    readouts: Mapping[str, Any]
    elapsed_s: float
    finished_at: str = field(default_factory=_utc_now)

    @classmethod
    def failed(
        cls, key: str, reason: str | BaseException, elapsed_s: float = 0.0, raw: Any = None
    ) -> Record:
        """The one failed form of a record: ``reason`` says why (an exception reads
        ``"Type: message"``); ``raw`` is whatever output exists, else None."""
        if isinstance(reason, BaseException):
            reason = f"{type(reason).__name__}: {reason}"
        return cls(key, "failed", reason, raw, {}, elapsed_s)

    def __post_init__(self) -> None:
        """Reject a record the database would reject, with a message naming the key."""
        if not isinstance(self.key, str) or not self.key:
            raise InputError(f"record key must be a non-empty string, got {self.key!r}")
        if self.status not in STATUSES:
            raise InputError(
                f"record {self.key}: status must be 'ok' or 'failed', got {self.status!r}"
            )
        if self.status == "ok" and self.error is not None:
            raise InputError(
                f"record {self.key}: an 'ok' record has error None, got {self.error!r}"
            )
        if self.status == "failed" and (not isinstance(self.error, str) or not self.error):
            raise InputError(f"record {self.key}: a 'failed' record needs an error message")
        if not isinstance(self.readouts, Mapping):
            raise InputError(
                f"record {self.key}: readouts must be a mapping, got {self.readouts!r}"
            )
        elapsed = float(self.elapsed_s)
        if not math.isfinite(elapsed) or elapsed < 0:
            raise InputError(f"record {self.key}: elapsed_s must be >= 0, got {self.elapsed_s!r}")
        try:
            datetime.fromisoformat(self.finished_at)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"record {self.key}: finished_at {self.finished_at!r} is not ISO-8601"
            ) from exc


@dataclass(frozen=True, kw_only=True)
class StoredRecord(Record):
    """A record read back from the store, with its item (protocol, spec) and attempt number."""

    protocol: str
    spec: dict[str, Any]
    attempt: int


class RunStore:
    """One run's SQLite database: items to do, records done, and the manifest describing the run.

    Open it with :meth:`RunStore.open`; use it as a context manager or call :meth:`close`.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, *, read_only: bool) -> None:
        """Wrap an open connection; use :meth:`RunStore.open` rather than calling this."""
        self.path = path
        self.read_only = read_only
        self._conn: sqlite3.Connection | None = conn
        #: The file the writer opened (device, inode): every commit checks it is still there.
        self._identity = None if read_only else _identity(path)
        self._tables = _Tables()
        self._tables.load(conn)

    # ----------------------------------------------------------------------------- lifecycle

    @classmethod
    def open(cls, run: Path | str, *, fresh: bool = False, read_only: bool = False) -> RunStore:
        """Open the store of the run directory ``run`` (or of the ``run.sqlite`` file itself).

        The writer (default) creates the directory and the database if needed; ``fresh=True``
        first deletes an existing database with its ``-wal``/``-shm`` files. ``read_only=True``
        opens an existing run for reading while a writer may be running; it never creates one.
        A run of an older schema (1 or 2) is migrated by the writer on open, in one transaction
        per step; a reader refuses it, naming how to migrate it. A failure of the disk or the
        file (read-only, corrupted pages, an I/O error) is a :class:`~clearsight.faults.RunFault`.
        """
        path = _db_path(Path(run))
        try:
            return cls._open(path, fresh=fresh, read_only=read_only)
        except sqlite3.Error as exc:
            if not _is_fault(exc):
                raise
            raise _fault(exc, "cannot open the run store", path) from exc

    @classmethod
    def _open(cls, path: Path, *, fresh: bool, read_only: bool) -> RunStore:
        """:meth:`open` of the database file ``path``, SQLite's errors as they are."""
        if read_only:
            if fresh:
                raise InputError("fresh=True deletes the run; it cannot be combined with read_only")
            return cls(path, _connect_reader(path), read_only=True)
        if fresh:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        conn, version = _connect_writer(path)
        try:
            if version == 1:
                _rekey_v1(conn, path)
            store = cls(path, conn, read_only=False)
            if version in (1, 2):
                store._repack_v2()
            elif version == 3:
                _name_key_index_v3(conn)
            elif version == SCHEMA_VERSION and not _has_key_index(conn):
                conn.execute("BEGIN IMMEDIATE")  # a bulk add was cut short: finish it
                _build_key_index(conn)
                conn.execute("COMMIT")
        except BaseException:
            conn.close()
            raise
        return store

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
        if exc is not None and _is_fault(exc):
            raise _fault(exc, "database error", self.path) from exc

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection, for checks of the database itself (``PRAGMA integrity_check``).
        Read and write through the methods: they keep the transactions and checks, and they
        are the one place that knows the schema (nothing outside this module runs SQL)."""
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
            if _is_fault(exc):
                raise _fault(exc, "cannot write the run store", self.path) from exc
            raise
        self._tables.saved()

    def _check_in_place(self) -> None:
        """Raise :class:`~clearsight.faults.RunFault` when the database this writer holds open
        is no longer the file at its path: the run directory was deleted or moved, or its
        ``run.sqlite`` replaced, while the run wrote it (what it writes would go into a file
        nobody can open again)."""
        try:
            now = _identity(self.path)
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

    @contextmanager
    def _wanted(self, keys: Iterable[str]) -> Iterator[sqlite3.Connection]:
        """``keys`` staged in ``temp.wanted`` (column ``pos`` their order, ``key`` as stored),
        inside a transaction: the caller's, or one that ends with the block."""
        conn = self.conn
        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN")
        try:
            conn.execute(_WANTED)
            conn.executemany(
                "INSERT INTO temp.wanted (key) VALUES (?)", ((_stored_key(k),) for k in keys)
            )
            yield conn
        finally:
            conn.execute("DELETE FROM temp.wanted")
            if own:
                conn.execute("COMMIT")

    def _repack_v2(self) -> None:
        """Migrate schema 2 to 4 in one transaction: every item and record re-encoded in the
        compact layout (parts, shapes, 32-byte keys, integer ids), keys and values unchanged."""
        with self._write() as conn:
            conn.execute("ALTER TABLE records RENAME TO old_records")
            conn.execute("ALTER TABLE items RENAME TO old_items")
            for statement in _SCHEMA.split(";"):
                if statement.strip() and "TABLE manifest" not in statement:
                    conn.execute(statement)
            secrets = secret_values()
            old = conn.execute("SELECT key, protocol, spec FROM old_items ORDER BY rowid")
            while batch := old.fetchmany(CHUNK):
                rows = [
                    self._tables.spec_row(
                        key, kind, _loads(spec, self.path, "items", key, "spec"), None, secrets
                    )
                    for key, kind, spec in batch
                ]
                self._tables.save(conn)
                self._tables.saved()
                conn.executemany("INSERT INTO items (key, kind, spec) VALUES (?, ?, ?)", rows)
            old = conn.execute(
                "SELECT key, status, error, raw, readouts, elapsed_s, finished_at, attempt "
                "FROM old_records ORDER BY rowid"
            )
            while batch := old.fetchmany(CHUNK):
                ids = self._item_ids(row[0] for row in batch)
                records = [
                    (
                        ids[key],
                        status,
                        error,
                        *(
                            self._tables.encode(
                                _loads(text, self.path, "records", key, column), column, secrets
                            )
                            for column, text in (("raw", raw), ("readouts", readouts))
                        ),
                        *rest,
                    )
                    for key, status, error, raw, readouts, *rest in batch
                ]
                self._tables.save(conn)
                self._tables.saved()
                conn.executemany(
                    "INSERT INTO records (id, status, error, raw, readouts, elapsed_s, "
                    "finished_at, attempt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    records,
                )
            conn.execute("DROP TABLE old_records")
            conn.execute("DROP TABLE old_items")
            conn.execute(
                "UPDATE manifest SET value = ? WHERE key = 'schema_version'",
                (json.dumps(SCHEMA_VERSION),),
            )

    # ------------------------------------------------------------------------------ manifest

    def manifest(self) -> dict[str, Any]:
        """All manifest entries, JSON-decoded."""
        return _read_manifest(self.conn, self.path)

    def expect_protocol(self, *protocols: str) -> None:
        """InputError naming the right command when this run was made by a protocol other than
        ``protocols`` (a run whose manifest names none, or with no manifest yet, passes); the
        message names the first, the protocol the caller reads."""
        made_by = self.manifest().get("protocol")
        if made_by is None or made_by in protocols:
            return
        command = _REPORT_COMMANDS.get(str(made_by), "the command of that protocol")
        run = self.path.parent
        raise InputError(
            f"{run} is a {made_by} run, not a {protocols[0]} run: use {command.format(run=run)}"
        )

    def begin_run(self, manifest: Mapping[str, Any], *, allow_mismatch: bool = False) -> None:
        """Record that a run (or a resume) starts with ``manifest``; check it matches the records.

        ``manifest`` holds at least ``config`` (the resolved run configuration, JSON-able) and
        anything else worth keeping (package versions, git revision, prompt hashes). The store
        adds ``config_hash`` (``content_hash`` of the config as stored), ``created_at`` (first
        start), ``schema_version`` and appends ``{started_at, config_hash}`` to ``starts``.

        If the run already has records made under a different config hash this raises
        :class:`ConfigMismatch`, unless ``allow_mismatch`` is set: then the previous manifest is
        appended to ``history`` (with ``superseded_at``) and the new one becomes current. A
        config change before any record exists is accepted the same way without complaint.
        The top-level caller entries are always those of the latest ``begin_run``.
        """
        entries = dict(manifest)
        if "config" not in entries:
            raise InputError("the manifest must hold 'config', the resolved run configuration")
        if reserved := sorted(entries.keys() & _STORE_KEYS):
            raise InputError(f"manifest keys {reserved} are written by the store itself")
        # Store and hash the config as it reads back, so content_hash(manifest()["config"]) holds.
        entries["config"] = json.loads(_dumps(entries["config"], "config"))
        encoded = {key: _dumps(value, f"manifest entry {key!r}") for key, value in entries.items()}
        new_hash = content_hash(entries["config"])
        now = _utc_now()
        with self._write() as conn:
            stored = _read_manifest(conn, self.path)
            old_hash = stored.get("config_hash")
            history = list(stored.get("history", []))
            if old_hash is not None and old_hash != new_hash:
                has_records = conn.execute("SELECT EXISTS (SELECT 1 FROM records)").fetchone()[0]
                if has_records and not allow_mismatch:
                    changed = _config_diff(stored.get("config"), entries["config"])
                    raise ConfigMismatch(self.path, old_hash, new_hash, changed)
                previous = {
                    k: v for k, v in stored.items() if k not in _STORE_KEYS - {"config_hash"}
                }
                history.append({**previous, "superseded_at": now})
            starts = [*stored.get("starts", []), {"started_at": now, "config_hash": new_hash}]
            store_entries: dict[str, Any] = {
                "config_hash": new_hash,
                "starts": starts,
                "history": history,
                "created_at": stored.get("created_at", now),
            }
            encoded.update({k: _dumps(v, k) for k, v in store_entries.items()})
            conn.execute(
                "DELETE FROM manifest WHERE key NOT IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(_STORE_KEYS)),),
            )
            conn.executemany(
                "INSERT OR REPLACE INTO manifest (key, value) VALUES (?, ?)", encoded.items()
            )

    def record_plan(self, plan: Mapping[str, Any]) -> None:
        """Record what the driver planned (manifest entry ``plan``: the plan's fingerprint and
        the items it stored per kind), so a rerun with the same fingerprint need not plan."""
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO manifest (key, value) VALUES ('plan', ?)",
                (_dumps(dict(plan), "the plan entry"),),
            )

    # --------------------------------------------------------------------------------- items

    def add_items(self, items: Iterable[Spec | tuple[str, str, Mapping[str, Any]]]) -> int:
        """Add work items — typed :class:`~clearsight.specs.Spec` values or ``(key, protocol,
        spec)`` triples — and return how many were new.

        Items go in chunks of :data:`ADD_CHUNK`, one transaction each, so the cost is linear and
        the WAL stays bounded; a crash loses at most the chunk in flight (the rest is simply added
        again by the rerun). An item whose key is already stored is left as it is: a key is the
        content hash of its spec (principle 1), so the same key means the same item. Two items
        of one chunk with one key and different specs raise InputError. A typed spec is encoded
        by its class's :class:`~clearsight.store._rows.RowEncoder` (key and row in one pass); a
        :class:`~clearsight.store._grid.SpecGrid` (or several) straight from its groups, without
        building its items, learning its keys on the way.

        Into a run without items, at least :data:`BULK_ADD` items go in without the key index,
        which is built once they are all in (inserting 1.8M random keys into the index one by
        one cost 12 µs an item, against 4 for the rows and 2 for building it: measured in
        SQLite alone), and with each item's kind checked once at the end instead of per row
        (1.3 µs an item). The chunks still commit one by one; a key given in two chunks keeps
        its first row, as with the index. A writer that finds the index missing (the add was
        killed half-way) builds it when it opens the run; a reader meanwhile reads the rows as
        they are, looking keys up without the index.
        """
        tables = self._tables
        tables.secrets = secret_values()
        if isinstance(items, SpecGrid):
            items = SpecGrids([items])
        rows: Iterator[tuple[str | bytes, int, str]]
        if isinstance(items, SpecGrids):  # straight from the groups (clearsight.store._grid)
            rows = itertools.chain.from_iterable(map(tables.grid_rows, items.grids))
        else:
            rows = (tables.item_row(item)[1] for item in items)
        bulk = isinstance(items, Sized) and len(items) >= BULK_ADD and self._no_items()
        with collector_paused():  # a chunk's rows are all alive until its commit
            return self._bulk_add(rows) if bulk else self._add_rows(rows, indexed=True)

    def _bulk_add(self, rows: Iterator[tuple[str | bytes, int, str]]) -> int:
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
                    repeated = _build_key_index(write)
                    if write.execute("PRAGMA foreign_key_check(items)").fetchone() is not None:
                        raise RuntimeError("an item names a kind the store did not save")
        finally:
            conn.execute("PRAGMA foreign_keys = ON")
        return added - repeated

    def _no_items(self) -> bool:
        """Whether the run holds no item yet."""
        return self.conn.execute("SELECT 1 FROM items LIMIT 1").fetchone() is None

    def _add_rows(self, rows: Iterator[tuple[str | bytes, int, str]], indexed: bool) -> int:
        """Add ``rows`` in chunks of :data:`ADD_CHUNK`, one transaction each; how many were
        new (``indexed``: the key index is there to skip a stored key; else every row goes
        in, and the index built afterwards drops a key's later copies)."""
        added = 0
        while chunk := list(itertools.islice(rows, ADD_CHUNK)):
            added += self._add_chunk(chunk, indexed)
        return added

    def _add_chunk(self, chunk: Sequence[tuple[str | bytes, int, str]], indexed: bool) -> int:
        """Add one chunk of rows in one transaction (see :meth:`add_items`)."""
        rows: dict[str | bytes, tuple[str | bytes, int, str]] = {}
        for row in chunk:
            if rows.setdefault(row[0], row) != row:
                raise InputError(
                    f"item {_public_key(row[0])} is given twice with different specs or "
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

    def pending_keys(
        self, keys: Iterable[str] | None = None, *, kind: str | None = None
    ) -> list[str]:
        """Keys without an ``ok`` record (failed ones are retried), of ``keys`` or of all items
        (of item ``kind``, when given).

        With ``keys`` the result keeps their order (duplicates dropped) and includes keys that are
        not items at all; without, it lists items in the order they were added. One query either
        way: the given keys are staged in a temporary table.
        """
        if keys is None:
            where, params = ("", []) if kind is None else _filters(None, kind)
            where = where.replace(" WHERE ", " AND ")
            query = (
                "SELECT i.key FROM items AS i LEFT JOIN records AS r "
                f"ON r.id = i.id AND r.status = 'ok' WHERE r.id IS NULL{where} ORDER BY i.id"
            )
            return [_public_key(key) for (key,) in self.conn.execute(query, params)]
        with self._wanted(dict.fromkeys(keys)) as conn:
            query = (
                "SELECT w.key FROM temp.wanted AS w LEFT JOIN items AS i ON i.key = w.key "
                "LEFT JOIN records AS r ON r.id = i.id AND r.status = 'ok' "
                "WHERE r.id IS NULL ORDER BY w.pos"
            )
            return [_public_key(key) for (key,) in conn.execute(query)]

    def _item_ids(self, keys: Iterable[str]) -> dict[str, int]:
        """Item id of each of ``keys`` that is an item."""
        with self._wanted(keys) as conn:
            query = "SELECT w.key, i.id FROM temp.wanted AS w JOIN items AS i ON i.key = w.key"
            return {_public_key(key): id_ for key, id_ in conn.execute(query)}

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
        ids = self._item_ids(r.key for r in records)
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
            conn.executemany(_UPSERT_RECORD, rows)
            return conn.total_changes - before

    def counts(self) -> dict[str, int]:
        """``items``, ``ok``, ``failed`` and ``pending`` (items without an ok record) counts."""
        # One statement, so a reader sees one snapshot even while the writer commits.
        n_items, ok, failed = self.conn.execute(
            "SELECT (SELECT count(*) FROM items), "
            "(SELECT count(*) FROM records WHERE status = 'ok'), "
            "(SELECT count(*) FROM records WHERE status = 'failed')"
        ).fetchone()
        return {"items": n_items, "ok": ok, "failed": failed, "pending": n_items - ok}

    def count_items(self, kind: str) -> int:
        """The number of items of ``kind``."""
        query = "SELECT count(*) FROM items AS i JOIN kinds AS k ON k.id = i.kind WHERE k.name = ?"
        return int(self.conn.execute(query, (kind,)).fetchone()[0])

    # ------------------------------------------------------------------------ reading by kind
    #
    # Every read a report, the UI or a protocol's results module needs, so that no SQL runs
    # outside this module. An item's *kind* is its ``protocol``: a protocol's main items
    # (``sweep``, ``probe``) and its secondary ones (``sweep.veq``, ``probe.belief``,
    # ``grounding.elicit``...). ``status`` and ``kind`` filters left at None select everything.

    def item_kinds(self) -> list[str]:
        """The distinct kinds of the run's items, sorted (what a run holds, records or not)."""
        return [kind for (kind,) in self.conn.execute(_ITEM_KINDS)]

    def records_per_kind(self) -> dict[str, int]:
        """How many records each item kind has, kinds sorted (kinds without records absent)."""
        return dict(self.conn.execute(_RECORDS_PER_KIND).fetchall())

    def count_records(self, *, status: str | None = None, kind: str | None = None) -> int:
        """The number of records with ``status`` ('ok' or 'failed') of items of ``kind``."""
        where, params = _filters(status, kind)
        query = f"SELECT count(*) FROM records AS r JOIN items AS i ON i.id = r.id{where}"
        return int(self.conn.execute(query, params).fetchone()[0])

    def iter_records(
        self, status: str | None = None, *, kind: str | None = None, raw: bool = True
    ) -> Iterator[StoredRecord]:
        """Every record (or those with ``status`` and of item ``kind``) with its item, in the
        order items were added. ``raw=False`` leaves the raw outputs unread (``raw`` is None):
        tables and listings rarely need them, and they are most of a run's bytes."""
        where, params = _filters(status, kind)
        return self._read_records(f"{where} ORDER BY i.id", params, raw=raw)

    def records_page(
        self, offset: int, limit: int, *, status: str | None = None, kind: str | None = None
    ) -> list[StoredRecord]:
        """At most ``limit`` records from the ``offset``-th on (0-based, in item order, filtered
        as :meth:`iter_records` does), without raw outputs. One LIMIT/OFFSET query, so a page
        costs the same in a run of a million records as in one of ten."""
        where, params = _filters(status, kind)
        tail = f"{where} ORDER BY i.id LIMIT ? OFFSET ?"
        return list(self._read_records(tail, [*params, limit, offset], raw=False))

    def record(self, key: str) -> StoredRecord | None:
        """The record of ``key`` with its item and raw output, or None if it has no record."""
        return next(self._read_records(" WHERE i.key = ?", [_stored_key(key)], raw=True), None)

    def raw_outputs(self, keys: Iterable[str]) -> dict[str, Any]:
        """The decoded raw outputs of the records of ``keys`` (keys without a record absent),
        in one query: for the few examples a report shows of a run it does not load raw."""
        wanted = list(keys)
        if not wanted:
            return {}
        query = (
            "SELECT i.key, r.raw FROM temp.wanted AS w JOIN items AS i ON i.key = w.key "
            "JOIN records AS r ON r.id = i.id"
        )
        with self._wanted(wanted) as conn:
            rows = conn.execute(query).fetchall()
        decode = self._tables.decode
        return {
            (key := _public_key(stored)): decode(raw, self.path, "records", key, "raw")
            for stored, raw in rows
        }

    def _read_records(
        self, tail: str, params: Sequence[str | int | bytes], *, raw: bool
    ) -> Iterator[StoredRecord]:
        """The records a ``WHERE ... ORDER BY ...`` ``tail`` selects, decoded (raw on request),
        fetched in batches so a large run is never held in memory at once."""
        query = _SELECT_RECORDS.format(raw="r.raw" if raw else "NULL") + tail
        cursor = self.conn.execute(query, params)
        tables, path = self._tables, self.path
        while batch := cursor.fetchmany(1000):
            for stored, st, error, raw_text, readouts, elapsed, finished, kind, spec, n in batch:
                key = _public_key(stored)
                yield StoredRecord(
                    key=key,
                    status=st,
                    error=error,
                    raw=tables.decode(raw_text, path, "records", key, "raw") if raw else None,
                    readouts=tables.decode(readouts, path, "records", key, "readouts"),
                    elapsed_s=elapsed,
                    finished_at=finished,
                    protocol=tables.kind_name(kind, self.conn),
                    spec=tables.spec(kind, spec, self.conn, path, key),
                    attempt=n,
                )

    # -------------------------------------------------------------------------------- export

    def to_frame(
        self,
        *,
        include_raw: bool = False,
        status: str | None = None,
        kind: str | None = None,
        columns: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> pd.DataFrame:
        """One row per record (or per record with ``status`` of items of ``kind``), joined with
        its item, in the order items were added.

        Columns: ``key, protocol, status, error, elapsed_s, finished_at, attempt``, then the
        item's spec fields, then the read-outs, then ``raw`` (the raw output as a JSON string) if
        ``include_raw`` -- off by default because raw outputs are large and analysis rarely needs
        them. Nested dicts are flattened with ``"."`` (``letter_probs.A``); lists and empty dicts
        become JSON strings so every cell is a scalar (Parquet and CSV round-trip). Name
        collisions are resolved by prefixing, only where they occur: a spec field named like a
        fixed column becomes ``spec.<name>``, a read-out named like a fixed column or a spec
        field becomes ``readouts.<name>``. Items without a record are not rows. Collisions are
        looked for among the selected rows only, so one kind's frame has that kind's names.

        ``columns``: only these columns, in this order (a name no selected row has is left
        out). ``where``: only the rows whose column equals the value, or is one of the values
        of a list, tuple or set, for each ``column: value`` (``status`` and ``protocol`` are
        selected in SQL, the others a chunk at a time). Rows are read :data:`CHUNK` at a time
        and text columns whose values repeat are categoricals, so memory is the frame and one
        chunk, never a Python object per cell.
        """
        reader = _FrameReader(columns, where, include_raw)
        status = _take_scalar(reader.where, "status", status)
        sql_where, params = _filters(status, _take_scalar(reader.where, "protocol", kind))
        query = (
            "SELECT i.key, i.kind, r.status, r.error, r.elapsed_s, r.finished_at, r.attempt, "
            f"i.spec, r.readouts, {'r.raw' if include_raw else 'NULL'} "
            f"FROM records AS r JOIN items AS i ON i.id = r.id{sql_where} ORDER BY i.id"
        )
        cursor = self.conn.execute(query, params)
        while batch := cursor.fetchmany(CHUNK):
            reader.add(self._frame_rows(batch))
        return reader.frame()

    def _frame_rows(
        self, batch: Sequence[tuple[Any, ...]]
    ) -> tuple[list[tuple[Any, ...]], list[dict[str, Any]], list[dict[str, Any]], list[Any]]:
        """One chunk of to_frame's query decoded: fixed values, flat spec, flat read-outs, raw."""
        tables, conn, path = self._tables, self.conn, self.path
        fixed, specs, readouts, raws = [], [], [], []
        memo: dict[tuple[int, str], tuple[Any, dict[str, Any]]] = {}  # parts flattened once
        for stored, kind, *rest, spec, readout, raw in batch:
            key = _public_key(stored)
            fixed.append((key, tables.kind_name(kind, conn), *rest))
            value = tables.spec(kind, spec, conn, path, key, shared=True)
            specs.append(_flatten(value, parts=tables.kind_ids[kind][1], memo=memo))
            readouts.append(_flatten(tables.decode(readout, path, "records", key, "readouts")))
            if raw is not None:
                raw = compact_json(tables.decode(raw, path, "records", key, "raw"))
            raws.append(raw)
        return fixed, specs, readouts, raws

    def export(
        self,
        path: Path | str,
        fmt: Literal["parquet", "csv"] | None = None,
        *,
        include_raw: bool = False,
    ) -> Path:
        """Write :meth:`to_frame` to ``path`` as Parquet or CSV (default: from the suffix).

        Parquet keeps dtypes and is the format for analysis at scale. CSV is for eyes and
        spreadsheets; read it back with ``pd.read_csv(path, keep_default_na=False,
        na_values=[""])`` so that text such as a raw ``null`` or an answer ``"NA"`` is not
        turned into a missing value.
        """
        path = Path(path)
        chosen = fmt or {".parquet": "parquet", ".csv": "csv"}.get(path.suffix.lower())
        if chosen not in ("parquet", "csv"):
            raise InputError(
                f"cannot tell the export format of {path}: pass fmt='parquet' or fmt='csv' "
                "or use a .parquet/.csv suffix"
            )
        frame = self.to_frame(include_raw=include_raw)
        path.parent.mkdir(parents=True, exist_ok=True)
        if chosen == "parquet":
            frame.to_parquet(path, index=False)
        else:
            frame.to_csv(path, index=False)
        return path


def load_run(
    path: Path | str,
    *,
    include_raw: bool = False,
    columns: Sequence[str] | None = None,
    where: Mapping[str, Any] | None = None,
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


class _FrameReader:
    """Builds :meth:`RunStore.to_frame`'s frame a chunk at a time (see its docstring)."""

    def __init__(
        self, columns: Sequence[str] | None, where: Mapping[str, Any] | None, include_raw: bool
    ) -> None:
        self.columns = None if columns is None else list(dict.fromkeys(columns))
        self.where = dict(where or {})
        self.include_raw = include_raw
        self.need = None if self.columns is None else {*self.columns, *self.where}
        self.chunks: list[tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]] = []
        self.spec_names: dict[str, None] = {}  # every flat spec name seen (for collisions)
        self.readout_names: dict[str, None] = {}

    def add(
        self,
        rows: tuple[list[tuple[Any, ...]], list[dict[str, Any]], list[dict[str, Any]], list[Any]],
    ) -> None:
        """Turn one decoded chunk into typed frames, keeping the wanted columns and rows."""
        import pandas as pd

        fixed_rows, specs, readouts, raws = rows
        index = range(len(fixed_rows))
        fixed = pd.DataFrame(fixed_rows, columns=list(FRAME_COLUMNS), index=index)
        if self.include_raw:
            fixed["raw"] = raws
        spec = pd.DataFrame(specs, index=index)
        readout = pd.DataFrame(readouts, index=index)
        self.spec_names.update(dict.fromkeys(spec.columns))
        self.readout_names.update(dict.fromkeys(readout.columns))
        if self.need is not None:
            need = self.need
            fixed = fixed[[c for c in fixed.columns if c in need]]
            spec = spec[[c for c in spec.columns if c in need or f"spec.{c}" in need]]
            readout = readout[[c for c in readout.columns if c in need or f"readouts.{c}" in need]]
        if self.where:
            keep = self._mask(fixed, spec, readout)
            fixed, spec, readout = fixed[keep], spec[keep], readout[keep]
        self.chunks.append((compact(fixed), compact(spec), compact(readout)))

    def _mask(self, fixed: pd.DataFrame, spec: pd.DataFrame, readout: pd.DataFrame) -> Any:
        """The rows of one chunk that ``where`` keeps."""
        import numpy as np

        keep = np.ones(len(fixed), dtype=bool)
        for name, wanted in self.where.items():
            column = _where_column(name, fixed, spec, readout)
            values = (
                list(wanted) if isinstance(wanted, list | tuple | set | frozenset) else [wanted]
            )
            keep &= column.isin(values).to_numpy() if column is not None else False
        return keep

    def frame(self) -> pd.DataFrame:
        """The chunks joined, collisions prefixed, the asked-for columns in order."""
        import pandas as pd

        reserved = {*FRAME_COLUMNS, "raw"}
        spec_name = {c: f"spec.{c}" if c in reserved else c for c in self.spec_names}
        taken = reserved | set(spec_name.values())
        readout_name = {c: f"readouts.{c}" if c in taken else c for c in self.readout_names}
        fixed = list(FRAME_COLUMNS) + (["raw"] if self.include_raw else [])
        parts = []
        for index, names in enumerate((fixed, list(spec_name), list(readout_name))):
            chunks = [chunk[index] for chunk in self.chunks]
            present = [n for n in names if any(n in c.columns for c in chunks)]
            parts.append(join_chunks(chunks, present if self.chunks else names))
        parts[1] = parts[1].rename(columns=spec_name)
        parts[2] = parts[2].rename(columns=readout_name)
        if self.include_raw:  # the raw output is the last column
            parts.append(parts[0].pop("raw").to_frame())
        out = pd.concat(parts, axis=1)
        if self.columns is not None:
            out = out[[c for c in self.columns if c in out.columns]]
        return out


def _where_column(
    name: str, fixed: pd.DataFrame, spec: pd.DataFrame, readout: pd.DataFrame
) -> pd.Series | None:
    """The column ``where`` names in one chunk (prefixed or plain, as in the frame)."""
    if name in fixed.columns:
        return fixed[name]
    for prefix, frame in (("spec.", spec), ("readouts.", readout)):
        if name.startswith(prefix) and name[len(prefix) :] in frame.columns:
            return frame[name[len(prefix) :]]
    if name in spec.columns and name not in FRAME_COLUMNS:
        return spec[name]
    return readout[name] if name in readout.columns else None


def _take_scalar(where: dict[str, Any], name: str, given: str | None) -> str | None:
    """A ``where`` entry on ``name`` holding one string, taken out to be selected in SQL (when
    the caller's own filter ``given`` is not set)."""
    value = where.get(name)
    if given is None and isinstance(value, str):
        del where[name]
        return value
    return given


# ----------------------------------------------------------------------------------- helpers


#: What to do about a SQLite failure, by its primary result code.
_FAULT_HINTS: Final = {
    "SQLITE_FULL": "free some space, then rerun the command to resume: what was committed is kept",
    "SQLITE_READONLY": "make the run directory writable, or copy the run elsewhere",
    "SQLITE_CANTOPEN": "check that the run directory exists and is writable",
    "SQLITE_IOERR": "check the disk and the file system, then rerun the command to resume",
    "SQLITE_CORRUPT": "the store is damaged: restore run.sqlite from a copy, or start over "
    "with --fresh",
    "SQLITE_NOTADB": "the file is not a SQLite database: restore it from a copy, or start "
    "over with --fresh",
}


def _is_fault(exc: BaseException) -> TypeGuard[sqlite3.Error]:
    """Whether ``exc`` is a SQLite failure of the file or the machine (full, read-only,
    corrupted, an I/O error), not one of a statement (a constraint, a programming error,
    which stay tracebacks: they are bugs)."""
    return type(exc) in (sqlite3.DatabaseError, sqlite3.OperationalError)


def _fault(exc: sqlite3.Error, what: str, where: object) -> RunFault:
    """The SQLite failure ``exc`` of the store at ``where`` as a :class:`RunFault`: SQLite's
    own message and what to do about it."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    primary = "_".join(name.split("_")[:2])  # SQLITE_IOERR_WRITE -> SQLITE_IOERR
    hint = _FAULT_HINTS.get(primary)
    return RunFault(what, where, f"{exc}" + (f" ({hint})" if hint else ""))


def _db_path(run: Path) -> Path:
    """The database file of ``run``: ``run`` itself if it is a file or is named ``run.sqlite``,
    else ``run/run.sqlite`` (a run directory may have any name, even one ending in .sqlite)."""
    if run.is_file() or (run.name == DB_NAME and not run.is_dir()):
        return run
    return run / DB_NAME


def _identity(path: Path) -> tuple[int, int]:
    """``(device, inode)`` of the file at ``path``: which file it is, whatever its name."""
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _configure(conn: sqlite3.Connection) -> None:
    """Connection settings both readers and the writer use."""
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 10000")


def _check_schema(conn: sqlite3.Connection, path: Path) -> int:
    """The schema version of the clearsight run at ``path``, 0 if it is an empty database.

    Raises InputError for anything else: not SQLite, another application's database, or a run
    written by a clearsight with a schema version this one cannot read.
    """
    try:
        n_tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if n_tables == 0:
            return 0
        row = conn.execute("SELECT value FROM manifest WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorname", "") not in ("SQLITE_NOTADB", "SQLITE_ERROR"):
            raise  # a failure of the disk or the file: a RunFault (RunStore.open)
        raise InputError(f"{path} is not a clearsight run database ({exc})") from exc
    if row is None:
        raise InputError(f"{path} is not a clearsight run database (no schema_version)")
    version = _loads(row[0], path, "manifest", "schema_version")
    if version != SCHEMA_VERSION and version not in _MIGRATED_VERSIONS:
        raise InputError(
            f"{path} has run-store schema version {version}; this clearsight reads version "
            f"{SCHEMA_VERSION} and migrates versions "
            f"{', '.join(map(str, _MIGRATED_VERSIONS))}. Use a matching clearsight, or start "
            "over with --fresh."
        )
    return int(version)


def _rekey_v1(conn: sqlite3.Connection, path: Path) -> None:
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
        new = json_key(kind, _loads(text, path, "items", key, "spec"))
        if new != key:
            changed.append((new, key))
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("PRAGMA defer_foreign_keys = ON")
        conn.executemany("UPDATE records SET key = ? WHERE key = ?", changed)
        conn.executemany("UPDATE items SET key = ? WHERE key = ?", changed)
        conn.execute("UPDATE manifest SET value = ? WHERE key = 'schema_version'", (json.dumps(2),))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _name_key_index_v3(conn: sqlite3.Connection) -> None:
    """Migrate schema 3 to 4 in one transaction: the items table rebuilt with its key index
    named (``items_key``) instead of declared inline, every row and id unchanged (SQLite's
    way to change a constraint: a new table, the rows copied, the old one dropped, with the
    foreign keys that refer to it checked after)."""
    conn.execute("PRAGMA foreign_keys = OFF")  # the records' table refers to the one replaced
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_ITEMS.replace("TABLE items", "TABLE new_items"))
            conn.execute("INSERT INTO new_items SELECT id, key, kind, spec FROM items")
            conn.execute("DROP TABLE items")
            conn.execute("ALTER TABLE new_items RENAME TO items")
            _build_key_index(conn)
            if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                raise RuntimeError("a record refers to no item after rebuilding the items table")
            conn.execute(
                "UPDATE manifest SET value = ? WHERE key = 'schema_version'", (json.dumps(4),)
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.execute("PRAGMA foreign_keys = ON")


def _has_key_index(conn: sqlite3.Connection) -> bool:
    """Whether the items' key index is there (a bulk add drops it while it adds)."""
    query = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'items_key'"
    return conn.execute(query).fetchone() is not None


def _build_key_index(conn: sqlite3.Connection) -> int:
    """Build the items' unique key index (in the caller's transaction); a key stored twice
    (given in two chunks of one bulk add) keeps its first row, as the index would have kept
    it. Returns how many later rows were dropped."""
    try:
        conn.execute(_KEY_INDEX)
        return 0
    except sqlite3.IntegrityError:  # the statement alone is undone
        dropped = conn.execute(
            "DELETE FROM items WHERE id NOT IN (SELECT min(id) FROM items GROUP BY key)"
        ).rowcount
        conn.execute(_KEY_INDEX)
        return int(dropped)


def _connect_writer(path: Path) -> tuple[sqlite3.Connection, int]:
    """Open (creating if needed) the database for the single writer: WAL, synchronous=NORMAL,
    a bounded WAL (checkpointed every 1000 pages); with the schema version it was found in."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        _configure(conn)
        version = _check_schema(conn, path)
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            raise InputError(
                f"{path}: SQLite could not switch to WAL mode (got {mode!r}); put the run "
                "directory on a local file system"
            )
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint = 1000")
        # up to 256 MiB of page cache: the key index of 1.8M items (~80 MB) stays in memory,
        # where SQLite's default 2 MiB made every insert of a random key a page miss
        conn.execute("PRAGMA cache_size = -262144")
        conn.execute("PRAGMA journal_size_limit = 67108864")  # truncate the WAL back to 64 MiB
        if version == 0:
            _create_schema(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn, version


def _create_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Create the tables and write the schema version in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(
            "INSERT INTO manifest (key, value) VALUES ('schema_version', ?)",
            (json.dumps(SCHEMA_VERSION),),
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _connect_reader(path: Path) -> sqlite3.Connection:
    """Open an existing run read-only; InputError if it is missing or not a clearsight run."""
    if not path.is_file():
        raise InputError(f"no clearsight run at {path}: the file does not exist")
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        _configure(conn)
        version = _check_schema(conn, path)
        if not version:
            raise InputError(f"{path} is an empty database, not a clearsight run")
        if version in _MIGRATED_VERSIONS:
            raise InputError(
                f"{path.parent} was written by an older clearsight (run-store schema {version}); "
                "rerun the command that made it to migrate it in place (or open it with "
                f"clearsight.store.RunStore.open), then read it (schema {SCHEMA_VERSION})"
            )
    except BaseException:
        conn.close()
        raise
    return conn


def _read_manifest(conn: sqlite3.Connection, path: Path | None = None) -> dict[str, Any]:
    """The manifest table as a dict of JSON-decoded values."""
    rows = conn.execute("SELECT key, value FROM manifest")
    return {key: _loads(value, path, "manifest", key) for key, value in rows}


def _loads(text: str, path: Path | None, table: str, key: str, column: str = "value") -> Any:
    """``json.loads``; corrupted stored JSON is an InputError naming the run, table and key."""
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        where = f"the run {path.parent}" if path is not None else "a run"
        raise InputError(
            f"corrupted JSON in {where}: table {table}, key {key}, column {column} ({exc})"
        ) from None


def _filters(status: str | None, kind: str | None) -> tuple[str, list[str | int | bytes]]:
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


def _stored_key(key: str) -> str | bytes:
    """An item key as stored: a lower-case SHA-256 hex digest as its 32 bytes, else the text."""
    if len(key) == 64:
        try:
            raw = bytes.fromhex(key)
        except ValueError:
            return key
        if raw.hex() == key:
            return raw
    return key


def _public_key(stored: str | bytes) -> str:
    """The key text of a stored key (the inverse of :func:`_stored_key`)."""
    return stored.hex() if type(stored) is bytes else str(stored)


def _item_triple(
    item: Spec | tuple[str, str, Mapping[str, Any]],
) -> tuple[str, str, Mapping[str, Any], Spec | None]:
    """``(key, kind, JSON form, typed spec or None)`` of an item, validated."""
    if isinstance(item, Spec):
        key, kind, stored = item.row()
        return key, kind, stored, item
    try:
        key, protocol, spec = item
    except (TypeError, ValueError) as exc:
        raise InputError(f"an item is a (key, protocol, spec) triple, got {item!r}") from exc
    if not isinstance(key, str) or not key:
        raise InputError(f"item key must be a non-empty string, got {key!r}")
    if not isinstance(protocol, str) or not protocol:
        raise InputError(f"item {key}: protocol must be a non-empty string, got {protocol!r}")
    if not isinstance(spec, Mapping):
        raise InputError(f"item {key}: spec must be a mapping, got {type(spec).__name__}")
    return key, protocol, spec, None


class _Tables:
    """The store's small tables in memory — shapes, kinds and parts — and the encoding and
    decoding of rows through them. What a write adds is inserted by :meth:`save` inside its
    transaction and forgotten if that is rolled back."""

    def __init__(self) -> None:
        self.shapes = Shapes()
        self.kinds: dict[str, tuple[int, tuple[str, ...]]] = {}
        self.kind_ids: dict[int, tuple[str, tuple[str, ...]]] = {}
        self.part_ids: dict[str, int] = {}
        self.part_texts: dict[int, str] = {}
        self.part_values: dict[int, Any] = {}
        self.new_kinds: list[tuple[int, str, str]] = []
        self.new_parts: list[tuple[int, bytes, str]] = []
        self.next_part = 1
        self.encoders: dict[type[Spec], RowEncoder] = {}
        #: The key variables' values to redact from what the current write encodes.
        self.secrets: Sequence[str] = ()

    def load(self, conn: sqlite3.Connection) -> None:
        """Read the small tables (nothing in an empty or an old-schema database)."""
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if "shapes" not in names:
            return
        self.refresh(conn)  # shapes and kinds
        for id_, digest in conn.execute("SELECT id, digest FROM parts"):
            self.part_ids[digest.hex()] = id_
        self.next_part = max(self.part_ids.values(), default=0) + 1

    def save(self, conn: sqlite3.Connection) -> None:
        """Insert the shapes, kinds and parts added since the last save (in a transaction)."""
        conn.executemany("INSERT INTO shapes (id, keys) VALUES (?, ?)", self.shapes.new)
        conn.executemany("INSERT INTO kinds (id, name, parts) VALUES (?, ?, ?)", self.new_kinds)
        conn.executemany("INSERT INTO parts (id, digest, value) VALUES (?, ?, ?)", self.new_parts)

    def saved(self) -> None:
        """The last save was committed."""
        self.shapes.new.clear()
        self.new_kinds.clear()
        self.new_parts.clear()

    def forget_new(self) -> None:
        """The last save was rolled back: forget what it added."""
        self.shapes.forget_new()
        for id_, name, _ in self.new_kinds:
            del self.kinds[name], self.kind_ids[id_]
        for id_, digest, _ in self.new_parts:
            del self.part_ids[digest.hex()]
            self.part_texts.pop(id_, None)
        self.next_part = max(self.part_ids.values(), default=0) + 1
        self.new_kinds.clear()
        self.new_parts.clear()
        self.encoders.clear()  # their cached pieces may name the forgotten parts and shapes

    def _kind(self, name: str) -> tuple[int, tuple[str, ...]]:
        """Id and part fields of kind ``name`` (a new kind takes its spec class's parts)."""
        found = self.kinds.get(name)
        if found is None:
            cls = spec_class(name)
            found = (len(self.kinds) + 1, tuple(cls.parts) if cls is not None else ())
            while found[0] in self.kind_ids:
                found = (found[0] + 1, found[1])
            self.kinds[name] = found
            self.kind_ids[found[0]] = (name, found[1])
            self.new_kinds.append((found[0], name, json.dumps(list(found[1]))))
        return found

    def _part(self, digest: str, value: Any, secrets: Sequence[str]) -> int:
        """The id of the part ``value`` with content hash ``digest`` (added if new)."""
        found = self.part_ids.get(digest)
        if found is None:
            found = self.next_part
            self.next_part += 1
            text = _dumps(value, f"part {digest}", secrets)
            self.part_ids[digest] = found
            self.part_texts[found] = text
            self.new_parts.append((found, bytes.fromhex(digest), text))
        return found

    def encode(self, value: Any, what: str, secrets: Sequence[str]) -> str:
        """Packed JSON text of ``value`` with key variables redacted (see :func:`_dumps`)."""
        try:
            text = compact_json(pack(value, self.shapes))
            found = _secrets_in(text, secrets)
            return compact_json(pack(redact_value(value, found), self.shapes)) if found else text
        except (TypeError, ValueError) as exc:
            raise InputError(f"{what} is not JSON-able: {exc}") from exc

    def item_row(
        self, item: Spec | tuple[str, str, Mapping[str, Any]]
    ) -> tuple[str, tuple[str | bytes, int, str]]:
        """``(key, (stored key, kind id, packed spec))`` of an item: a typed spec by its class's
        :class:`RowEncoder`, unless its text holds a secret to redact (then, like a triple, by
        :meth:`spec_row`)."""
        if isinstance(item, Spec):
            key, raw, text = self._encoder(type(item)).row(item)
            if not self.secrets or not _secrets_in(text, self.secrets):
                item.__dict__.setdefault("key", key)
                return key, (raw, self._kind(item.kind)[0], text)
        key, kind, spec, typed = _item_triple(item)
        return key, self.spec_row(key, kind, spec, typed, self.secrets)

    def _encoder(self, cls: type[Spec]) -> RowEncoder:
        """The row encoder of spec class ``cls`` (made on first use; parts added to this
        store, secrets redacted by the current write's :attr:`secrets`)."""
        encoder = self.encoders.get(cls)
        if encoder is None:
            encoder = self.encoders[cls] = RowEncoder(
                cls,
                self.shapes,
                lambda digest, value: self._part(digest, value, self.secrets),
                compact_json,
            )
        return encoder

    def grid_rows(self, grid: SpecGrid[Any]) -> list[tuple[bytes | str, int, str]]:
        """``(stored key, kind id, packed spec)`` of each item of a grid, from its groups
        (:meth:`RowEncoder.grid_rows`; the grid learns its digests); an item whose text holds
        a secret is built and goes the way of :meth:`item_row`."""
        digests, texts = self._encoder(grid.cls).grid_rows(grid)
        grid.learn(b"".join(digests))
        rows: list[tuple[bytes | str, int, str]]
        kind = itertools.repeat(self._kind(grid.kind)[0], len(digests))
        rows = list(zip(digests, kind, texts, strict=True))
        if self.secrets:
            for position, text in enumerate(texts):
                if _secrets_in(text, self.secrets):
                    rows[position] = self.item_row(grid.at(position))[1]
        return rows if grid.positions is None else [rows[p] for p in grid.positions]

    def spec_row(
        self,
        key: str,
        kind: str,
        spec: Mapping[str, Any],
        item: Spec | None,
        secrets: Sequence[str],
    ) -> tuple[str | bytes, int, str]:
        """``(stored key, kind id, packed spec)`` of an item, its parts replaced by their ids."""
        kind_id, parts = self._kind(kind)
        if parts:
            spec = dict(spec)
            for name in parts:
                if name in spec:
                    value = getattr(item, name, None)
                    digest = value.digest if isinstance(value, Part) else content_hash(spec[name])
                    spec[name] = self._part(digest, spec[name], secrets)
        return _stored_key(key), kind_id, self.encode(spec, f"spec of item {key}", secrets)

    def record_row(
        self, item_id: int, record: Record, secrets: Sequence[str]
    ) -> tuple[int, str, str | None, str, str, float, str]:
        """Encode one record as the parameters of :data:`_UPSERT_RECORD`."""
        return (
            item_id,
            record.status,
            None if record.error is None else redact(record.error, secrets),
            self.encode(record.raw, f"raw output of record {record.key}", secrets),
            self.encode(dict(record.readouts), f"readouts of record {record.key}", secrets),
            float(record.elapsed_s),
            record.finished_at,
        )

    def decode(self, text: str, path: Path, table: str, key: str, column: str) -> Any:
        """A packed column decoded; InputError naming the row if it is not packed JSON."""
        packed = _loads(text, path, table, key, column)
        try:
            return unpack(packed, self.shapes)
        except (KeyError, IndexError, TypeError, ValueError):
            raise InputError(
                f"corrupted packed JSON in the run {path.parent}: table {table}, key {key}, "
                f"column {column}"
            ) from None

    def kind_name(self, kind_id: int, conn: sqlite3.Connection) -> str:
        """The name of kind ``kind_id`` (read again if a writer added it since)."""
        if kind_id not in self.kind_ids:
            self.refresh(conn)
        return self.kind_ids[kind_id][0]

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Catch up with what a writer added (a reader's caches)."""
        known = set(self.shapes.keys)
        self.shapes.add_rows(
            r for r in conn.execute("SELECT id, keys FROM shapes") if r[0] not in known
        )
        for id_, name, parts in conn.execute("SELECT id, name, parts FROM kinds"):
            self.kinds[name] = (id_, tuple(json.loads(parts)))
            self.kind_ids[id_] = (name, self.kinds[name][1])

    def spec(
        self,
        kind_id: int,
        text: str,
        conn: sqlite3.Connection,
        path: Path,
        key: str,
        *,
        shared: bool = False,
    ) -> dict[str, Any]:
        """The JSON form of a stored spec, its parts filled in (``shared``: the parts are the
        cached values, not to be modified; else fresh copies)."""
        try:
            spec = self.decode(text, path, "items", key, "spec")
        except InputError:
            self.refresh(conn)  # a shape a writer added since this reader loaded
            spec = self.decode(text, path, "items", key, "spec")
        if kind_id not in self.kind_ids:
            self.refresh(conn)
        for name in self.kind_ids[kind_id][1]:
            if name in spec:  # every part field holds a part id (see item_row)
                spec[name] = self._part_value(spec[name], conn, path, shared)
        return spec

    def _part_value(self, part_id: int, conn: sqlite3.Connection, path: Path, shared: bool) -> Any:
        """The value of part ``part_id``."""
        text = self.part_texts.get(part_id)
        if text is None:
            row = conn.execute("SELECT value FROM parts WHERE id = ?", (part_id,)).fetchone()
            if row is None:
                raise InputError(f"the run {path.parent} has no part {part_id}")
            text = self.part_texts[part_id] = row[0]
        if not shared:
            return _loads(text, path, "parts", str(part_id))
        value = self.part_values.get(part_id)
        if value is None:
            value = self.part_values[part_id] = _loads(text, path, "parts", str(part_id))
        return value


def _config_diff(old: Any, new: Any, limit: int = 8) -> list[str]:
    """Short descriptions of the top-level config keys that differ (at most ``limit``)."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return [f"config: {_short(old)} -> {_short(new)}"]
    changed = []
    for key in sorted(old.keys() | new.keys()):
        if key not in new:
            changed.append(f"{key} removed (was {_short(old[key])})")
        elif key not in old:
            changed.append(f"{key} added ({_short(new[key])})")
        elif old[key] != new[key]:
            changed.append(f"{key}: {_short(old[key])} -> {_short(new[key])}")
    if len(changed) > limit:
        changed = [*changed[:limit], f"... and {len(changed) - limit} more"]
    return changed


def _short(value: Any, width: int = 60) -> str:
    """A one-line JSON rendering of ``value``, cut to ``width`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def _flatten(
    obj: dict[str, Any],
    prefix: str = "",
    *,
    parts: Sequence[str] = (),
    memo: dict[tuple[int, str], tuple[Any, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """Flatten decoded JSON: nested dicts into ``a.b`` keys, lists and empty dicts to JSON text.

    ``obj`` comes from :func:`json.loads`, so containers are exactly ``dict`` and ``list``.
    ``parts``: the fields of ``obj`` holding a shared part value (the same object for every
    item of the part), flattened once into ``memo`` (which holds the object, so its id is not
    reused while the memo lives) instead of once a row.
    """
    out: dict[str, Any] = {}
    for key, value in obj.items():
        kind = type(value)
        if kind is dict and value and memo is not None and key in parts:
            found = memo.get((id(value), key))
            if found is None or found[0] is not value:
                found = memo[(id(value), key)] = (value, _flatten(value, f"{prefix}{key}."))
            out.update(found[1])
        elif kind is dict and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        elif kind is dict or kind is list:  # read back: redacted when it was written
            out[prefix + key] = compact_json(value)
        else:
            out[prefix + key] = value
    return out
