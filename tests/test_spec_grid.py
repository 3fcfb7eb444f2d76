"""Items as a product of field groups (clearsight.store._items) against the items made one by one:
the same typed items, the same keys as :attr:`Spec.key` and stored rows that read back as the
items' JSON form, whatever the groups hold; a sweep's grids and every way a grid is cut."""

from __future__ import annotations

import itertools
import json
import pickle
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.specs import Options
from clearsight.store import RunStore, compact_json
from clearsight.store._items import SpecGrid, SpecGrids, SpecList, as_items
from clearsight.store._packed import unpack
from clearsight.store._tables import Tables
from test_spec_rows import Nested, Row, Shared, json_values, scalars, words


def one_by_one(groups: list[list[dict[str, Any]]]) -> list[Row]:
    """The product's items made one by one, the last group varying fastest."""
    out = []
    for combo in itertools.product(*groups):
        fields: dict[str, Any] = {}
        for entry in combo:
            fields.update(entry)
        out.append(Row(**fields))
    return out


def stored_json(tables: Tables, text: str) -> str:
    """A stored row decoded (parts by their value) and written as plain JSON."""
    value = unpack(json.loads(text), tables.shapes)
    for name in Row.parts:
        value[name] = json.loads(tables.part_texts[value[name]])
    return compact_json(value)


shared = st.builds(
    lambda text, n: Shared(text, (0.5, float(n))), words, st.integers(0, 3)
) | st.builds(lambda: Shared("same", ()))
numbers = st.none() | st.floats() | st.integers(min_value=-(2**70), max_value=2**70)
nested = st.none() | st.lists(st.integers(), max_size=3).map(
    lambda b: Nested(PurePosixPath("/x"), tuple(b))
)
fixed = st.fixed_dictionaries(
    {
        "shared": shared,
        "options": st.dictionaries(st.text(max_size=4), json_values, max_size=3).map(Options),
        "free": st.dictionaries(st.text(max_size=4), json_values, max_size=3),
    }
)
middle = st.fixed_dictionaries(
    {"word": words, "number": numbers, "box": st.lists(scalars, max_size=4).map(tuple)}
)
inner = st.fixed_dictionaries(
    {
        "flag": st.booleans(),
        "inner": nested,
        "later": st.none() | words,
        "level": st.none() | st.floats(),
    }
)


@settings(max_examples=150, deadline=None)
@given(
    fixed=st.lists(fixed, min_size=1, max_size=2),
    middle=st.lists(middle, min_size=1, max_size=3),
    inner_entries=st.lists(inner, min_size=1, max_size=3),
    with_level=st.booleans(),
)
def test_a_grid_is_its_items_made_one_by_one(
    fixed: list[dict[str, Any]],
    middle: list[dict[str, Any]],
    inner_entries: list[dict[str, Any]],
    with_level: bool,
) -> None:
    if not with_level:  # left to the class default, in the items as in the keys
        inner_entries = [{k: v for k, v in e.items() if k != "level"} for e in inner_entries]
    groups = [fixed, middle, inner_entries]
    expected = one_by_one(groups)
    grid = SpecGrid(Row, groups)
    assert len(grid) == len(expected)
    assert list(grid) == expected
    assert list(grid.keys()) == [item._key_of(item.to_json()) for item in expected]
    tables = Tables()
    rows = list(tables.grid_rows(grid))
    assert [raw.hex() for raw, _, _ in rows] == list(grid.keys())  # type: ignore[union-attr]
    for (_, _, text), item in zip(rows, expected, strict=True):
        assert stored_json(tables, text) == compact_json(item.to_json())
    # the items a grid builds once its keys are known carry them
    assert [item.__dict__["key"] for item in grid] == list(grid.keys())


def _grid(n_words: int = 3, n_flags: int = 2, prompt: str = "p") -> SpecGrid[Row]:
    fixed = {"shared": Shared(prompt, (1.0,)), "options": Options({"t": 0.5}), "free": {}}
    middle = [{"word": f"w{i}", "number": i, "box": (i, i)} for i in range(n_words)]
    last = [{"flag": bool(j), "inner": None, "later": None} for j in range(n_flags)]
    return SpecGrid(Row, [(fixed,), middle, last])


def test_indexing_slicing_and_positions_match_the_list() -> None:
    grid = _grid()
    items = list(grid)
    assert (grid[0], grid[-1]) == (items[0], items[-1])
    assert (grid[1:5], grid[::2]) == (items[1:5], items[::2])
    with pytest.raises(IndexError):
        grid[len(items)]
    cut = SpecGrid(Row, grid.groups, [5, 1, 3])
    assert list(cut) == [items[5], items[1], items[3]]
    assert cut.keys() == tuple(items[i].key for i in (5, 1, 3))
    with pytest.raises(IndexError, match="outside the grid"):
        SpecGrid(Row, grid.groups, [6])


