"""A run's records as one DataFrame, built chunk by chunk in bounded memory, repeated strings as
categoricals (:meth:`RunStore.to_frame`, :func:`load_run`).

A run's records are read a chunk at a time (a few thousand rows of Python values, dropped once
the chunk is a frame); each chunk's text columns whose values repeat (models, conditions,
wordings, answers) become categoricals; the chunks are joined at the end with one set of
categories per column. Memory is then the typed frame plus one chunk, instead of one Python
object per cell (a text column of 1.8 million rows as Python strings is ~100 MB; as a
categorical of a handful of values, 1.8 MB).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from clearsight.store._json import compact_json
from clearsight.store._keys import public_key
from clearsight.store._schema import FRAME_COLUMNS, filters
from clearsight.store._tables import Tables

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["CHUNK", "compact", "join_chunks", "read_frame"]

# Rows read at a time: one chunk of Python values at a time while a frame is built.
CHUNK = 20_000


class _Chunk(NamedTuple):
    """One chunk of records decoded: fixed values, flat specs, flat read-outs, raw texts."""

    fixed: list[tuple[Any, ...]]
    specs: list[dict[str, JsonValue]]
    readouts: list[dict[str, JsonValue]]
    raws: list[str | None]


def read_frame(
    conn: sqlite3.Connection,
    tables: Tables,
    path: Path,
    *,
    include_raw: bool,
    status: str | None,
    kind: str | None,
    columns: Sequence[str] | None,
    where: Mapping[str, object] | None,
) -> pd.DataFrame:
    """The frame :meth:`RunStore.to_frame` describes, read :data:`CHUNK` rows at a time."""
    reader = _FrameReader(columns, where, include_raw)
    status = _take_scalar(reader.where, "status", status)
    sql_where, params = filters(status, _take_scalar(reader.where, "protocol", kind))
    query = (
        "SELECT i.key, i.kind, r.status, r.error, r.elapsed_s, r.finished_at, r.attempt, "
        f"i.spec, r.readouts, {'r.raw' if include_raw else 'NULL'} "
        f"FROM records AS r JOIN items AS i ON i.id = r.id{sql_where} ORDER BY i.id"
    )
    cursor = conn.execute(query, params)
    while batch := cursor.fetchmany(CHUNK):
        reader.add(_decode(batch, tables, conn, path))
    return reader.frame()


def _decode(
    batch: Sequence[tuple[Any, ...]], tables: Tables, conn: sqlite3.Connection, path: Path
) -> _Chunk:
    """One chunk of :func:`read_frame`'s query decoded."""
    chunk = _Chunk([], [], [], [])
    memo: dict[tuple[int, str], tuple[JsonValue, dict[str, JsonValue]]] = {}  # parts flattened once
    for stored, kind, *rest, spec, readout, raw in batch:
        key = public_key(stored)
        chunk.fixed.append((key, tables.kind_name(kind, conn), *rest))
        value = tables.spec(kind, spec, conn, path, key, shared=True)
        chunk.specs.append(_flatten(value, parts=tables.kind_ids[kind][1], memo=memo))
        chunk.readouts.append(
            _flatten(tables.decode(readout, conn, path, "records", key, "readouts"))
        )
        if raw is not None:
            raw = compact_json(tables.decode(raw, conn, path, "records", key, "raw"))
        chunk.raws.append(raw)
    return chunk


def _is_text(column: pd.Series) -> bool:
    """Whether every non-missing value of ``column`` is a string (and one is)."""
    return bool(pd.api.types.infer_dtype(column, skipna=True) == "string")


