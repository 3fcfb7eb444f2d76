"""trackio in its local mode: what a sweep sent while it ran (``--tracker trackio``) read back
through trackio's own storage (``SQLiteStorage``) equals the analysis's values to the float.

trackio reads ``TRACKIO_DIR`` once, when it is imported: tests/track/conftest.py points it at
a fresh folder before any test imports trackio."""

from __future__ import annotations

from pathlib import Path

import pytest

from clearsight.track.to_trackio import PROJECT
from fixtures.trackers import assert_params, expected, run_sweep_cli

#: Why the test compares floats exactly (tests/conftest.py).
SAME = "the tracker holds the floats the report's analysis computed; the test's is one more"


@pytest.mark.exact_floats(SAME)
def test_a_sweep_sent_while_it_runs_reads_back_equal(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    from trackio.sqlite_storage import SQLiteStorage

    run_dir = tmp_path / "sweep-trackio"
    output = run_sweep_cli(run_dir, "--tracker", "trackio")
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
            if key not in ("step", "timestamp"):
                logged.setdefault(key, {})[row["step"]] = value
    assert {k: logged[k] for k in want.steps} == want.steps
    assert {k: logged[k][0] for k in want.summary} == want.summary  # the summary: step 0
    units = logged["records_ok"]
    assert sorted(units) == list(range(1, len(units) + 1))  # one log per unit
    assert units[len(units)] == want.ok
    links = SQLiteStorage.get_run_artifacts(PROJECT, run_dir.name, None)
    names = {link["name"] for link in links["output"]}
    assert names == {"report.html", "summary.md", "summary.csv"}
