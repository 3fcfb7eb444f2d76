"""Read-only views of a run directory for the operator's browser: pages of records, one
record, its report files.

Everything here reads through :class:`clearsight.store.RunStore` opened read-only (safe while a
run or a human session is writing) or through :func:`safe_file`, the one place that turns a
path taken from a URL into a file: it resolves the path (symlinks included) and refuses
anything that does not lie inside the run directory or is not a report file
(:data:`REPORT_FILES`), so no URL reaches the store, an instance file or an image.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from clearsight.faces import face_of_kind
from clearsight.paths import resolves_inside
from clearsight.store import DB_NAME, RunStore, StoredRecord, compact_json
from clearsight.validate import InputError

__all__ = [
    "MAX_PER_PAGE",
    "REPORT_FILES",
    "RecordColumns",
    "RecordJSON",
    "RecordPage",
    "RecordRow",
    "RunSummary",
    "list_files",
    "public_record",
    "read_record",
    "record_page",
    "run_summary",
    "safe_file",
]

#: The largest page of records the UI shows at once.
MAX_PER_PAGE = 200
#: Files listed at most by :func:`list_files` (a run directory holds a handful).
MAX_FILES = 500
#: The only files served (by name, at any depth): what every report writes
#: (:func:`clearsight.pages.output.write_report`). The store, instance files, images and
#: anything else a run directory holds are neither listed nor served.
REPORT_FILES = frozenset({"report.html", "summary.md", "summary.csv"})


@dataclass(frozen=True)
class RunSummary:
    """What the home page says about a run: counts, protocols with record counts, manifest."""

    exists: bool
    counts: dict[str, int]
    protocols: dict[str, int]
    manifest: Mapping[str, object]


class RecordColumns(TypedDict):
    """A record's own columns in the store: its key, protocol (item kind), status, error,
    seconds, when it finished and its attempt."""

    key: str
    protocol: str
    status: str
    error: str | None
    elapsed_s: float
    finished_at: str
    attempt: int


class RecordJSON(RecordColumns):
    """One record with its item as the record page and ``/api`` show it (JSON-able): the
    store's columns, the item's ``spec``, the ``readouts`` and the ``raw`` output (both the
    reason, a string, where :func:`public_record` withholds them)."""

    spec: Mapping[str, object]
    readouts: Mapping[str, object] | str
    raw: Any


class RecordRow(RecordColumns):
    """One line of a records page: the record's columns plus short one-line JSON previews."""

    spec_preview: str
    readouts_preview: str


@dataclass(frozen=True)
class RecordPage:
    """A page of records (``page`` counts from 1) and how many records match in all."""

    rows: list[RecordRow]
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        """The number of pages (at least 1, so an empty run has one empty page)."""
        return max(1, math.ceil(self.total / self.per_page))


def _has_run(run_dir: Path) -> bool:
    """True if ``run_dir`` holds a run database (it may not exist yet for a new human run)."""
    return (run_dir / DB_NAME).is_file()


def run_summary(run_dir: Path) -> RunSummary:
    """Counts, records per protocol and the manifest of ``run_dir`` (empty if no run yet)."""
    if not _has_run(run_dir):
        return RunSummary(False, {"items": 0, "ok": 0, "failed": 0, "pending": 0}, {}, {})
    with RunStore.open(run_dir, read_only=True) as store:
        return RunSummary(True, store.counts(), store.records_per_kind(), store.manifest())


#: What stands in for an unfinished human session's raw output and read-outs on the pages.
def _withheld(record: Mapping[str, object]) -> str | None:
    """Why the browser must not read ``record``'s raw output and read-outs, as its protocol's
    face says (:attr:`Serving.withheld <clearsight.faces.serving.Serving>`: an unfinished
    person's session holds the gold answer), or None."""
    face = face_of_kind(str(record["protocol"]))
    serve = None if face is None else face.serve
    if serve is None or serve.withheld is None:
        return None
    return serve.withheld(record)


def _preview(text: str, width: int = 160) -> str:
    """Compact JSON cut to ``width`` characters (the page escapes it)."""
    return text if len(text) <= width else text[: width - 1] + "…"


