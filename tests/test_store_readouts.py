"""Typed read-outs (clearsight.store._readouts): a kind's read-out TypedDict registered on its
spec class, records read back as ``StoredRecord[T]`` with their read-outs unchanged, each stored
shape checked once against the type, and the refusals (a type that is not the kind's, a kind
without one, records that are not ok, stored read-outs of another shape)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import pytest

from clearsight.specs import Spec
from clearsight.store import Record, RunStore, readouts_of
from clearsight.store._readouts import ReadoutCheck
from clearsight.validate import InputError


class Scored(TypedDict):
    """The read-outs of a test kind: an answer, a confidence, and a note some records have."""

    answer: str | None
    confidence: float
    note: NotRequired[str]


@dataclass(frozen=True)
class ScoredItem(Spec):
    kind = "test.scored"
    readout_type = Scored

    n: int


@dataclass(frozen=True)
class PlainItem(Spec):
    kind = "test.plain"

    n: int


READOUTS: list[dict[str, Any]] = [
    {"answer": "A", "confidence": 0.9},
    {"answer": None, "confidence": 0.25, "note": "abstained"},
    {"answer": "B", "confidence": 0.5},
    {"answer": "C", "confidence": 1.0, "note": "sure"},
]


def _run(tmp_path: Path, readouts: list[dict[str, Any]] = READOUTS) -> Path:
    """A run with a scored item per read-out (ok records), a failed one and a plain item."""
    items = [ScoredItem(n) for n in range(len(readouts) + 1)]
    with RunStore.open(tmp_path / "run") as store:
        store.add_items([*items, PlainItem(0)])
        records = [
            Record(item.key, "ok", None, {"n": item.n}, r, 0.1)
            for item, r in zip(items, readouts, strict=False)
        ]
        records.append(Record.failed(items[-1].key, "boom"))
        records.append(Record(PlainItem(0).key, "ok", None, 0, {"x": 1}, 0.0))
        store.write_records(records)
    return tmp_path / "run"


def test_a_kinds_readout_type_is_registered_on_its_spec_class() -> None:
    assert readouts_of("test.scored") is Scored
    assert readouts_of("test.plain") is None
    assert readouts_of("no.such.kind") is None


def test_typed_records_are_the_untyped_records(tmp_path: Path) -> None:
    with RunStore.open(_run(tmp_path), read_only=True) as store:
        typed = list(store.iter_records("ok", kind="test.scored", readouts=Scored))
        plain = list(store.iter_records("ok", kind="test.scored"))
    assert typed == plain
    assert [r.readouts for r in typed] == READOUTS
    assert [r.readouts["confidence"] for r in typed] == [0.9, 0.25, 0.5, 1.0]
    assert [r.readouts.get("note") for r in typed] == [None, "abstained", None, "sure"]


def test_each_stored_shape_is_checked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[int] = []
    check = ReadoutCheck._check

    def counting(self: ReadoutCheck, head: int, *args: Any) -> None:
        checked.append(head)
        check(self, head, *args)

    monkeypatch.setattr(ReadoutCheck, "_check", counting)
    with RunStore.open(_run(tmp_path, READOUTS * 50), read_only=True) as store:
        records = list(store.iter_records("ok", kind="test.scored", readouts=Scored))
    assert len(records) == 200
    assert len(checked) == len(set(checked)) == 2  # with a note and without


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        ({"answer": "A"}, "missing confidence"),
        ({"answer": "A", "confidence": 1.0, "extra": 2}, "undeclared extra"),
        ({"confidence": 1.0, "extra": 2}, "missing answer; undeclared extra"),
    ],
)
def test_readouts_of_another_shape_are_refused_naming_the_record(
    tmp_path: Path, stored: dict[str, Any], message: str
) -> None:
    run = _run(tmp_path, [READOUTS[0], stored])
    with RunStore.open(run, read_only=True) as store:
        records = store.iter_records("ok", kind="test.scored", readouts=Scored)
        with pytest.raises(InputError, match=message) as caught:
            list(records)
    assert ScoredItem(1).key in str(caught.value)
    assert "Scored (item kind 'test.scored')" in str(caught.value)


def test_a_typed_read_of_the_wrong_kind_type_or_status_is_refused(tmp_path: Path) -> None:
    class Other(TypedDict):
        answer: str

    with RunStore.open(_run(tmp_path), read_only=True) as store:
        with pytest.raises(InputError, match="registered read-out type is Scored"):
            store.iter_records("ok", kind="test.scored", readouts=Other)
        with pytest.raises(InputError, match="registers none"):
            store.iter_records("ok", kind="test.plain", readouts=Scored)
        with pytest.raises(InputError, match="ok records of one kind"):
            store.iter_records("failed", kind="test.scored", readouts=Scored)  # type: ignore[call-overload]
        with pytest.raises(InputError, match="ok records of one kind"):
            store.iter_records(readouts=Scored)  # type: ignore[call-overload]


def test_a_readout_type_that_is_no_typeddict_is_refused() -> None:
    with pytest.raises(TypeError, match="must be a TypedDict"):

        @dataclass(frozen=True)
        class Bad(Spec):
            kind = "test.bad"
            readout_type = dict  # type: ignore[assignment]


@pytest.mark.slow
def test_the_type_checker_knows_a_typed_records_readouts(tmp_path: Path) -> None:
    """mypy reads ``StoredRecord[Scored].readouts["confidence"]`` as a float and refuses a key
    the type does not declare; an untyped record's read-outs stay a mapping."""
    code = textwrap.dedent(
        """
        from typing import TypedDict
        from clearsight.store import RunStore

        class Scored(TypedDict):
            answer: str | None
            confidence: float

        def read(store: RunStore) -> None:
            for r in store.iter_records("ok", kind="k", readouts=Scored):
                reveal_type(r.readouts["confidence"])
                r.readouts["nope"]
            for plain in store.iter_records("ok", kind="k"):
                reveal_type(plain.readouts)
        """
    )
    (tmp_path / "typed.py").write_text(code)
    src = Path(__file__).resolve().parents[1] / "src"
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-warn-return-any", "--no-incremental"]
    out = subprocess.run(
        [*mypy, "typed.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"MYPYPATH": str(src), "PATH": "/usr/bin:/bin"},
        timeout=600,
    ).stdout
    assert 'typed.py:11: note: Revealed type is "float"' in out
    assert 'typed.py:12: error: TypedDict "Scored" has no key "nope"' in out
    assert 'typed.py:14: note: Revealed type is "typing.Mapping[str, Any]"' in out
    assert "Found 1 error in 1 file" in out  # nothing else: the store's own types hold


def _protocol_kinds() -> set[str]:
    """Every item kind a spec class of the protocol packages names (all their modules
    imported, so a spec class outside the modules of ``clearsight.specs.SPEC_MODULES`` counts
    too)."""
    import importlib
    import pkgutil

    import clearsight

    for found in pkgutil.walk_packages(clearsight.__path__, "clearsight."):
        if found.name.split(".")[1] in ("sweep", "grounding", "probe", "verify"):
            importlib.import_module(found.name)

    def below(cls: type[Spec]) -> list[type[Spec]]:
        return [c for s in cls.__subclasses__() for c in (s, *below(s))]

    return {
        c.__dict__["kind"]
        for c in below(Spec)
        if c.__module__.startswith("clearsight.") and "kind" in c.__dict__
    }


def test_every_item_kind_of_every_protocol_registers_its_typed_readouts() -> None:
    """Each protocol's and sub-protocol's item kinds declare a TypedDict read-out, found from a
    fresh interpreter by kind alone (``readouts_of`` imports the spec modules it needs)."""
    kinds = _protocol_kinds()
    assert {k.split(".")[0] for k in kinds} == {
        "sweep",
        "grounding",
        "probe",
        "verify",
        "tgs_bench",
    }
    code = (
        "import sys; from typing_extensions import is_typeddict;"
        "from clearsight.store import readouts_of;"
        "print(' '.join(k for k in sys.argv[1:] if not is_typeddict(readouts_of(k))))"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run(
        [sys.executable, "-c", code, *sorted(kinds)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
        timeout=300,
        check=True,
    ).stdout
    assert out.split() == [], f"item kinds without a typed read-out: {out.strip()}"
