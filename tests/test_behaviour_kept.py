"""Records, keys and reports of every protocol are kept across a refactoring: three small runs
(the sweep, the probe and trajectory grounding) made again with today's code equal what the
code made when ``tests/fixtures/kept/kept.json.gz`` was written (:mod:`fixtures.kept_runs`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fixtures.kept_runs import kept_of, load_kept, make_runs, same_cell, typed_readouts


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_runs(tmp_path_factory.mktemp("kept"))


@pytest.fixture(scope="module")
def now(runs: dict[str, Path]) -> dict[str, Any]:
    return kept_of(runs)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["sweep", "probe", "grounding"])
def test_records_are_kept(protocol: str, now: dict[str, Any]) -> None:
    kept, made = load_kept()[protocol]["records"], now[protocol]["records"]
    assert sorted(made) == sorted(kept), "item keys changed"
    changed = sorted(k for k in kept if made[k] != kept[k])
    assert not changed, f"{len(changed)} of {len(kept)} records changed, e.g. {changed[:3]}"


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["sweep", "probe", "grounding"])
def test_reported_numbers_are_kept(protocol: str, now: dict[str, Any]) -> None:
    kept, made = load_kept()[protocol]["summary"], now[protocol]["summary"]
    assert made[0] == kept[0], "summary.csv's columns changed"
    assert len(made) == len(kept), "summary.csv's rows changed"
    differ = [
        (i, column, a, b)
        for i, (kept_row, made_row) in enumerate(zip(kept[1:], made[1:], strict=True))
        for column, a, b in zip(kept[0], kept_row, made_row, strict=True)
        if not same_cell(a, b)
    ]
    assert not differ, f"{len(differ)} cells of summary.csv changed, e.g. {differ[:3]}"


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["sweep", "probe", "grounding"])
def test_every_stored_readout_is_of_its_kind_s_type(protocol: str, runs: dict[str, Path]) -> None:
    """Each kind's ok records of the run read back typed (every stored shape of read-outs has
    the keys its kind's TypedDict declares), and every ok record is read so."""
    from clearsight.store import RunStore

    typed = typed_readouts(runs[protocol])
    with RunStore.open(runs[protocol], read_only=True) as store:
        assert sum(typed.values()) == store.count_records(status="ok") > 0
    assert all(n > 0 for n in typed.values())


def test_the_fixture_keeps_something() -> None:
    """The fixture is not empty: every protocol has records and reported rows (a header and
    at least two rows)."""
    kept = load_kept()
    sizes = {p: (len(kept[p]["records"]), len(kept[p]["summary"])) for p in kept if p != "made_at"}
    assert sizes == {"sweep": (303, 37), "probe": (8, 3), "grounding": (72, 12)}
    assert Path(__file__).parent.joinpath("fixtures", "kept", "kept.json.gz").is_file()
