"""The store's small tables in memory — shapes, kinds and parts — and the encoding and decoding
of rows through them.

A row of ``items`` is ``(stored key, kind id, packed spec)``: the spec's part fields hold part
ids (each part's JSON stored once under its content hash), its objects are packed by shape
(:mod:`clearsight.store._packed`). A typed spec is encoded by its class's
:class:`~clearsight.store._rows.RowEncoder` (key and row in one pass), a grid of them straight
from its groups, anything else (a ``(key, kind, spec)`` triple, an item whose text holds a
secret to redact) the generic way. What a write adds to the tables is inserted by
:meth:`Tables.save` inside its transaction and forgotten if that is rolled back.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clearsight.credentials import redact, redact_value
from clearsight.seeding import content_hash
from clearsight.specs import Part, Spec, spec_class
from clearsight.store._json import compact_json, dumps, loads, secrets_in
from clearsight.store._keys import stored_key
from clearsight.store._packed import Shapes, pack, unpack
from clearsight.store._records import Record
from clearsight.store._rows import RowEncoder
from clearsight.validate import InputError

if TYPE_CHECKING:
    from pydantic import JsonValue

    from clearsight.store._items import ItemTriple, Row, SpecGrid
    from clearsight.store._readouts import ReadoutCheck

__all__ = ["Tables"]


def _item_triple(item: Spec | ItemTriple) -> tuple[str, str, Mapping[str, JsonValue], Spec | None]:
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


class Tables:
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
            text = dumps(value, f"part {digest}", secrets)
            self.part_ids[digest] = found
            self.part_texts[found] = text
            self.new_parts.append((found, bytes.fromhex(digest), text))
        return found

    def encode(self, value: Any, what: str, secrets: Sequence[str]) -> str:
        """Packed JSON text of ``value`` with key variables redacted (as
        :func:`~clearsight.store._json.dumps` redacts)."""
        try:
            text = compact_json(pack(value, self.shapes))
            found = secrets_in(text, secrets)
            return compact_json(pack(redact_value(value, found), self.shapes)) if found else text
        except (TypeError, ValueError) as exc:
            raise InputError(f"{what} is not JSON-able: {exc}") from exc

    def item_row(self, item: Spec | ItemTriple) -> tuple[str, Row]:
        """``(key, (stored key, kind id, packed spec))`` of an item: a typed spec by its class's
        :class:`RowEncoder`, unless its text holds a secret to redact (then, like a triple, by
        :meth:`spec_row`)."""
        if isinstance(item, Spec):
            key, raw, text = self._encoder(type(item)).row(item)
            if not self.secrets or not secrets_in(text, self.secrets):
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

    def grid_rows(self, grid: SpecGrid[Any]) -> list[Row]:
        """``(stored key, kind id, packed spec)`` of each item of a grid, from its groups
        (:meth:`RowEncoder.grid_rows`; the grid learns its digests); an item whose text holds
        a secret is built and goes the way of :meth:`item_row`."""
        digests, texts = self._encoder(grid.cls).grid_rows(*grid.product)
        grid.learn(b"".join(digests))
        rows: list[Row]
        kind = itertools.repeat(self._kind(grid.kind)[0], len(digests))
        rows = list(zip(digests, kind, texts, strict=True))
        if self.secrets:
            for position, text in enumerate(texts):
                if secrets_in(text, self.secrets):
                    rows[position] = self.item_row(grid.at(position))[1]
        return rows if grid.positions is None else [rows[p] for p in grid.positions]

    def spec_row(
        self,
        key: str,
        kind: str,
        spec: Mapping[str, JsonValue],
        item: Spec | None,
        secrets: Sequence[str],
    ) -> Row:
        """``(stored key, kind id, packed spec)`` of an item, its parts replaced by their ids."""
        kind_id, parts = self._kind(kind)
        if parts:
            spec = dict(spec)
            for name in parts:
                if name in spec:
                    value = getattr(item, name, None)
                    digest = value.digest if isinstance(value, Part) else content_hash(spec[name])
                    spec[name] = self._part(digest, spec[name], secrets)
        return stored_key(key), kind_id, self.encode(spec, f"spec of item {key}", secrets)

    def record_row(
        self, item_id: int, record: Record, secrets: Sequence[str]
    ) -> tuple[int, str, str | None, str, str, float, str]:
        """Encode one record as the parameters of
        :data:`~clearsight.store._schema.UPSERT_RECORD`."""
        return (
            item_id,
            record.status,
            None if record.error is None else redact(record.error, secrets),
            self.encode(record.raw, f"raw output of record {record.key}", secrets),
            self.encode(dict(record.readouts), f"readouts of record {record.key}", secrets),
            float(record.elapsed_s),
            record.finished_at,
        )

    def decode(
        self, text: str, conn: sqlite3.Connection, path: Path, table: str, key: str, column: str
    ) -> Any:
        """A packed column decoded (the tables read again when it names a shape a writer added
        since this reader loaded them); InputError naming the row if it is not packed JSON."""
        packed = loads(text, path, table, key, column)
        return self._unpack(packed, conn, (path, table, key, column))

    def readouts(
        self,
        text: str,
        conn: sqlite3.Connection,
        path: Path,
        key: str,
        check: ReadoutCheck | None,
    ) -> Any:
        """A record's packed read-outs decoded, and checked to be of the type ``check`` reads
        them as (:class:`~clearsight.store._readouts.ReadoutCheck`; None: untyped)."""
        packed = loads(text, path, "records", key, "readouts")
        value = self._unpack(packed, conn, (path, "records", key, "readouts"))
        if check is not None:
            check(packed, self.shapes, key)
        return value

    def _unpack(
        self, packed: Any, conn: sqlite3.Connection, where: tuple[Path, str, str, str]
    ) -> Any:
        """A packed value unpacked; InputError naming the row (``where``: the run's database,
        table, key and column) if it is not packed JSON."""
        try:
            return unpack(packed, self.shapes)
        except KeyError:  # a shape a writer added since this reader loaded the tables?
            self.refresh(conn)
            with suppress(KeyError, IndexError, TypeError, ValueError):
                return unpack(packed, self.shapes)
        except (IndexError, TypeError, ValueError):
            pass
        path, table, key, column = where
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
        spec = self.decode(text, conn, path, "items", key, "spec")
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
            return loads(text, path, "parts", str(part_id))
        value = self.part_values.get(part_id)
        if value is None:
            value = self.part_values[part_id] = loads(text, path, "parts", str(part_id))
        return value