def compact(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each text column whose values repeat (at most half the rows distinct)
    as a categorical with sorted categories; other columns unchanged."""
    out = {}
    for name in frame.columns:
        column = frame[name]
        if (
            not isinstance(column.dtype, pd.CategoricalDtype)
            and not pd.api.types.is_numeric_dtype(column.dtype)
            and _is_text(column)
            and column.nunique() * 2 <= max(len(column), 2)
        ):
            column = column.astype("category")
        out[name] = column
    return pd.DataFrame(out, index=frame.index)


def join_chunks(chunks: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    """The chunks one under the other (index 0..n-1), with ``columns`` in that order; a column
    missing from a chunk is missing values there; categoricals are joined on the union of their
    categories (sorted) without turning into objects; any other column gets the dtype one frame
    of all its rows would have (numbers with gaps as floats, text as strings)."""
    sizes = [len(c) for c in chunks]
    total = sum(sizes)
    out: dict[str, pd.Series | np.ndarray | pd.Categorical] = {}
    for name in columns:
        parts = [c.get(name) for c in chunks]
        present = [p for p in parts if p is not None and not (p.isna().all() and len(p))]
        if present and all(isinstance(p.dtype, pd.CategoricalDtype) for p in present):
            out[name] = _join_categoricals(parts, sizes)
            continue
        filled = [
            p if p is not None else pd.Series(np.nan, index=range(n), dtype=object)
            for p, n in zip(parts, sizes, strict=True)
        ]
        if any(isinstance(p.dtype, pd.CategoricalDtype) for p in filled):
            filled = [p.astype(object) for p in filled]
        joined = pd.concat(filled, ignore_index=True) if filled else pd.Series([], dtype=object)
        if joined.dtype == object:  # numbers or text beside a chunk's missing values: as a
            joined = joined.infer_objects()  # frame of all the rows would type them
        out[name] = compact(joined.to_frame(name))[name] if len(chunks) > 1 else joined
    return pd.DataFrame(out, index=range(total), columns=list(columns))


def _join_categoricals(parts: Sequence[pd.Series | None], sizes: Sequence[int]) -> pd.Categorical:
    """Categorical parts (None, or all missing, where a chunk lacks the column) joined."""
    categories = sorted(
        {
            c
            for p in parts
            if p is not None and isinstance(p.dtype, pd.CategoricalDtype)
            for c in p.cat.categories
        }
    )
    dtype = pd.CategoricalDtype(categories)
    codes: list[np.ndarray] = []
    for part, n in zip(parts, sizes, strict=True):
        if part is None or not isinstance(part.dtype, pd.CategoricalDtype):
            codes.append(np.full(n, -1, dtype=np.int32))
        else:
            codes.append(part.cat.set_categories(categories).cat.codes.to_numpy(np.int32))
    joined = np.concatenate(codes) if codes else np.empty(0, dtype=np.int32)
    return pd.Categorical.from_codes(joined, dtype=dtype)


class _FrameReader:
    """Builds :func:`read_frame`'s frame a chunk at a time (see :meth:`RunStore.to_frame`)."""

    def __init__(
        self, columns: Sequence[str] | None, where: Mapping[str, object] | None, include_raw: bool
    ) -> None:
        self.columns = None if columns is None else list(dict.fromkeys(columns))
        self.where = dict(where or {})
        self.include_raw = include_raw
        self.need = None if self.columns is None else {*self.columns, *self.where}
        self.chunks: list[tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]] = []
        self.spec_names: dict[str, None] = {}  # every flat spec name seen (for collisions)
        self.readout_names: dict[str, None] = {}

    def add(self, rows: _Chunk) -> None:
        """Turn one decoded chunk into typed frames, keeping the wanted columns and rows."""
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


def _take_scalar(where: dict[str, object], name: str, given: str | None) -> str | None:
    """A ``where`` entry on ``name`` holding one string, taken out to be selected in SQL (when
    the caller's own filter ``given`` is not set)."""
    value = where.get(name)
    if given is None and isinstance(value, str):
        del where[name]
        return value
    return given


def _flatten(
    obj: dict[str, JsonValue],
    prefix: str = "",
    *,
    parts: Sequence[str] = (),
    memo: dict[tuple[int, str], tuple[JsonValue, dict[str, JsonValue]]] | None = None,
) -> dict[str, JsonValue]:
    """Flatten decoded JSON: nested dicts into ``a.b`` keys, lists and empty dicts to JSON text.

    ``obj`` comes from :func:`json.loads`, so containers are exactly ``dict`` and ``list``.
    ``parts``: the fields of ``obj`` holding a shared part value (the same object for every
    item of the part), flattened once into ``memo`` (which holds the object, so its id is not
    reused while the memo lives) instead of once a row.
    """
    out: dict[str, JsonValue] = {}
    for key, value in obj.items():
        kind = type(value)
        if kind is not dict and kind is not list:  # the common case first: a scalar
            out[prefix + key] = value
        elif not isinstance(value, dict) or not value:  # read back: redacted when written
            out[prefix + key] = compact_json(value)
        elif memo is not None and key in parts:
            found = memo.get((id(value), key))
            if found is None or found[0] is not value:
                found = memo[(id(value), key)] = (value, _flatten(value, f"{prefix}{key}."))
            out.update(found[1])
        else:
            out.update(_flatten(value, f"{prefix}{key}."))
    return out
