"""The run store: one SQLite database per run directory holding items, records and the manifest.

Every protocol (sweep, grounding, probe) plans *items* (a key and the full spec that determines
the output), executes them and hands *records* (status, the backend's raw output, the read-outs
computed from it) to this store. The store is what makes a run resumable: a rerun asks
:meth:`RunStore.pending_keys` and only executes what has no ``ok`` record yet.

Layout: ``runs/NAME/run.sqlite`` in WAL mode. Schema (version :data:`SCHEMA_VERSION`)::

    manifest(key TEXT PRIMARY KEY, value TEXT NOT NULL)            -- value is JSON
    items(key TEXT PRIMARY KEY, protocol TEXT NOT NULL, spec TEXT NOT NULL)   -- spec: JSON
    records(key TEXT PRIMARY KEY REFERENCES items(key),
            status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
            error TEXT,                          -- NULL exactly when status = 'ok'
            raw TEXT NOT NULL,                   -- JSON: the backend's raw output, always kept
            readouts TEXT NOT NULL,              -- JSON object of read-outs computed from raw
            elapsed_s REAL NOT NULL CHECK (elapsed_s >= 0),
            finished_at TEXT NOT NULL,           -- ISO-8601 UTC
            attempt INTEGER NOT NULL CHECK (attempt >= 1))

JSON columns are declared ``TEXT`` on purpose: a declared type ``JSON`` gets SQLite's NUMERIC
affinity, which would silently turn a raw output such as ``"42"`` into the integer 42. Values are
written by :func:`json.dumps` with NaN and infinities kept as the ``NaN``/``Infinity`` tokens
(Python reads them back exactly; SQLite's JSON functions accept them from 3.42 on).

Concurrency: exactly one writer process (the executor's main process) keeps a connection; every
write is one ``BEGIN IMMEDIATE`` transaction. Any number of readers (:func:`load_run`, a UI) may
read at the same time thanks to WAL. Crash safety: with WAL and ``synchronous=NORMAL`` a process
killed at any point loses at most the transaction in flight and the file stays consistent (a
power cut may additionally lose the last few committed transactions, never consistency).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self

from clearsight.credentials import redact, redact_value, secret_values
from clearsight.seeding import content_hash
from clearsight.specs import json_key
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
SCHEMA_VERSION = 2
# Versions this clearsight reads; the writer migrates an older one (see _rekey_v1).
_READABLE_VERSIONS = (1, 2)

Status = Literal["ok", "failed"]
STATUSES: tuple[str, ...] = ("ok", "failed")

# Manifest keys the store writes itself; a caller's manifest may not use them.
_STORE_KEYS = frozenset({"schema_version", "created_at", "config_hash", "starts", "history"})

# How each protocol's report is made, for the message that refuses a run of another protocol.
_REPORT_COMMANDS = {
    "sweep": "clearsight report {run}",
    "probe": "clearsight probe report {run}",
    "probe.build": "clearsight probe report {run}",
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

_SCHEMA = """
CREATE TABLE manifest (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE items (
    key      TEXT PRIMARY KEY,
    protocol TEXT NOT NULL,
    spec     TEXT NOT NULL
);
CREATE TABLE records (
    key         TEXT PRIMARY KEY REFERENCES items(key),
    status      TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    error       TEXT,
    raw         TEXT NOT NULL,
    readouts    TEXT NOT NULL,
    elapsed_s   REAL NOT NULL CHECK (elapsed_s >= 0),
    finished_at TEXT NOT NULL,
    attempt     INTEGER NOT NULL CHECK (attempt >= 1),
    CHECK ((status = 'ok') = (error IS NULL))
);
"""

# A record for a key whose stored record is 'ok' is ignored (the first success is final: an item
# is a pure function of its spec); a record for a failed key replaces it and counts an attempt.
_UPSERT_RECORD = """
INSERT INTO records (key, status, error, raw, readouts, elapsed_s, finished_at, attempt)
VALUES (?, ?, ?, ?, ?, ?, ?, 1)
ON CONFLICT (key) DO UPDATE SET
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
    "SELECT r.key, r.status, r.error, {raw}, r.readouts, r.elapsed_s, r.finished_at, "
    "i.protocol, i.spec, r.attempt FROM records AS r JOIN items AS i ON i.key = r.key"
)
_ITEM_KINDS = "SELECT DISTINCT protocol FROM items ORDER BY protocol"
_RECORDS_PER_KIND = (
    "SELECT i.protocol, count(*) FROM records AS r JOIN items AS i ON i.key = r.key "
    "GROUP BY i.protocol ORDER BY i.protocol"
)
_RAW_OF_KEYS = "SELECT r.key, r.raw FROM records AS r JOIN json_each(?) AS j ON j.value = r.key"


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
        found = [
            s
            for s in (secret_values() if secrets is None else secrets)
            if s in text or _ENCODER.encode(s)[1:-1] in text
        ]
        return compact_json(redact_value(obj, found)) if found else text
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} is not JSON-able: {exc}") from exc


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

    # ----------------------------------------------------------------------------- lifecycle

    @classmethod
    def open(cls, run: Path | str, *, fresh: bool = False, read_only: bool = False) -> RunStore:
        """Open the store of the run directory ``run`` (or of the ``run.sqlite`` file itself).

        The writer (default) creates the directory and the database if needed; ``fresh=True``
        first deletes an existing database with its ``-wal``/``-shm`` files. ``read_only=True``
        opens an existing run for reading while a writer may be running; it never creates one.
        """
        path = _db_path(Path(run))
        if read_only:
            if fresh:
                raise InputError("fresh=True deletes the run; it cannot be combined with read_only")
            return cls(path, _connect_reader(path), read_only=True)
        if fresh:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        return cls(path, _connect_writer(path), read_only=False)

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
        """Close the store."""
        self.close()

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
        """A ``BEGIN IMMEDIATE`` transaction: committed if the block succeeds, else rolled back."""
        if self.read_only:
            raise InputError(f"the run store {self.path} was opened read-only")
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed COMMIT (disk full, say) may leave it open
                conn.execute("ROLLBACK")
            raise

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

    # --------------------------------------------------------------------------------- items

    def add_items(self, items: Iterable[tuple[str, str, Mapping[str, Any]]]) -> int:
        """Add ``(key, protocol, spec)`` work items in one transaction; return how many were new.

        Items whose key is already stored are skipped without being encoded again, so planning a
        resumed run again is cheap: a key is the content hash of its spec (principle 1), so the
        same key means the same item. A new row whose key collides with a stored key of a
        different protocol or spec (a broken key function) raises InputError.
        """
        items = list(items)
        stored = self._stored_keys([item[0] for item in items if isinstance(item, tuple)])
        secrets = secret_values()
        rows = [
            _item_row(item, secrets)
            for item in items
            if not (isinstance(item, tuple) and item[0] in stored)
        ]
        if not rows:
            return 0
        with self._write() as conn:
            conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS new_items (key TEXT, protocol TEXT, spec TEXT)"
            )
            try:
                conn.executemany("INSERT INTO temp.new_items VALUES (?, ?, ?)", rows)
                before = conn.total_changes
                conn.execute(
                    "INSERT OR IGNORE INTO items (key, protocol, spec) "
                    "SELECT key, protocol, spec FROM temp.new_items ORDER BY rowid"
                )
                added = conn.total_changes - before
                _check_item_conflicts(conn)
            finally:
                conn.execute("DELETE FROM temp.new_items")
        return added

    def _stored_keys(self, keys: list[str]) -> set[str]:
        """The subset of ``keys`` already stored as items (one query)."""
        if not keys:
            return set()
        query = "SELECT j.value FROM json_each(?) AS j JOIN items AS i ON i.key = j.value"
        return {key for (key,) in self.conn.execute(query, (json.dumps(keys),))}

    def pending_keys(self, keys: Iterable[str] | None = None) -> list[str]:
        """Keys without an ``ok`` record (failed ones are retried), of ``keys`` or of all items.

        With ``keys`` the result keeps their order (duplicates dropped) and includes keys that are
        not items at all; without, it lists items in the order they were added. One query either
        way: the given keys are joined in as a JSON array through ``json_each``.
        """
        if keys is None:
            query = (
                "SELECT i.key FROM items AS i LEFT JOIN records AS r "
                "ON r.key = i.key AND r.status = 'ok' WHERE r.key IS NULL ORDER BY i.rowid"
            )
            return [key for (key,) in self.conn.execute(query)]
        wanted = json.dumps(list(dict.fromkeys(keys)))
        query = (
            "SELECT j.value FROM json_each(?) AS j LEFT JOIN records AS r "
            "ON r.key = j.value AND r.status = 'ok' WHERE r.key IS NULL ORDER BY j.key"
        )
        return [key for (key,) in self.conn.execute(query, (wanted,))]

    # ------------------------------------------------------------------------------- records

    def write_records(self, records: Sequence[Record]) -> int:
        """Store ``records`` in one transaction; return how many were written.

        A record for a key with a failed record replaces it and increments ``attempt``; a record
        for a key that already has an ``ok`` record is ignored (the first success is final and
        an at-least-once executor may deliver a result twice). Keys must be items already.
        """
        secrets = secret_values()
        rows = [_record_row(record, secrets) for record in records]
        try:
            with self._write() as conn:
                before = conn.total_changes
                conn.executemany(_UPSERT_RECORD, rows)
                return conn.total_changes - before
        except sqlite3.IntegrityError as exc:
            missing = self._missing_items([row[0] for row in rows])
            if not missing:
                raise
            raise InputError(
                f"{len(missing)} records have keys that are not items (e.g. {missing[:3]}); "
                "add_items() before writing their records"
            ) from exc

    def _missing_items(self, keys: list[str]) -> list[str]:
        """The keys among ``keys`` that are not in the items table."""
        query = (
            "SELECT j.value FROM json_each(?) AS j LEFT JOIN items AS i ON i.key = j.value "
            "WHERE i.key IS NULL ORDER BY j.key"
        )
        return [key for (key,) in self.conn.execute(query, (json.dumps(keys),))]

    def counts(self) -> dict[str, int]:
        """``items``, ``ok``, ``failed`` and ``pending`` (items without an ok record) counts."""
        # One statement, so a reader sees one snapshot even while the writer commits.
        n_items, ok, failed = self.conn.execute(
            "SELECT (SELECT count(*) FROM items), "
            "(SELECT count(*) FROM records WHERE status = 'ok'), "
            "(SELECT count(*) FROM records WHERE status = 'failed')"
        ).fetchone()
        return {"items": n_items, "ok": ok, "failed": failed, "pending": n_items - ok}

    # ------------------------------------------------------------------------ reading by kind
    #
    # Every read a report, the UI or a protocol's results module needs, so that no SQL runs
    # outside this module. An item's *kind* is its ``protocol`` column: a protocol's main items
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
        query = f"SELECT count(*) FROM records AS r JOIN items AS i ON i.key = r.key{where}"
        return int(self.conn.execute(query, params).fetchone()[0])

    def iter_records(
        self, status: str | None = None, *, kind: str | None = None, raw: bool = True
    ) -> Iterator[StoredRecord]:
        """Every record (or those with ``status`` and of item ``kind``) with its item, in the
        order items were added. ``raw=False`` leaves the raw outputs unread (``raw`` is None):
        tables and listings rarely need them, and they are most of a run's bytes."""
        where, params = _filters(status, kind)
        return self._read_records(f"{where} ORDER BY i.rowid", params, raw=raw)

    def records_page(
        self, offset: int, limit: int, *, status: str | None = None, kind: str | None = None
    ) -> list[StoredRecord]:
        """At most ``limit`` records from the ``offset``-th on (0-based, in item order, filtered
        as :meth:`iter_records` does), without raw outputs. One LIMIT/OFFSET query, so a page
        costs the same in a run of a million records as in one of ten."""
        where, params = _filters(status, kind)
        tail = f"{where} ORDER BY i.rowid LIMIT ? OFFSET ?"
        return list(self._read_records(tail, [*params, limit, offset], raw=False))

    def record(self, key: str) -> StoredRecord | None:
        """The record of ``key`` with its item and raw output, or None if it has no record."""
        return next(self._read_records(" WHERE r.key = ?", [key], raw=True), None)

    def raw_outputs(self, keys: Iterable[str]) -> dict[str, Any]:
        """The decoded raw outputs of the records of ``keys`` (keys without a record absent),
        in one query: for the few examples a report shows of a run it does not load raw."""
        wanted = list(keys)
        if not wanted:
            return {}
        rows = self.conn.execute(_RAW_OF_KEYS, (json.dumps(wanted),)).fetchall()
        return {key: _loads(raw, self.path, "records", key, "raw") for key, raw in rows}

    def _read_records(
        self, tail: str, params: Sequence[str | int], *, raw: bool
    ) -> Iterator[StoredRecord]:
        """The records a ``WHERE ... ORDER BY ...`` ``tail`` selects, decoded (raw on request),
        fetched in batches so a large run is never held in memory at once."""
        query = _SELECT_RECORDS.format(raw="r.raw" if raw else "NULL") + tail
        cursor = self.conn.execute(query, params)
        while batch := cursor.fetchmany(1000):
            for key, st, error, raw_text, readouts, elapsed, finished, kind, spec, attempt in batch:
                columns = {"records.readouts": readouts, "items.spec": spec}
                if raw:
                    columns = {"records.raw": raw_text, **columns}
                decoded = _decode_row(self.path, key, columns)
                raw_v = decoded.pop(0) if raw else None
                readouts_v, spec_v = decoded
                yield StoredRecord(
                    key=key,
                    status=st,
                    error=error,
                    raw=raw_v,
                    readouts=readouts_v,
                    elapsed_s=elapsed,
                    finished_at=finished,
                    protocol=kind,
                    spec=spec_v,
                    attempt=attempt,
                )

    # -------------------------------------------------------------------------------- export

    def to_frame(
        self, *, include_raw: bool = False, status: str | None = None, kind: str | None = None
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
        """
        import pandas as pd

        fixed: list[tuple[Any, ...]] = []
        specs: list[dict[str, Any]] = []
        readouts: list[dict[str, Any]] = []
        raws: list[str | None] = []
        where, params = _filters(status, kind)
        query = (
            "SELECT r.key, i.protocol, r.status, r.error, r.elapsed_s, r.finished_at, r.attempt, "
            f"i.spec, r.readouts, {'r.raw' if include_raw else 'NULL'} "
            f"FROM records AS r JOIN items AS i ON i.key = r.key{where} ORDER BY i.rowid"
        )
        loads = json.loads
        for row in self.conn.execute(query, params):
            fixed.append(row[:7])
            try:
                spec, readout = loads(row[7]), loads(row[8])
            except ValueError:
                columns = {"items.spec": row[7], "records.readouts": row[8]}
                spec, readout = _decode_row(self.path, row[0], columns)
            specs.append(_flatten(spec))
            readouts.append(_flatten(readout))
            raws.append(row[9])
        reserved = {*FRAME_COLUMNS, "raw"}
        spec_frame = pd.DataFrame(specs, index=range(len(fixed)))
        spec_frame = spec_frame.rename(columns=lambda c: f"spec.{c}" if c in reserved else c)
        taken = reserved | set(spec_frame.columns)
        readout_frame = pd.DataFrame(readouts, index=range(len(fixed)))
        readout_frame = readout_frame.rename(columns=lambda c: f"readouts.{c}" if c in taken else c)
        parts = [pd.DataFrame(fixed, columns=list(FRAME_COLUMNS)), spec_frame, readout_frame]
        if include_raw:
            parts.append(pd.DataFrame({"raw": raws}))
        return pd.concat(parts, axis=1)

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


def load_run(path: Path | str, *, include_raw: bool = False) -> pd.DataFrame:
    """The records of a run as a DataFrame (see :meth:`RunStore.to_frame` for the columns).

    ``path`` is the run directory or its ``run.sqlite``. Opens read-only, so it is safe while the
    run is still being written. Raises InputError if there is no clearsight run there.
    """
    with RunStore.open(path, read_only=True) as store:
        return store.to_frame(include_raw=include_raw)


# ----------------------------------------------------------------------------------- helpers


def _db_path(run: Path) -> Path:
    """The database file of ``run``: ``run`` itself if it is a file or is named ``run.sqlite``,
    else ``run/run.sqlite`` (a run directory may have any name, even one ending in .sqlite)."""
    if run.is_file() or (run.name == DB_NAME and not run.is_dir()):
        return run
    return run / DB_NAME


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
        raise InputError(f"{path} is not a clearsight run database ({exc})") from exc
    if row is None:
        raise InputError(f"{path} is not a clearsight run database (no schema_version)")
    version = _loads(row[0], path, "manifest", "schema_version")
    if version not in _READABLE_VERSIONS:
        raise InputError(
            f"{path} has run-store schema version {version}; this clearsight reads versions "
            f"{', '.join(map(str, _READABLE_VERSIONS))}. Use a matching clearsight, or start "
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


def _connect_writer(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) the database for the single writer: WAL, synchronous=NORMAL."""
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
        if version == 0:
            _create_schema(conn, path)
        elif version == 1:
            _rekey_v1(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


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
        if not _check_schema(conn, path):
            raise InputError(f"{path} is an empty database, not a clearsight run")
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


def _decode_row(path: Path, key: str, columns: Mapping[str, str]) -> list[Any]:
    """Decode one row's JSON columns (``{table.column: text}``), naming the first bad one."""
    out = []
    for name, text in columns.items():
        table, _, column = name.partition(".")
        out.append(_loads(text, path, table, key, column))
    return out


def _filters(status: str | None, kind: str | None) -> tuple[str, list[str | int]]:
    """The ``WHERE`` clause and its parameters selecting records by status and item kind."""
    where: list[str] = []
    params: list[str | int] = []
    if status is not None:
        where.append("r.status = ?")
        params.append(status)
    if kind is not None:
        where.append("i.protocol = ?")
        params.append(kind)
    return (f" WHERE {' AND '.join(where)}" if where else ""), params


def _item_row(
    item: tuple[str, str, Mapping[str, Any]], secrets: Sequence[str]
) -> tuple[str, str, str]:
    """Validate one ``(key, protocol, spec)`` item and encode it as a table row."""
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
    return key, protocol, _dumps(spec, f"spec of item {key}", secrets)


def _check_item_conflicts(conn: sqlite3.Connection) -> None:
    """Raise InputError if a staged item's key is stored with another protocol or spec.

    SQL finds rows whose text differs; Python then compares the decoded specs, so the same spec
    written with another key order is not a conflict.
    """
    candidates = conn.execute(
        "SELECT n.key, n.protocol, n.spec, i.protocol, i.spec FROM temp.new_items AS n "
        "JOIN items AS i ON i.key = n.key WHERE n.spec <> i.spec OR n.protocol <> i.protocol"
    ).fetchall()
    for key, new_protocol, new_spec, old_protocol, old_spec in candidates:
        if new_protocol != old_protocol or json.loads(new_spec) != json.loads(old_spec):
            raise InputError(
                f"item {key} is already stored with another spec or protocol "
                f"({old_protocol}: {old_spec[:200]}); a key must identify its spec"
            )


def _record_row(
    record: Record, secrets: Sequence[str]
) -> tuple[str, str, str | None, str, str, float, str]:
    """Encode one record as the parameters of :data:`_UPSERT_RECORD`."""
    if not isinstance(record, Record):
        raise InputError(f"write_records takes Record objects, got {type(record).__name__}")
    return (
        record.key,
        record.status,
        None if record.error is None else redact(record.error, secrets),
        _dumps(record.raw, f"raw output of record {record.key}", secrets),
        _dumps(dict(record.readouts), f"readouts of record {record.key}", secrets),
        float(record.elapsed_s),
        record.finished_at,
    )


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


def _flatten(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten decoded JSON: nested dicts into ``a.b`` keys, lists and empty dicts to JSON text.

    ``obj`` comes from :func:`json.loads`, so containers are exactly ``dict`` and ``list``.
    """
    out: dict[str, Any] = {}
    for key, value in obj.items():
        kind = type(value)
        if kind is dict and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        elif kind is dict or kind is list:
            out[prefix + key] = _dumps(value, key)
        else:
            out[prefix + key] = value
    return out
