"""A side index of a run: a SQLite file of its own holding one row per ok record of a kind, the
columns a reader filters, sorts and counts by, and a tally per group, so that a page of a large
run is an indexed query instead of a read of the run. This module is the one place its SQL
lives: the index's tables (:class:`SideIndex`, laid out by an :class:`IndexDesign`), the writes
that bring it up to date a chunk at a time, and the reads, each a typed :class:`Select`
(columns equal to a value, among values, within a :class:`Range`, present or missing; an order;
a limit and offset) run with its values bound as parameters, never written into the SQL.

The file's tables: ``meta`` (the design's signature and ``high``, the highest item id read),
``rows`` (``id``, the item id, then the design's columns), ``waiting`` (item ids read without an
ok record yet) and, where the design asks for one, ``tally``: per group of its ``tally``
columns the first item id and the count (``n_<c>``, non-missing values) and sum (``s_<c>``)
of each of its ``tallied`` columns, added to as rows are written (a row is written once and
never changes).
Column names in a :class:`Select` are checked against the design, so no text of a request
reaches the SQL.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

__all__ = ["IndexDesign", "Order", "Range", "Select", "SideIndex", "Value"]

#: A value a column is compared with.
Value = str | int | float


@dataclass(frozen=True)
class IndexDesign:
    """What a side index holds: the records of ``kind``; the store's frame columns it reads
    (``read``); its own ``columns`` (name -> SQL type, after the item ``id``), the SQL
    ``indexes`` on them, ``rows``, a chunk's frame (``id`` and ``read``) -> a frame of ``id``
    and ``columns`` (the records it leaves out are not indexed), and the ``tally`` (module
    docstring: its group columns and ``tallied`` columns, no group column ever missing)."""

    kind: str
    read: tuple[str, ...]
    columns: Mapping[str, str]
    indexes: tuple[tuple[str, ...], ...]
    rows: Callable[[pd.DataFrame], pd.DataFrame]
    tally: tuple[str, ...] = ()
    tallied: tuple[str, ...] = ()

    @property
    def signature(self) -> str:
        """The design's tables as text: an index written with another is built again. Its SQL
        ``indexes`` are not part of it: they are made or dropped when the index is opened
        (:meth:`SideIndex.open`), in seconds where a build takes minutes."""
        return json.dumps([self.kind, self.read, dict(self.columns), self.tally, self.tallied])

    def same_tables(self, signature: str) -> bool:
        """Whether an index whose ``meta`` holds ``signature`` has this design's tables (one
        written before the SQL indexes left the signature holds them fourth)."""
        shape = json.loads(signature)
        if isinstance(shape, list) and len(shape) == 6:
            del shape[3]
        return bool(shape == json.loads(self.signature))

    @property
    def counted(self) -> tuple[str, ...]:
        """The tally's columns after its groups: ``first``, then ``n_<c>`` and ``s_<c>``."""
        return ("first", *(f"{p}_{c}" for c in self.tallied for p in "ns"))

    def names(self, table: str) -> tuple[str, ...]:
        """The columns of ``table`` (``rows`` or ``tally``), in their order."""
        if table == "rows":
            return ("id", *self.columns)
        if table == "tally" and self.tally:
            return (*self.tally, *self.counted)
        raise ValueError(f"a side index of {self.kind!r} has no table {table!r}")