def record_page(
    run_dir: Path,
    page: int = 1,
    per_page: int = 50,
    *,
    status: str | None = None,
    protocol: str | None = None,
) -> RecordPage:
    """Records ``(page - 1) * per_page`` onwards in the order items were added, optionally only
    those with ``status`` and/or ``protocol``. One SQL query with LIMIT/OFFSET, so a page costs
    the same in a run of a million records as in one of ten."""
    if page < 1:
        raise InputError(f"page counts from 1, got {page}")
    if not 1 <= per_page <= MAX_PER_PAGE:
        raise InputError(f"per_page must be in 1..{MAX_PER_PAGE}, got {per_page}")
    if not _has_run(run_dir):
        return RecordPage([], page, per_page, 0)
    with RunStore.open(run_dir, read_only=True) as store:
        total = store.count_records(status=status, kind=protocol)
        records = store.records_page((page - 1) * per_page, per_page, status=status, kind=protocol)
    return RecordPage([_row(record) for record in records], page, per_page, total)


def _columns(record: StoredRecord) -> RecordColumns:
    """The store's own columns of ``record``."""
    return {
        "key": record.key,
        "protocol": record.protocol,
        "status": record.status,
        "error": record.error,
        "elapsed_s": float(record.elapsed_s),
        "finished_at": record.finished_at,
        "attempt": int(record.attempt),
    }


def _row(record: StoredRecord) -> RecordRow:
    """The records-page line of ``record``: its columns and compact JSON previews."""
    columns = _columns(record)
    withheld = _withheld({**columns, "readouts": record.readouts})
    return {
        **columns,
        "spec_preview": _preview(compact_json(record.spec)),
        "readouts_preview": withheld or _preview(compact_json(record.readouts)),
    }


def read_record(run_dir: Path, key: str) -> RecordJSON | None:
    """One record with its item as a JSON-able dict (``key, protocol, status, error, elapsed_s,
    finished_at, attempt, spec, readouts, raw``), or None if ``key`` has no record."""
    if not _has_run(run_dir):
        return None
    with RunStore.open(run_dir, read_only=True) as store:
        record = store.record(key)
    if record is None:
        return None
    return {
        **_columns(record),
        "spec": record.spec,
        "readouts": record.readouts,
        "raw": record.raw,
    }


def public_record(record: RecordJSON) -> RecordJSON:
    """``record`` as the browser may show it: the raw output and read-outs of a record its
    protocol withholds (an unfinished human session) replaced by the reason
    (:func:`_withheld`; the session page shows what the person may see)."""
    withheld = _withheld(record)
    if withheld is None:
        return record
    return {**record, "raw": withheld, "readouts": withheld}


def safe_file(run_dir: Path, relative: str) -> Path | None:
    """The report file ``relative`` names inside ``run_dir``, or None.

    ``relative`` comes from a URL, already percent-decoded (so ``%2e%2e%2f`` arrives as
    ``../``). The joined path is resolved — ``..`` segments and symlinks followed — and must
    still lie inside the resolved run directory (:func:`~clearsight.paths.resolves_inside`,
    the check every loader makes of the paths a dataset names) and be a regular file named in
    :data:`REPORT_FILES`; absolute paths, NUL bytes, directories, missing files and any other
    file (the store, an instance file, an image) give None. The caller answers None with 404,
    revealing nothing.
    """
    candidate = resolves_inside(run_dir, relative)
    if candidate is None or not candidate.is_file():
        return None
    return candidate if candidate.name in REPORT_FILES else None


def _walk(root: Path, base: Path, depth: int) -> Iterator[Path]:
    """Report files under ``base`` (sorted, ``depth`` levels at most), never leaving ``root``:
    symlinks are listed only if :func:`safe_file` would serve them and are never descended."""
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink() or entry.is_file():
            if safe_file(root, entry.relative_to(root).as_posix()) is not None:
                yield entry
        elif entry.is_dir() and depth > 1:
            yield from _walk(root, entry, depth - 1)


def list_files(run_dir: Path, depth: int = 3) -> list[tuple[str, int]]:
    """``(relative path, size in bytes)`` of the report files in the run directory (at most
    :data:`MAX_FILES`, ``depth`` directory levels), for the files page."""
    if not run_dir.is_dir():
        return []
    root = run_dir.resolve()
    out: list[tuple[str, int]] = []
    for path in _walk(root, root, depth):
        out.append((path.relative_to(root).as_posix(), path.stat().st_size))
        if len(out) >= MAX_FILES:
            break
    return out