def test_only_keeps_the_wanted_items_in_order_and_the_same_grid_when_all() -> None:
    grid = _grid()
    keys = grid.keys()
    assert grid.only(set(keys)) is grid
    kept = grid.only({keys[4], keys[1]})
    assert list(kept) == [grid[1], grid[4]]
    assert len(grid.only(set())) == 0
    chain = SpecGrids([_grid(), _grid(2, 1, "q"), _grid(0)])
    assert (len(chain), len(chain.grids)) == (6 + 2, 2)  # the empty grid is dropped
    assert list(chain) == [*_grid(), *_grid(2, 1, "q")]
    assert chain[7] == chain[-1] == _grid(2, 1, "q")[1]
    assert chain[2:4] == list(chain)[2:4]
    keys = chain.keys()
    kept = chain.only({keys[0], keys[7]})
    assert isinstance(kept, SpecGrids)
    assert [i.key for i in kept] == [keys[0], keys[7]]
    assert keys == [i.key for i in list(chain)]
    assert (chain.kinds(), SpecGrids([]).kinds()) == ({"test.rows"}, frozenset())


def test_a_plain_sequence_answers_as_a_grid_does() -> None:
    """The Items protocol: the specs of a grid in a plain list, wrapped by as_items, give the
    grid's keys, kinds, wanted items and stored rows; a grid is its own Items."""
    grid = _grid()
    plain = as_items(list(grid))
    assert isinstance(plain, SpecList)
    assert as_items(grid) is grid
    assert plain.keys() == list(grid.keys())
    assert plain.kinds() == grid.kinds() == {"test.rows"}
    wanted = {grid.keys()[1], grid.keys()[4]}
    assert list(plain.only(wanted)) == list(grid.only(wanted)) == [grid[1], grid[4]]
    assert (plain[-1], plain[1:3]) == (grid[-1], grid[1:3])
    tables = Tables()
    assert list(grid.rows(tables)) == list(plain.rows(tables))  # one encoding, two paths
    generated = as_items(item for item in grid)  # an iterator is read once, into a tuple
    assert (len(generated), list(generated)) == (len(grid), list(grid))
    assert as_items([]).kinds() == frozenset()


def test_a_pickled_grid_keeps_its_items_and_keys() -> None:
    grid = _grid().only(set(_grid().keys()[:3]))
    again = pickle.loads(pickle.dumps(grid))
    assert (list(again), again.keys()) == (list(grid), grid.keys())
    assert again._digests is not None  # a worker hashes nothing


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([[{"word": "a"}], [{"word": "b"}]], "in two groups"),
        ([[{"word": "a"}, {"number": 1}]], "name different fields"),
        ([[{"nope": 1}]], "has no field 'nope'"),
        ([[{"fixed": "x"}]], "has no field 'fixed'"),  # init=False: a class default only
        ([[{"word": "a"}]], "no group gives"),
        ([], "at least one group"),
    ],
)
def test_a_grid_that_cannot_make_its_items_is_refused(
    groups: list[list[dict[str, Any]]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        SpecGrid(Row, groups)


def test_a_secret_in_a_grid_item_goes_the_generic_way() -> None:
    secret = "sk-test-0123456789abcdef"
    fixed = {"shared": Shared("p", ()), "options": Options({}), "free": {}}
    middle = [{"word": w, "number": 1, "box": ()} for w in ("plain", secret)]
    last = [{"flag": True, "inner": None, "later": None}]
    grid = SpecGrid(Row, [(fixed,), middle, last])
    tables = Tables()
    tables.secrets = (secret,)
    rows = list(tables.grid_rows(grid))
    expected = [i.key for i in one_by_one([[fixed], middle, last])]
    assert [raw.hex() for raw, _, _ in rows] == expected  # type: ignore[union-attr]
    assert secret not in rows[1][2]
    assert "***" in rows[1][2]
    assert secret not in rows[0][2]


def test_a_store_adds_a_sweep_from_its_grids_as_from_its_items(tmp_path: Path) -> None:
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.protocol import SWEEP

    config = SweepConfig(
        scenes="bundled", scene_ids=("skimage-coffee", "skimage-chelsea"), all_targets=True
    )
    with RunStore.open(tmp_path / "grid") as store:
        stages = list(SWEEP.stages(config, SWEEP.plan(config), store))
        grids = stages[0].items
        assert isinstance(grids, SpecGrids)
        items = list(grids)
        assert any(i.shown is not None for i in items)
        assert grids.keys() == [i._key_of(i.to_json()) for i in items]  # before any store saw it
        assert store.add_items(grids) == len(items)
        assert store.add_items(grids) == 0
    with RunStore.open(tmp_path / "items") as store:
        assert store.add_items(items) == len(items)  # one by one
    texts = {}
    for name in ("grid", "items"):
        with RunStore.open(tmp_path / name, read_only=True) as store:
            rows = store.conn.execute("SELECT key, kind, spec FROM items ORDER BY id").fetchall()
            texts[name] = [
                (
                    raw.hex(),
                    compact_json(store._tables.spec(k, t, store.conn, store.path, raw.hex())),
                )
                for raw, k, t in rows
            ]
    assert texts["grid"] == texts["items"]
    assert [key for key, _ in texts["grid"]] == [i.key for i in items]
