"""A side index's reads (:class:`clearsight.store.Select` run by :class:`~clearsight.store.
SideIndex`): for random rows and random filters, the rows read, their order and their count
equal a pandas filter of the same rows; a column the index lacks is refused; a value is
bound, never written into the SQL."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.store import IndexDesign, Order, Range, Select, SideIndex, Value

_DESIGN = IndexDesign(
    kind="toy",
    read=(),
    columns={"name": "TEXT", "n": "INTEGER", "x": "REAL"},
    indexes=(("name", "n"), ("x",)),
    rows=lambda frame: frame,
    tally=("name",),
    tallied=("x",),
)
#: Few distinct values, so filters hit, ties happen and the quote is a value like any other.
_NAMES = ("a", "b", "it's", "x' OR 1=1 --")
_XS = (0.0, 0.25, 0.5, 0.8, 1.0, float("nan"))


def _frame(draw: st.DrawFn) -> pd.DataFrame:
    size = draw(st.integers(0, 40) | st.integers(10, 40))
    return pd.DataFrame(
        {
            "id": np.arange(1, size + 1),
            "name": draw(st.lists(st.sampled_from(_NAMES), min_size=size, max_size=size)),
            "n": draw(st.lists(st.integers(0, 3), min_size=size, max_size=size)),
            "x": draw(st.lists(st.sampled_from(_XS), min_size=size, max_size=size)),
        }
    )


def _range(draw: st.DrawFn) -> Range:
    stored = st.sampled_from(_XS[:-1])  # a bound equal to a value: open or closed matters
    bound = st.one_of(st.none(), stored, stored, st.floats(-0.5, 1.5))
    return Range(draw(bound), draw(bound), draw(st.booleans()), draw(st.booleans()))


@st.composite
def _cases(draw: st.DrawFn) -> tuple[pd.DataFrame, Select]:
    frame = _frame(draw)
    among = st.tuples() | st.lists(st.integers(0, 4), max_size=3).map(tuple)
    select = Select(
        ("id", "name", "n", "x"),
        equal=draw(st.dictionaries(st.just("name"), st.sampled_from(_NAMES), max_size=1)),
        among=draw(st.dictionaries(st.just("n"), among, max_size=1)),
        within={"x": _range(draw)} if draw(st.integers(0, 3)) else {},
        present=draw(st.sampled_from(((), ("x",)))),
        missing=draw(st.sampled_from(((), (), (), ("x",)))),
        order=draw(st.sampled_from(((), (Order("x"),), (Order("x", True), Order("n", True))))),
        limit=draw(st.none() | st.integers(0, 20)),
        offset=draw(st.sampled_from((0, 0, 0, 1, 5))),
    )
    return frame, select


def _inside(values: pd.Series, bounds: Range) -> pd.Series:
    keep = values.notna()
    if bounds.low is not None:
        keep &= values > bounds.low if bounds.open_low else values >= bounds.low
    if bounds.high is not None:
        keep &= values < bounds.high if bounds.open_high else values <= bounds.high
    return keep


def _expected(frame: pd.DataFrame, select: Select) -> pd.DataFrame:
    """``select`` done by pandas: filter, sort (missing last, then by id), slice."""
    keep = pd.Series(True, index=frame.index)
    for name, value in select.equal.items():
        keep &= frame[name] == value
    for name, values in select.among.items():
        keep &= frame[name].isin(values)
    for name, bounds in select.within.items():
        keep &= _inside(frame[name], bounds)
    for name in select.present:
        keep &= frame[name].notna()
    for name in select.missing:
        keep &= frame[name].isna()
    chosen = frame[keep]
    for order in reversed((*select.order, Order("id"))):  # stable: the last key sorts first
        chosen = chosen.sort_values(
            order.column, ascending=not order.descending, na_position="last", kind="stable"
        )
    stop = None if select.limit is None else select.offset + select.limit
    return chosen.iloc[select.offset : stop]


def _index(folder: str, frame: pd.DataFrame) -> SideIndex:
    index = SideIndex.fresh(Path(folder) / "side.sqlite", _DESIGN)
    index.write(frame, (), (), (0, len(frame)))
    return index


@settings(max_examples=150, deadline=None)
@given(_cases())
def test_a_select_reads_what_a_pandas_filter_of_the_rows_selects(
    case: tuple[pd.DataFrame, Select],
) -> None:
    frame, select = case
    expected = _expected(frame, select)
    with tempfile.TemporaryDirectory() as folder:
        index = _index(folder, frame)
        try:
            found, total = index.rows(select), index.count(select)
        finally:
            index.close()
    unsliced = _expected(frame, dataclasses.replace(select, limit=None, offset=0))
    assert total == len(unsliced)
    assert [row[0] for row in found] == list(expected["id"])
    read = pd.DataFrame(found, columns=list(select.columns)).astype({"x": float})
    pd.testing.assert_frame_equal(read, expected.reset_index(drop=True), check_dtype=False)


def test_the_tally_is_read_and_an_unknown_column_is_refused(tmp_path: Path) -> None:
    frame = pd.DataFrame({"id": [1, 2, 3], "name": ["a", "b", "a"], "n": [1, 2, 3]})
    frame["x"] = [0.5, np.nan, 0.25]
    index = _index(str(tmp_path), frame)
    try:
        tally = index.rows(Select(_DESIGN.names("tally"), table="tally"))
        assert tally == [("a", 1, 2, 0.75), ("b", 2, 0, 0.0)]
        with pytest.raises(ValueError, match="no column 'x; DROP TABLE rows'"):
            index.rows(Select(("id", "x; DROP TABLE rows")))
        with pytest.raises(ValueError, match="no column 'key'"):
            index.count(Select((), equal={"key": "a"}))
        with pytest.raises(ValueError, match="no table 'meta'"):
            index.rows(Select(("key",), table="meta"))
        values: tuple[Value, ...] = ("a' OR '1'='1",)
        assert index.count(Select((), among={"name": values})) == 0
        assert index.count(Select(())) == 3
    finally:
        index.close()


def _sql_indexes(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        found = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'").fetchall()
        return {str(name): str(sql) for name, sql in found if sql is not None}
    finally:
        conn.close()


def test_a_changed_sql_index_is_made_on_open_and_the_rows_are_kept(tmp_path: Path) -> None:
    frame = pd.DataFrame({"id": [1, 2], "name": ["a", "b"], "n": [1, 2], "x": [0.5, 0.25]})
    path = tmp_path / "side.sqlite"
    _index(str(tmp_path), frame).close()
    conn = sqlite3.connect(path, isolation_level=None)  # as written before indexes were named
    for name in _sql_indexes(path):  # by their columns: rows_0, rows_1, the signature with them
        conn.execute(f"DROP INDEX {name}")
    conn.execute("CREATE INDEX rows_0 ON rows (name, n)")
    conn.execute("CREATE INDEX rows_1 ON rows (x)")
    shape = [_DESIGN.kind, _DESIGN.read, dict(_DESIGN.columns), _DESIGN.indexes]
    legacy = json.dumps([*shape, _DESIGN.tally, _DESIGN.tallied])
    conn.execute("UPDATE meta SET value = ? WHERE key = 'design'", (legacy,))
    conn.close()
    wider = dataclasses.replace(_DESIGN, indexes=(("name", "n"), ("n", "x")))
    index = SideIndex.open(path, wider)
    try:
        assert index.count(Select(())) == 2  # not built again
        assert index.meta("high") == 2
    finally:
        index.close()
    assert _sql_indexes(path) == {
        "rows_0": "CREATE INDEX rows_0 ON rows (name, n)",  # kept, (x) dropped, (n, x) made
        "rows_by_n_x": "CREATE INDEX rows_by_n_x ON rows (n, x)",
    }
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'design'").fetchone() == (
        wider.signature,
    )
    conn.close()
    reopened = SideIndex.open(path, wider)  # nothing to change: opened as it is
    reopened.close()
    assert set(_sql_indexes(path)) == {"rows_0", "rows_by_n_x"}


def test_an_index_of_other_tables_is_built_again(tmp_path: Path) -> None:
    frame = pd.DataFrame({"id": [1, 2], "name": ["a", "b"], "n": [1, 2], "x": [0.5, 0.25]})
    _index(str(tmp_path), frame).close()
    other = dataclasses.replace(_DESIGN, columns={**_DESIGN.columns, "y": "REAL"})
    index = SideIndex.open(tmp_path / "side.sqlite", other)
    try:
        assert index.count(Select(())) == 0
        assert index.meta("high") == 0
    finally:
        index.close()
