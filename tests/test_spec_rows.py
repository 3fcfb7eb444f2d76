"""The store's one-pass row encoder (clearsight.store._rows) against the generic encoding: the
same key as :attr:`Spec.key` and a stored text that decodes to the same value, on random values
of a test spec, of a sweep item and through a real store."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.specs import OMIT_NONE, Options, Part, Spec
from clearsight.store import RunStore, compact_json
from clearsight.store._packed import unpack
from clearsight.store._tables import Tables


@dataclass(frozen=True)
class Shared(Part):
    """A part: its digest in the key, its row id in the stored form."""

    prompt: str
    weights: tuple[float, ...]


@dataclass(frozen=True)
class Nested:
    """A nested dataclass: encoded by the generic functions, field alone."""

    where: PurePosixPath
    sides: tuple[int, ...]


@dataclass(frozen=True)
class Row(Spec):
    kind: ClassVar[str] = "test.rows"
    parts: ClassVar[tuple[str, ...]] = ("shared", "options")

    shared: Shared
    word: str
    number: float | int | None
    flag: bool
    box: tuple[Any, ...]
    inner: Nested | None
    options: Options
    free: dict[str, Any]
    later: str | None = field(default=None, metadata=OMIT_NONE)
    level: float | None = field(default=None, metadata=OMIT_NONE)
    fixed: str = field(default="fixed", init=False)  # a class default: not in __dict__


def generic(tables: Tables, item: Spec) -> tuple[str, bytes | str, str]:
    """Key, stored key and packed text by the generic path (``Spec.to_json`` and the key recipe,
    computed afresh)."""
    stored = item.to_json()
    key = item._key_of(stored)
    raw, _, text = tables.spec_row(key, item.kind, stored, item, ())
    return key, raw, text


def decoded(tables: Tables, text: str) -> str:
    """A packed text decoded and written again as plain JSON (NaN compares by its token)."""
    return compact_json(unpack(json.loads(text), tables.shapes))


def fast(tables: Tables, item: Spec) -> tuple[str, bytes, str]:
    tables.secrets = ()
    key, (raw, _, text) = tables.item_row(item)
    assert isinstance(raw, bytes)
    return key, raw, text


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
words = st.text(max_size=12) | st.sampled_from(
    ['a"b', "caf\u00e9", "\\", "{x}", "", "\n", "\ud7ff"]
)


@settings(max_examples=300, deadline=None)
@given(
    text=words,
    word=words,
    number=st.none() | st.floats() | st.integers(min_value=-(2**70), max_value=2**70),
    flag=st.booleans(),
    box=st.lists(scalars, max_size=4).map(tuple),
    inner=st.none()
    | st.lists(st.integers(), max_size=3).map(lambda b: Nested(PurePosixPath("/x"), tuple(b))),
    options=st.dictionaries(st.text(max_size=4), json_values, max_size=3),
    free=st.dictionaries(st.text(max_size=4), json_values, max_size=3),
    later=st.none() | words,
    level=st.none() | st.floats(),
)
def test_fast_row_is_the_generic_row(
    text: str,
    word: str,
    number: float | int | None,
    flag: bool,
    box: tuple[Any, ...],
    inner: Nested | None,
    options: dict[str, Any],
    free: dict[str, Any],
    later: str | None,
    level: float | None,
) -> None:
    tables = Tables()

    def make() -> Row:
        shared = Shared(text, (0.5, float(len(text))))
        return Row(shared, word, number, flag, box, inner, Options(options), free, later, level)

    item, again = make(), make()
    key, raw, text_fast = fast(tables, item)
    gkey, graw, text_generic = generic(tables, again)
    assert key == gkey == again.key
    assert raw == graw == bytes.fromhex(key)
    assert item.__dict__["key"] == key  # the key is kept on the item for the units
    assert decoded(tables, text_fast) == decoded(tables, text_generic)
    # the same item again: the cached pieces give the same row
    assert fast(tables, item) == (key, raw, text_fast)


def sweep_items(tmp: Path) -> list[Spec]:
    """Every item of a two-scene sweep (questions, ImageNet-C equivalents, depth profiles)."""
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.protocol import SWEEP

    config = SweepConfig(scenes="bundled", scene_ids=("skimage-coffee", "skimage-chelsea"))
    plan = SWEEP.plan(config)
    with RunStore.open(tmp / "planned") as store:
        return [item for stage in SWEEP.stages(config, plan, store) for item in stage.items]


def test_every_sweep_item_encodes_as_the_generic_path(tmp_path: Path) -> None:
    items = sweep_items(tmp_path)
    assert {type(i).__name__ for i in items} >= {"SweepItem", "VeqItem", "DepthItem"}
    assert any(getattr(i, "shown", None) is not None for i in items)  # the nested field
    tables = Tables()
    for item in items:
        key, raw, text = fast(tables, item)
        gkey, graw, gtext = generic(tables, item)
        assert (key, raw) == (gkey, graw)
        assert decoded(tables, text) == decoded(tables, gtext)


def test_a_store_reads_back_what_the_fast_path_wrote(tmp_path: Path) -> None:
    items = sweep_items(tmp_path)
    with RunStore.open(tmp_path / "run") as store:
        assert store.add_items(items) == len({i.key for i in items})
        assert store.add_items(items) == 0
    with RunStore.open(tmp_path / "run", read_only=True) as store:
        rows = store.conn.execute("SELECT key, kind, spec FROM items").fetchall()
        stored = {
            raw.hex(): store._tables.spec(kind, text, store.conn, store.path, raw.hex())
            for raw, kind, text in rows
        }
    assert len(stored) == len({i.key for i in items})
    for item in items:
        assert compact_json(stored[item.key]) == compact_json(item.to_json())


def test_a_rolled_back_write_forgets_the_encoders_parts(tmp_path: Path) -> None:
    items = sweep_items(tmp_path)[:5]
    with RunStore.open(tmp_path / "run") as store:

        def fail(*_: Any) -> None:
            raise RuntimeError("disk full")

        conn = store.conn
        store._conn = _Failing(conn, fail)  # type: ignore[assignment]
        with pytest.raises(RuntimeError, match="disk full"):
            store.add_items(items)
        store._conn = conn
        assert not store._tables.encoders
        assert not store._tables.part_ids
        assert store.add_items(items) == len(items)
    with RunStore.open(tmp_path / "run", read_only=True) as store:
        assert store.count_items("sweep") == len(items)


class _Failing:
    """A connection whose ``executemany`` fails (everything else passes through)."""

    def __init__(self, conn: Any, fail: Any) -> None:
        self._conn, self.executemany = conn, fail

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_a_secret_in_a_spec_is_redacted_by_the_generic_path() -> None:
    secret = "sk-test-0123456789abcdef"
    tables = Tables()
    tables.secrets = (secret,)
    item = Row(Shared("t", ()), secret, 1, True, (), None, Options({}), {}, None, None)
    key, (_, _, text) = tables.item_row(item)
    assert key == item.key
    assert secret not in text
    assert "***" in text


def test_one_key_with_two_specs_in_one_add_is_refused_with_nothing_written(tmp_path: Path) -> None:
    from clearsight.validate import InputError

    key = "ab" * 32
    with RunStore.open(tmp_path / "run") as store:
        with pytest.raises(InputError, match="given twice with different specs"):
            store.add_items([(key, "test.kind", {"a": 1}), (key, "test.kind", {"a": 2})])
        assert store.counts()["items"] == 0
        assert store.add_items([(key, "test.kind", {"a": 1}), (key, "test.kind", {"a": 1})]) == 1


def test_a_part_field_without_a_part_is_refused_as_the_generic_path_refuses_it() -> None:
    item = Row(None, "w", 1, True, (), None, Options({}), {}, None, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="is a part but holds"):
        item._key_of(item.to_json())
    with pytest.raises(TypeError, match="is a part but holds"):
        fast(Tables(), item)


def test_the_caches_stay_bounded_and_rows_stay_right(monkeypatch: pytest.MonkeyPatch) -> None:
    import clearsight.store._rows as spec_rows

    monkeypatch.setattr(spec_rows, "CACHE_LIMIT", 8)
    tables = Tables()
    shared = Shared("p", (1.0,))
    for n in range(40):  # fresh strings and tuples every item
        item = Row(shared, f"w{n}", n, False, (n, f"b{n}"), None, Options({}), {}, None, None)
        key, _, text = fast(tables, item)
        assert key == item._key_of(item.to_json())
        assert decoded(tables, text) == decoded(tables, generic(tables, item)[2])
    (encoder,) = tables.encoders.values()
    assert len(encoder._strings) <= 8
    assert len(encoder._objects) <= 8
