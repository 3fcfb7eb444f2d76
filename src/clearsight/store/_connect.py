"""Connections to a run's database: the one writer's and the readers', their settings, the check
of what a file is, and SQLite's failures of the file or the disk as one line.

Concurrency: exactly one writer process (the executor's main process) keeps a connection; every
write is one ``BEGIN IMMEDIATE`` transaction. Any number of readers (:func:`load_run`, a UI) may
read at the same time thanks to WAL. Crash safety: with WAL and ``synchronous=NORMAL`` a process
killed at any point loses at most the transaction in flight and the file stays consistent (a
power cut may additionally lose the last few committed transactions, never consistency).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, Final, TypeGuard

from clearsight.faults import RunFault
from clearsight.store._json import loads
from clearsight.store._schema import (
    MIGRATED_VERSIONS,
    SCHEMA_VERSION,
    create_schema,
    transaction,
)
from clearsight.validate import InputError

__all__ = [
    "DB_NAME",
    "connect_reader",
    "connect_writer",
    "db_path",
    "fault",
    "identity",
    "is_fault",
    "read_manifest",
]

DB_NAME = "run.sqlite"

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


def is_fault(exc: BaseException) -> TypeGuard[sqlite3.Error]:
    """Whether ``exc`` is a SQLite failure of the file or the machine (full, read-only,
    corrupted, an I/O error), not one of a statement (a constraint, a programming error,
    which stay tracebacks: they are bugs)."""
    return type(exc) in (sqlite3.DatabaseError, sqlite3.OperationalError)


def fault(exc: sqlite3.Error, what: str, where: object) -> RunFault:
    """The SQLite failure ``exc`` of the store at ``where`` as a :class:`RunFault`: SQLite's
    own message and what to do about it."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    primary = "_".join(name.split("_")[:2])  # SQLITE_IOERR_WRITE -> SQLITE_IOERR
    hint = _FAULT_HINTS.get(primary)
    return RunFault(what, where, f"{exc}" + (f" ({hint})" if hint else ""))


def db_path(run: Path) -> Path:
    """The database file of ``run``: ``run`` itself if it is a file or is named ``run.sqlite``,
    else ``run/run.sqlite`` (a run directory may have any name, even one ending in .sqlite)."""
    if run.is_file() or (run.name == DB_NAME and not run.is_dir()):
        return run
    return run / DB_NAME


def identity(path: Path) -> tuple[int, int]:
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
    version = loads(row[0], path, "manifest", "schema_version")
    if version != SCHEMA_VERSION and version not in MIGRATED_VERSIONS:
        raise InputError(
            f"{path} has run-store schema version {version}; this clearsight reads version "
            f"{SCHEMA_VERSION} and migrates versions "
            f"{', '.join(map(str, MIGRATED_VERSIONS))}. Use a matching clearsight, or start "
            "over with --fresh."
        )
    return int(version)


def connect_writer(path: Path) -> tuple[sqlite3.Connection, int]:
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
            with transaction(conn):
                create_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn, version


def connect_reader(path: Path) -> sqlite3.Connection:
    """Open an existing run read-only; InputError if it is missing or not a clearsight run."""
    if not path.is_file():
        raise InputError(f"no clearsight run at {path}: the file does not exist")
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        _configure(conn)
        version = _check_schema(conn, path)
        if not version:
            raise InputError(f"{path} is an empty database, not a clearsight run")
        if version in MIGRATED_VERSIONS:
            raise InputError(
                f"{path.parent} was written by an older clearsight (run-store schema {version}); "
                "rerun the command that made it to migrate it in place (or open it with "
                f"clearsight.store.RunStore.open), then read it (schema {SCHEMA_VERSION})"
            )
    except BaseException:
        conn.close()
        raise
    return conn


def read_manifest(conn: sqlite3.Connection, path: Path | None = None) -> dict[str, Any]:
    """The manifest table as a dict of JSON-decoded values."""
    rows = conn.execute("SELECT key, value FROM manifest")
    return {key: loads(value, path, "manifest", key) for key, value in rows}
