"""trackio in its local mode: what a sweep sent while it ran (``--tracker trackio``) read back
through trackio's own storage (``SQLiteStorage``) equals the analysis's values to the float,
and its ``trackio.Table`` of the sample holds the face's rows with the images its ``shown``
draws, for a sweep, a grounding and a probe run (a protocol whose face shows none: its rows
only).

trackio reads ``TRACKIO_DIR`` once, when it is imported: tests/track/conftest.py points it at
a fresh folder before any test imports trackio."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from clearsight import driver, faces
from clearsight.cli import app
from clearsight.faces.face import Row
from clearsight.faces.verifying import Reaskable
from clearsight.store import RunStore
from clearsight.track.names import PROJECT
from clearsight.track.session import sampled_rows
from fixtures.trackers import (
    assert_params,
    assert_sample,
    copied_run,
    expected,
    run_sweep_cli,
    runner,
)
from test_fourth_protocol import ITEM_KIND, KIND, TOY, TOY_FACE, ToyConfig

#: Why the test compares floats exactly (tests/conftest.py).
SAME = "the tracker holds the floats the report's analysis computed; the test's is one more"


def _table(run_dir: Path) -> list[dict[str, Any]]:
    """The rows of the run's logged ``sample`` table, as trackio stored them."""
    from trackio.sqlite_storage import SQLiteStorage
    from trackio.table import Table

    logged = [row.get("sample") for row in SQLiteStorage.get_logs(PROJECT, run_dir.name)]
    (table,) = [t for t in logged if t is not None]
    assert table["_type"] == Table.TYPE
    rows: list[dict[str, Any]] = table["_value"]
    return rows


@pytest.mark.exact_floats(SAME)
def test_a_sweep_sent_while_it_runs_reads_back_equal(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    from trackio.sqlite_storage import SQLiteStorage
    from trackio.utils import MEDIA_DIR

    run_dir = tmp_path / "sweep-trackio"
    output = run_sweep_cli(run_dir, "--tracker", "trackio", "--tracker-sample", "7")
    assert "warning" not in output
    want = expected(run_dir)
    assert run_dir.name in SQLiteStorage.get_runs(PROJECT)
    config = SQLiteStorage.get_run_config(PROJECT, run_dir.name)
    assert config is not None
    assert_params({k: v for k, v in config.items() if not k.startswith("_")}, want.manifest)
    rows = SQLiteStorage.get_logs(PROJECT, run_dir.name)
    logged: dict[str, dict[int, float]] = {}
    for row in rows:
        for key, value in row.items():
            if key not in ("step", "timestamp", "sample"):
                logged.setdefault(key, {})[row["step"]] = value
    assert {k: logged[k] for k in want.steps} == want.steps
    assert {k: logged[k][0] for k in want.summary} == want.summary  # the summary: step 0
    units = logged["records_ok"]
    assert sorted(units) == list(range(1, len(units) + 1))  # one log per unit
    assert units[len(units)] == want.ok
    links = SQLiteStorage.get_run_artifacts(PROJECT, run_dir.name, None)
    names = {link["name"] for link in links["output"]}
    assert names == {"report.html", "summary.md", "summary.csv"}
    rows = _table(run_dir)
    cells = [row.pop("image") for row in rows]
    assert all(cell["_type"] == "trackio.image" for cell in cells)
    assert_sample(run_dir, 7, rows, [MEDIA_DIR / cell["file_path"] for cell in cells])


@pytest.mark.parametrize("which", ["visual_grounding_run", "probe_run"])
def test_a_grounding_and_a_probe_run_send_their_sample(
    which: str, request: pytest.FixtureRequest, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """``clearsight track`` of a grounding run (chart problems and a text one: its rows
    without an image) and of a probe run (its direct answers, each with its sensor's image)."""
    from trackio.utils import MEDIA_DIR

    run_dir = copied_run(request.getfixturevalue(which), tmp_path)
    result = runner.invoke(app, ["track", str(run_dir), "--to", "trackio"])
    assert result.exit_code == 0, result.output
    rows = _table(run_dir)
    cells = [row.pop("image") for row in rows]
    files = [None if cell is None else MEDIA_DIR / cell["file_path"] for cell in cells]
    assert_sample(run_dir, 64, rows, files)
    assert f"a table of {len(rows)} items" in result.output


def test_trackio_colon_project_sends_the_run_to_that_project(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """``--to trackio:PROJECT``: the run and its card's number (5 of 6 right) in that project
    of trackio's storage, none in the default one."""
    from trackio.sqlite_storage import SQLiteStorage

    run_dir = tmp_path / "toy-in-a-project"
    driver.run(TOY, ToyConfig(), run_dir, driver.Execution(progress=False))
    faces.register(KIND, TOY_FACE)  # the registry is restored after each test (conftest)
    result = runner.invoke(app, ["track", str(run_dir), "--to", "trackio:my-study_2"])
    assert result.exit_code == 0, result.output
    assert f"sent {run_dir} to trackio:my-study_2: " in result.output
    assert SQLiteStorage.get_runs("my-study_2") == [run_dir.name]
    assert run_dir.name not in SQLiteStorage.get_runs(PROJECT)
    (logged,) = [r for r in SQLiteStorage.get_logs("my-study_2", run_dir.name) if r["step"] == 0]
    assert logged["toy accuracy"] == pytest.approx(5 / 6, abs=1e-12)


def _keyed_rows(run_dir: Path, keys: Collection[str] | None = None) -> Iterator[Row]:
    """The toy run's rows (those of ``keys``), each with its item's key and number."""
    with RunStore.open(run_dir, read_only=True) as store:
        for rec in store.iter_records("ok", kind=ITEM_KIND, raw=False):
            if keys is None or rec.key in keys:
                yield {"key": rec.key, "n": rec.spec["n"], **rec.readouts}


def _parity(spec: Mapping[str, object]) -> tuple[object, ...]:
    """The toy's strata: odd and even numbers."""
    return (int(str(spec["n"])) % 2,)


def _never(*args: Any) -> Any:
    raise AssertionError("the sample draws items; it re-asks none")


def test_a_face_that_shows_no_image_sends_its_rows_without_one(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """The toy protocol (tests/test_fourth_protocol.py) with keyed rows and strata (odd and
    even numbers) and no ``shown``: ``clearsight track --sample 3`` sends three of its six
    rows, both strata drawn, each the face's own row, and no image column."""
    run_dir = tmp_path / "toy-trackio"
    driver.run(TOY, ToyConfig(), run_dir, driver.Execution(progress=False))
    strata = Reaskable(ITEM_KIND, _parity, _never, _never, _never, _never)
    clean_env.setattr(faces, "_FACES", dict(faces._FACES))
    faces.register(KIND, replace(TOY_FACE, rows=_keyed_rows, reask=strata))
    result = runner.invoke(app, ["track", str(run_dir), "--to", "trackio", "--sample", "3"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].endswith("a table of 3 items")
    rows = _table(run_dir)
    want = {row["key"]: row for row in _keyed_rows(run_dir)}
    assert len(want) == 6
    assert [row["key"] for row in rows] == [s.row["key"] for s in sampled_rows(run_dir, 3)]
    assert [want[row["key"]] for row in rows] == rows  # no image column
    assert {row["n"] % 2 for row in rows} == {0, 1}
