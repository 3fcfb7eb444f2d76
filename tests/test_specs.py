"""The one key recipe of typed item specs (clearsight.specs), checked against a hash computed
independently from the canonical JSON with hashlib."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from pathlib import PurePosixPath
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clearsight.specs import OMIT_NONE, Part, Spec, json_key, spec_class, to_plain


def sha(obj: Any) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces), written out here on purpose."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Shared(Part):
    text: str
    letters: tuple[str, ...]


@dataclass(frozen=True)
class Inner:
    path: PurePosixPath
    box: tuple[int, int]


@dataclass(frozen=True)
class Asked(Spec):
    kind: ClassVar[str] = "test.asked"
    parts: ClassVar[tuple[str, ...]] = ("shared",)

    shared: Shared
    inner: Inner
    level: float | None
    options: dict[str, Any]
    extra: str | None = field(default=None, metadata=OMIT_NONE)


def asked(**kw: Any) -> Asked:
    base: dict[str, Any] = {
        "shared": Shared("What is boxed?", ("A", "B")),
        "inner": Inner(PurePosixPath("/data/x.jpg"), (1, 2)),
        "level": None,
        "options": {"t": (0.5, 1)},
    }
    base.update(kw)
    return Asked(**base)


def test_json_form_is_plain_data_and_omits_what_is_marked() -> None:
    item = asked()
    assert item.to_json() == {
        "shared": {"text": "What is boxed?", "letters": ["A", "B"]},
        "inner": {"path": "/data/x.jpg", "box": [1, 2]},
        "level": None,  # None kept: not marked
        "options": {"t": [0.5, 1]},
    }
    assert asked(extra="e").to_json()["extra"] == "e"
    assert to_plain([(1, 2), {"a": PurePosixPath("p")}]) == [[1, 2], {"a": "p"}]


def test_key_is_the_hash_of_kind_and_payload_with_parts_by_their_hash() -> None:
    item = asked(extra="e")
    stored = item.to_json()
    payload = {**stored, "shared": sha(stored["shared"])}
    assert item.key == sha(["test.asked", payload])
    assert json_key("test.asked", json.loads(json.dumps(stored))) == item.key
    # without parts a kind's key hashes the whole spec
    assert json_key("no.such.kind", {"a": [1]}) == sha(["no.such.kind", {"a": [1]}])


def test_every_field_and_the_kind_enter_the_key() -> None:
    base = asked()
    changed = [
        asked(shared=Shared("What is boxed?", ("A", "C"))),
        asked(inner=Inner(PurePosixPath("/data/y.jpg"), (1, 2))),
        asked(level=0.0),
        asked(options={"t": (0.5, 2)}),
        asked(extra="e"),
    ]
    keys = {base.key, *(c.key for c in changed)}
    assert len(keys) == 1 + len(changed)

    class Other(Asked):
        kind = "test.other"

    assert Other(**{f.name: getattr(base, f.name) for f in fields(base)}).key != base.key
    assert asked().key == base.key  # a pure function of the content


def test_a_part_is_encoded_once_and_shared() -> None:
    part = Shared("q", ("A",))
    assert part.to_json() is part.to_json()
    assert part.digest == sha({"text": "q", "letters": ["A"]})
    assert asked(shared=part).to_json()["shared"] is part.json


def test_a_parts_field_must_hold_a_part() -> None:
    with pytest.raises(TypeError, match="is a part"):
        _ = asked(shared={"text": "q"}).key


def test_a_kind_has_one_spec_class() -> None:
    assert spec_class("test.asked") is Asked
    with pytest.raises(TypeError, match="already the spec"):

        class Clash(Spec):
            kind = "test.asked"


def test_the_protocols_spec_classes_are_found_by_kind() -> None:
    from clearsight.sweep.specs import SweepItem, VeqItem

    assert spec_class("sweep") is SweepItem
    assert spec_class("sweep.veq") is VeqItem
    assert spec_class("nothing") is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(text=st.text(), level=st.none() | st.floats(allow_nan=False), options=json_values)
def test_stored_json_gives_back_the_key(text: str, level: float | None, options: Any) -> None:
    item = asked(shared=Shared(text, ("A",)), level=level, options={"o": options})
    stored = json.loads(json.dumps(item.to_json()))
    assert json_key(item.kind, stored) == item.key


def test_shared_options_are_stored_as_the_mapping_and_keyed_by_its_hash() -> None:
    from clearsight.specs import Options

    @dataclass(frozen=True)
    class WithOptions(Spec):
        kind: ClassVar[str] = "test.options"
        parts: ClassVar[tuple[str, ...]] = ("options",)
        options: Options

    options = Options({"temperature": 0.5, "stop": ("\n",)})
    item = WithOptions(options)
    assert item.to_json() == {"options": {"temperature": 0.5, "stop": ["\n"]}}
    assert item.key == sha(["test.options", {"options": sha({"temperature": 0.5, "stop": ["\n"]})}])
    assert json_key("test.options", item.to_json()) == item.key