@dataclass(frozen=True)
class Range:
    """The values from ``low`` to ``high`` (None: unbounded on that side), each end included
    unless ``open_low`` / ``open_high`` says otherwise; a missing value is in no range."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False


class Order(NamedTuple):
    """A sort key: a column, descending or not; missing values sort last either way."""

    column: str
    descending: bool = False


@dataclass(frozen=True)
class Select:
    """A read of a side index's ``table``: its ``columns`` of the rows whose columns are
    ``equal`` to a value, ``among`` values (none: no row), ``within`` a :class:`Range`,
    ``present`` (not missing) and ``missing``, in ``order`` (then by the table's order: the
    item id for ``rows``), ``limit`` rows (None: all) after ``offset``."""

    columns: tuple[str, ...]
    equal: Mapping[str, Value] = field(default_factory=dict)
    among: Mapping[str, tuple[Value, ...]] = field(default_factory=dict)
    within: Mapping[str, Range] = field(default_factory=dict)
    present: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    order: tuple[Order, ...] = ()
    limit: int | None = None
    offset: int = 0
    table: str = "rows"

    def named(self) -> tuple[str, ...]:
        """Every column the read names."""
        where = (*self.equal, *self.among, *self.within, *self.present, *self.missing)
        return (*self.columns, *where, *(o.column for o in self.order))


def _where(select: Select) -> tuple[str, list[Value]]:
    """The ``WHERE`` clause of ``select`` and its parameters, in order."""
    terms, params = ["1"], list[Value]()
    for name, value in select.equal.items():
        terms.append(f"{name} = ?")
        params.append(value)
    for name, values in select.among.items():
        terms.append(f"{name} IN ({', '.join('?' * len(values))})")
        params.extend(values)
    for name, bounds in select.within.items():
        terms.append(f"{name} IS NOT NULL")
        if bounds.low is not None:
            terms.append(f"{name} {'>' if bounds.open_low else '>='} ?")
            params.append(bounds.low)
        if bounds.high is not None:
            terms.append(f"{name} {'<' if bounds.open_high else '<='} ?")
            params.append(bounds.high)
    terms += [f"{name} IS NOT NULL" for name in select.present]
    terms += [f"{name} IS NULL" for name in select.missing]
    return " AND ".join(terms), params


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=60)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _indexes(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """The SQL indexes made on ``rows`` (not a key's own), by name: their columns."""
    return {
        str(name): tuple(str(c[2]) for c in conn.execute(f"PRAGMA index_info('{name}')"))
        for _, name, _, origin, *_ in conn.execute("PRAGMA index_list('rows')")
        if origin == "c"
    }


def _reindexed(conn: sqlite3.Connection, design: IndexDesign) -> None:
    """The ``rows`` table given exactly the design's SQL indexes (each named after its
    columns; those it no longer names dropped, those it adds made) and ``meta`` its
    signature, in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = _indexes(conn)
        for name, names in found.items():
            if names not in design.indexes:
                conn.execute(f'DROP INDEX "{name}"')
        for names in dict.fromkeys(design.indexes):
            if names not in found.values():
                conn.execute(f"CREATE INDEX rows_by_{'_'.join(names)} ON rows ({', '.join(names)})")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'design'", (design.signature,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _values(frame: pd.DataFrame) -> Iterable[tuple[object, ...]]:
    """A frame's rows as SQLite values (a missing value as NULL)."""
    cells = frame.astype(object).where(frame.notna(), None)
    return cells.itertuples(index=False, name=None)


class SideIndex:
    """An open side index of the layout ``design`` (module docstring); close it after use."""

    def __init__(self, conn: sqlite3.Connection, design: IndexDesign) -> None:
        self._conn, self.design = conn, design

    @classmethod
    def open(cls, path: Path, design: IndexDesign) -> SideIndex:
        """The index at ``path``; created, or deleted and created again where it is not one of
        ``design`` (another design, or not a database at all)."""
        try:
            conn = _connect(path)
            found = conn.execute("SELECT value FROM meta WHERE key = 'design'").fetchone()
            if found is not None and design.same_tables(str(found[0])):
                if found[0] != design.signature or set(_indexes(conn).values()) != set(
                    design.indexes
                ):
                    _reindexed(conn, design)
                return cls(conn, design)
            conn.close()
        except (sqlite3.DatabaseError, ValueError):  # not a database, or not its signature
            pass
        return cls.fresh(path, design)

    @classmethod
    def fresh(cls, path: Path, design: IndexDesign) -> SideIndex:
        """An empty index of ``design`` at ``path`` (whatever was there deleted)."""
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        conn = _connect(path)
        conn.execute("BEGIN IMMEDIATE")
        columns = "".join(f", {name} {kind}" for name, kind in design.columns.items())
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute(f"CREATE TABLE rows (id INTEGER PRIMARY KEY{columns})")
        conn.execute("CREATE TABLE waiting (id INTEGER PRIMARY KEY)")
        if design.tally:
            counted = "".join(
                f", {name} {'INTEGER' if name[0] != 's' else 'REAL'}" for name in design.counted
            )
            groups = ", ".join(design.tally)
            conn.execute(f"CREATE TABLE tally ({groups}{counted}, UNIQUE ({groups}))")
        meta = {"design": design.signature, "high": "0"}
        conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        conn.execute("COMMIT")
        _reindexed(conn, design)
        return cls(conn, design)

    def close(self) -> None:
        """Close the index's connection."""
        self._conn.close()

    def meta(self, key: str) -> int:
        """A number the index keeps in ``meta`` (``high``: module docstring; 0 if absent)."""
        found = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return 0 if found is None else int(found[0])

    def waiting(self) -> list[int]:
        """The item ids read without an ok record yet."""
        return [int(row[0]) for row in self._conn.execute("SELECT id FROM waiting")]

    def _checked(self, select: Select) -> tuple[str, list[Value]]:
        names = self.design.names(select.table)
        unknown = [name for name in select.named() if name not in names]
        if unknown:
            raise ValueError(f"the side index's {select.table} has no column {unknown[0]!r}")
        return _where(select)

    def rows(self, select: Select) -> list[tuple[Any, ...]]:
        """The values of ``select.columns`` of each row ``select`` reads, in its order (each a
        SQLite value: text, a number or None)."""
        where, params = self._checked(select)
        order = [
            f"{o.column} IS NULL, {o.column}{' DESC' if o.descending else ''}" for o in select.order
        ]
        tie = "id" if select.table == "rows" else ", ".join(self.design.tally)
        sql = (
            f"SELECT {', '.join(select.columns)} FROM {select.table} WHERE {where} "
            f"ORDER BY {', '.join([*order, tie])} LIMIT ? OFFSET ?"
        )
        limit = -1 if select.limit is None else select.limit
        return self._conn.execute(sql, [*params, limit, select.offset]).fetchall()

    def count(self, select: Select) -> int:
        """How many rows ``select`` selects, its limit and offset aside."""
        where, params = self._checked(select)
        sql = f"SELECT count(*) FROM {select.table} WHERE {where}"
        return int(self._conn.execute(sql, params).fetchone()[0])

    def write(
        self,
        rows: pd.DataFrame | None,
        read: Sequence[int],
        waiting: Sequence[int],
        move: tuple[int, int] | None,
    ) -> bool:
        """In one transaction: ``rows`` (of items read again, only those still waiting), their
        tally, the items ``read`` out of ``waiting``, the items ``waiting`` (of a fresh chunk)
        into it, and ``high`` moved from ``move[0]`` to ``move[1]`` (None: items read again,
        ``high`` unchanged). False, with nothing written, where ``high`` is no longer
        ``move[0]``: another process wrote these items."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if move is not None and self.meta("high") != move[0]:
                conn.execute("ROLLBACK")
                return False
            if rows is not None:
                if move is None:
                    still = {row[0] for row in conn.execute("SELECT id FROM waiting")}
                    rows = rows[rows["id"].isin(still)]
                self._add(rows)
            conn.executemany("DELETE FROM waiting WHERE id = ?", [(int(i),) for i in read])
            conn.executemany("INSERT OR IGNORE INTO waiting VALUES (?)", [(i,) for i in waiting])
            if move is not None:
                conn.execute("UPDATE meta SET value = ? WHERE key = 'high'", (str(move[1]),))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return True

    def _add(self, rows: pd.DataFrame) -> None:
        """``rows`` and their tally (in the caller's transaction)."""
        design = self.design
        marks = ", ".join("?" * (len(design.columns) + 1))
        self._conn.executemany(f"INSERT INTO rows VALUES ({marks})", _values(rows))
        if not design.tally or rows.empty:
            return
        sums = {f"n_{c}": (c, "count") for c in design.tallied}
        sums |= {f"s_{c}": (c, "sum") for c in design.tallied}
        groups = rows.groupby(list(design.tally), sort=False).agg(first=("id", "min"), **sums)
        groups = groups.reset_index()[list(design.names("tally"))]
        updates = ", ".join(f"{n} = {n} + excluded.{n}" for n in design.counted[1:])
        self._conn.executemany(
            f"INSERT INTO tally VALUES ({', '.join('?' * groups.shape[1])}) "
            f"ON CONFLICT ({', '.join(design.tally)}) DO UPDATE SET "
            f"first = min(first, excluded.first), {updates}",
            _values(groups),
        )
