"""Records, keys and reports of every protocol are kept across a refactoring: three small runs
(the sweep, the probe and trajectory grounding) made again with today's code equal what the
code made when ``tests/fixtures/kept/kept.json.gz`` was written (:mod:`fixtures.kept_runs`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures.kept_runs import (
    RECORD_ABS,
    RECORD_REL,
    differences,
    kept_of,
    load_kept,
    make_runs,
    same_cell,
    typed_readouts,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_runs(tmp_path_factory.mktemp("kept"))


@pytest.fixture(scope="module")
def now(runs: dict[str, Path]) -> dict[str, Any]:
    return kept_of(runs)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["sweep", "probe", "grounding"])
def test_records_are_kept(protocol: str, now: dict[str, Any]) -> None:
    """Every record's status, raw output and read-outs equal the kept ones: floats within
    ``RECORD_REL`` relative (another CPU or patch release moves their last bits), everything
    else exactly."""
    kept, made = load_kept()[protocol]["records"], now[protocol]["records"]
    assert sorted(made) == sorted(kept), "item keys changed"
    changed = {k: d for k in sorted(kept) if (d := differences(kept[k], made[k]))}
    example = next(iter(changed.items()), None)
    assert not changed, (
        f"{len(changed)} of {len(kept)} records changed beyond {RECORD_REL:g} relative, "
        f"e.g. {example}"
    )


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
    # the sweep's 54 rows: 36 of its fog and water crossings, 18 of ImageNet-C fog's on its grid
    assert sizes == {"sweep": (303, 55), "probe": (8, 3), "grounding": (72, 12)}
    assert Path(__file__).parent.joinpath("fixtures", "kept", "kept.json.gz").is_file()


#: Another CPU's kernels, as far as one machine can show them: torch's portable (non-SIMD)
#: kernels, numba compiled for a generic x86-64 and OpenBLAS's oldest kernel set.
OTHER_CPU = {
    "ATEN_CPU_CAPABILITY": "default",
    "NUMBA_CPU_NAME": "generic",
    "OPENBLAS_CORETYPE": "Prescott",
}


@pytest.mark.slow
def test_records_made_with_another_cpus_kernels_are_kept(tmp_path: Path) -> None:
    """The fixture holds on a machine whose kernels differ from the one that wrote it: the three
    runs made in a subprocess with other SIMD kernels differ in last bits (220 sweep and 60
    grounding records did, up to 9.8e-6 relative) and still compare equal."""
    script = (
        "import json, sys; from pathlib import Path; "
        "from fixtures.kept_runs import kept_of, make_runs; "
        "json.dump(kept_of(make_runs(Path(sys.argv[1]))), sys.stdout)"
    )
    env = {**os.environ, **OTHER_CPU}
    env["PYTHONPATH"] = os.pathsep.join(
        str(Path(__file__).parent.parent / d) for d in ("src", "tests")
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    made, kept = json.loads(done.stdout), load_kept()
    for protocol in ("sweep", "probe", "grounding"):
        records = kept[protocol]["records"]
        changed = [k for k in records if differences(records[k], made[protocol]["records"][k])]
        assert not changed, f"{protocol}: {len(changed)} records changed, e.g. {changed[:2]}"


def test_differences_compare_floats_within_the_tolerance_and_the_rest_exactly() -> None:
    """Floats within RECORD_REL relative (or RECORD_ABS near 0) are the same; beyond, or any
    change of a text, an integer, a boolean, a key or a length, is a difference."""
    kept = {"p": [0.25, 1e-9], "n": 3, "ok": True, "t": "A", "x": None}
    assert differences(kept, kept) == []
    near = {
        "p": [0.25 * (1 + 0.5 * RECORD_REL), 1e-9 + 0.5 * RECORD_ABS],
        "n": 3,
        "ok": True,
        "t": "A",
        "x": None,
    }
    assert differences(kept, near) == []
    assert differences(kept, {**kept, "p": [0.25 * (1 + 2 * RECORD_REL), 1e-9]}) == [
        f".p[0]: 0.25 != {0.25 * (1 + 2 * RECORD_REL)}"
    ]
    assert differences(kept, {**kept, "n": 4}) == [".n: 3 != 4"]
    assert differences(kept, {**kept, "ok": 1}) == [".ok: True != 1"]
    assert differences(kept, {**kept, "t": "B"}) == [".t: 'A' != 'B'"]
    assert differences(kept, {**kept, "x": 0.0}) == [".x: None != 0.0"]
    assert differences(kept, {**kept, "p": [0.25]}) == [".p: length 2 != 1"]
    assert differences(kept, {"p": [0.25, 1e-9]}) == [": keys ['n', 'ok', 't', 'x']"]
    assert differences([float("nan")], [float("nan")]) == []
