"""Every read of a run a report, the UI or a protocol's results module needs, so that no SQL runs
outside this package: the manifest, counts, what is pending, records by kind (typed by their
kind's read-out type on request), a page of them, one of them, and the whole run as a frame.

An item's *kind* is its ``protocol``: a protocol's main items (``sweep``, ``probe``) and its
secondary ones (``sweep.veq``, ``probe.belief``, ``grounding.elicit``...). ``status`` and
``kind`` filters left at None select everything.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from clearsight.store._base import StoreBase
from clearsight.store._connect import read_manifest
from clearsight.store._keys import public_key, stored_key, wanted
from clearsight.store._readouts import ReadoutCheck
from clearsight.store._records import R, StoredRecord
from clearsight.store._schema import (
    ITEM_KINDS,
    ITEMS_AND_OK_PER_KIND,
    RECORDS_PER_KIND,
    SELECT_RECORDS,
    filters,
)
from clearsight.validate import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["StoreReads"]


class StoreReads(StoreBase):
    """The reads of a run store (see the module docstring)."""

    def manifest(self) -> dict[str, Any]:
        """All manifest entries, JSON-decoded."""
        return read_manifest(self.conn, self.path)

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
            where, params = ("", []) if kind is None else filters(None, kind)
            where = where.replace(" WHERE ", " AND ")
            query = (
                "SELECT i.key FROM items AS i LEFT JOIN records AS r "
                f"ON r.id = i.id AND r.status = 'ok' WHERE r.id IS NULL{where} ORDER BY i.id"
            )
            return [public_key(key) for (key,) in self.conn.execute(query, params)]
        with wanted(self.conn, dict.fromkeys(keys)) as conn:
            query = (
                "SELECT w.key FROM temp.wanted AS w LEFT JOIN items AS i ON i.key = w.key "
                "LEFT JOIN records AS r ON r.id = i.id AND r.status = 'ok' "
                "WHERE r.id IS NULL ORDER BY w.pos"
            )
            return [public_key(key) for (key,) in conn.execute(query)]

    def item_kinds(self) -> list[str]:
        """The distinct kinds of the run's items, sorted (what a run holds, records or not)."""
        return [kind for (kind,) in self.conn.execute(ITEM_KINDS)]

    def item_specs(
        self,
        kind: str,
        *,
        ok: bool = False,
        keys: Iterable[str] | None = None,
        shared: bool = False,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each item of ``kind`` (records or not; ``ok``: those with an ``ok`` record) as its
        key and JSON spec, in the order items were added: what :meth:`iter_records` reads of
        them, without their records (a draw over a stage's items,
        :mod:`clearsight.faces.sample`). ``keys``: only those items, selected in SQL (a few
        items of a large run cost a few items' reading). ``shared``: the specs' parts are
        the store's cached values, to be read, not modified, so that a scan of every item
        copies no part (a scene, a question) per item."""
        conn, tables, path = self.conn, self._tables, self.path
        source = "items AS i"
        if keys is not None:
            source = "temp.wanted AS w JOIN items AS i ON i.key = w.key"
        if ok:
            source += " JOIN records AS r ON r.id = i.id"
        where, params = filters("ok" if ok else None, kind)
        query = f"SELECT i.key, i.kind, i.spec FROM {source}{where} ORDER BY i.id"
        if keys is not None:
            with wanted(conn, keys):
                rows: Iterable[tuple[bytes, int, str]] = conn.execute(query, params).fetchall()
        else:
            rows = _batched(conn.execute(query, params))
        for stored, kind_id, spec in rows:
            key = public_key(stored)
            yield key, tables.spec(kind_id, spec, conn, path, key, shared=shared)

    def items_and_ok_per_kind(self) -> dict[str, tuple[int, int]]:
        """Per item kind (sorted): how many items it has and how many of them have an ``ok``
        record, in one statement (one snapshot, as :meth:`counts`)."""
        rows = self.conn.execute(ITEMS_AND_OK_PER_KIND).fetchall()
        return {kind: (int(n), int(ok)) for kind, n, ok in rows}

    def records_per_kind(self) -> dict[str, int]:
        """How many records each item kind has, kinds sorted (kinds without records absent)."""
        return dict(self.conn.execute(RECORDS_PER_KIND).fetchall())

    def count_records(self, *, status: str | None = None, kind: str | None = None) -> int:
        """The number of records with ``status`` ('ok' or 'failed') of items of ``kind``."""
        where, params = filters(status, kind)
        query = f"SELECT count(*) FROM records AS r JOIN items AS i ON i.id = r.id{where}"
        return int(self.conn.execute(query, params).fetchone()[0])

    @overload
    def iter_records(
        self, status: str | None = None, *, kind: str | None = None, raw: bool = True
    ) -> Iterator[StoredRecord]: ...

    @overload
    def iter_records(
        self, status: Literal["ok"], *, kind: str, raw: bool = True, readouts: type[R]
    ) -> Iterator[StoredRecord[R]]: ...

    def iter_records(
        self,
        status: str | None = None,
        *,
        kind: str | None = None,
        raw: bool = True,
        readouts: type[Mapping[str, object]] | None = None,
    ) -> Iterator[StoredRecord[Any]]:
        """Every record (or those with ``status`` and of item ``kind``) with its item, in the
        order items were added. ``raw=False`` leaves the raw outputs unread (``raw`` is None):
        tables and listings rarely need them, and they are most of a run's bytes.

        ``readouts``: the read-out type registered for ``kind``
        (:attr:`clearsight.specs.Spec.readout_type`), for the ``ok`` records of that kind: the
        records are ``StoredRecord[readouts]``, each stored shape of read-outs checked once
        (:mod:`clearsight.store._readouts`); InputError when the type is not the kind's or
        stored read-outs are not of it.
        """
        check = None
        if readouts is not None:
            if status != "ok" or kind is None:
                raise InputError(
                    "typed read-outs are read from the ok records of one kind: "
                    "iter_records('ok', kind=KIND, readouts=TYPE)"
                )
            check = ReadoutCheck(kind, readouts, self.path)
        where, params = filters(status, kind)
        return self._read_records(f"{where} ORDER BY i.id", params, raw=raw, check=check)

    def records_page(
        self, offset: int, limit: int, *, status: str | None = None, kind: str | None = None
    ) -> list[StoredRecord]:
        """At most ``limit`` records from the ``offset``-th on (0-based, in item order, filtered
        as :meth:`iter_records` does), without raw outputs. One LIMIT/OFFSET query, so a page
        costs the same in a run of a million records as in one of ten."""
        where, params = filters(status, kind)
        tail = f"{where} ORDER BY i.id LIMIT ? OFFSET ?"
        return list(self._read_records(tail, [*params, limit, offset], raw=False))

    def record(self, key: str) -> StoredRecord | None:
        """The record of ``key`` with its item and raw output, or None if it has no record."""
        return next(self._read_records(" WHERE i.key = ?", [stored_key(key)], raw=True), None)

    def raw_outputs(self, keys: Iterable[str]) -> dict[str, Any]:
        """The decoded raw outputs of the records of ``keys`` (keys without a record absent),
        in one query: for the few examples a report shows of a run it does not load raw."""
        keys = list(keys)
        if not keys:
            return {}
        query = (
            "SELECT i.key, r.raw FROM temp.wanted AS w JOIN items AS i ON i.key = w.key "
            "JOIN records AS r ON r.id = i.id"
        )
        with wanted(self.conn, keys) as conn:
            rows = conn.execute(query).fetchall()
        decode, conn = self._tables.decode, self.conn
        return {
            (key := public_key(stored)): decode(raw, conn, self.path, "records", key, "raw")
            for stored, raw in rows
        }

    def _read_records(
        self,
        tail: str,
        params: Sequence[str | int | bytes],
        *,
        raw: bool,
        check: ReadoutCheck | None = None,
    ) -> Iterator[StoredRecord[Any]]:
        """The records a ``WHERE ... ORDER BY ...`` ``tail`` selects, decoded (raw on request,
        read-outs checked by ``check`` when given), fetched in batches so a large run is never
        held in memory at once."""
        query = SELECT_RECORDS.format(raw="r.raw" if raw else "NULL") + tail
        conn, tables, path = self.conn, self._tables, self.path
        rows = _batched(conn.execute(query, params))
        for stored, st, error, raw_text, readouts, elapsed, finished, kind, spec, n in rows:
            key = public_key(stored)
            yield StoredRecord(
                key=key,
                status=st,
                error=error,
                raw=tables.decode(raw_text, conn, path, "records", key, "raw") if raw else None,
                readouts=tables.decode(readouts, conn, path, "records", key, "readouts")
                if check is None
                else tables.readouts(readouts, conn, path, key, check),
                elapsed_s=elapsed,
                finished_at=finished,
                protocol=tables.kind_name(kind, conn),
                spec=tables.spec(kind, spec, conn, path, key),
                attempt=n,
            )

    def to_frame(
        self,
        *,
        include_raw: bool = False,
        status: str | None = None,
        kind: str | None = None,
        columns: Sequence[str] | None = None,
        where: Mapping[str, object] | None = None,
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
        selected in SQL, the others a chunk at a time). Rows are read
        :data:`~clearsight.store._frames.CHUNK` at a time and text columns whose values repeat
        are categoricals, so memory is the frame and one chunk, never a Python object per cell.
        """
        from clearsight.store._frames import read_frame

        return read_frame(
            self.conn,
            self._tables,
            self.path,
            include_raw=include_raw,
            status=status,
            kind=kind,
            columns=columns,
            where=where,
        )

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


def _batched(cursor: sqlite3.Cursor) -> Iterator[Any]:
    """The rows of ``cursor``, fetched 1,000 at a time (a large run never held at once)."""
    while batch := cursor.fetchmany(1000):
        yield from batch
