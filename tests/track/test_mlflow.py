"""MLflow: a real ``mlflow server`` on 127.0.0.1 with a SQLite backend store, started here; what
a sweep sent while it ran (``--tracker mlflow``) and what ``clearsight track`` sent later read
back through ``MlflowClient`` equal the analysis's values to the float; the table of the
sample, read back with ``MlflowClient.load_table`` and its images downloaded, holds the face's
rows and images, for a sweep, a grounding and a probe run."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from mlflow import MlflowClient
from mlflow.entities import Run

from clearsight.cli import app
from fixtures.trackers import (
    Expected,
    assert_params,
    assert_sample,
    copied_run,
    expected,
    free_port,
    mlflow_server,
    pixels,
    run_sweep_cli,
    runner,
)


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live ``mlflow server`` (SQLite backend store, local artifact store), ended after."""
    with mlflow_server(tmp_path_factory.mktemp("mlflow")) as uri:
        yield uri


def _only_run(client: MlflowClient, experiment: str) -> Run:
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    runs = client.search_runs([found.experiment_id])
    assert len(runs) == 1
    return runs[0]


def _assert_equal(
    client: MlflowClient, run: Run, want: Expected, run_dir: Path, table: bool = False
) -> None:
    """Parameters, every step metric at its step, the summary metrics and the report files
    (and, with ``table``, the sample's table and its images)."""
    rid = run.info.run_id
    assert run.info.status == "FINISHED"
    assert run.info.run_name == run_dir.name
    assert_params(run.data.params, want.manifest)
    for key, by_step in want.steps.items():
        history = client.get_metric_history(rid, key)
        assert {m.step: m.value for m in history} == by_step, key
        assert len(history) == len(by_step), key
    summary = {k: v for k, v in run.data.metrics.items() if k in want.summary}
    assert summary == want.summary
    assert len(want.summary) >= 20  # V*_acc, three W, AURC, two ECE, clean accuracy, bounds
    files = {a.path for a in client.list_artifacts(rid)}
    sample = {"sample.parquet", "table_images"} if table else set()
    assert files == {"report.html", "summary.md", "summary.csv"} | sample
    got = Path(client.download_artifacts(rid, "summary.csv", str(run_dir.parent)))
    assert got.read_bytes() == (run_dir / "summary.csv").read_bytes()


#: Why the tests compare floats exactly (tests/conftest.py).
SAME = (
    "the tracker holds the floats the report's analysis computed; the test's: the same computation"
)


def _table(
    client: MlflowClient, run: Run, into: Path
) -> tuple[list[dict[str, Any]], list[Path | None]]:
    """The sample's table read back as MLflow reads its tables, and each row's image
    downloaded into ``into`` (None: the row has none)."""
    rid = run.info.run_id
    frame = client.load_table(run.info.experiment_id, "sample.parquet", [rid])
    rows = [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]
    cells = [row.pop("image") for row in rows]
    assert all(cell is None or cell["type"] == "image" for cell in cells)
    into.mkdir()
    images = [
        None if c is None else Path(client.download_artifacts(rid, c["filepath"], str(into)))
        for c in cells
    ]
    for cell, image in zip(cells, images, strict=True):
        if cell is not None and image is not None:
            small = Path(client.download_artifacts(rid, cell["compressed_filepath"], str(into)))
            _assert_thumbnail(pixels(image.read_bytes()), small)
    return rows, images


def _assert_thumbnail(full: npt.NDArray[np.uint8], small: Path) -> None:
    """``small`` is MLflow's small copy of the image ``full``: a WebP at most 256 pixels on its
    longer side, the aspect kept, whose pixels are ``full``'s averaged over each area (to
    within lossy WebP's loss, quality 80 with its colour at half resolution: a mean absolute
    difference under 8 of 255, where another image of the run differs by tens)."""
    from PIL import Image

    with Image.open(small) as opened:
        assert opened.format == "WEBP"
        got = np.asarray(opened.convert("RGB"))
    h, w = full.shape[:2]
    assert max(got.shape[:2]) == 256
    assert abs(got.shape[0] / got.shape[1] - h / w) < 0.02
    want = cv2.resize(full, (got.shape[1], got.shape[0]), interpolation=cv2.INTER_AREA)
    assert np.abs(got.astype(float) - want).mean() < 8.0


@pytest.mark.exact_floats(SAME)
def test_a_sweep_sent_while_it_runs_reads_back_equal(
    mlflow_uri: str, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("MLFLOW_TRACKING_URI", mlflow_uri)
    clean_env.setenv("MLFLOW_EXPERIMENT_NAME", "while-it-runs")  # MLflow's own setting
    run_dir = tmp_path / "sweep-a"
    output = run_sweep_cli(run_dir, "--tracker", "mlflow")
    assert "warning" not in output
    want = expected(run_dir)
    client = MlflowClient(mlflow_uri)
    run = _only_run(client, "while-it-runs")
    _assert_equal(client, run, want, run_dir, table=True)
    rows, images = _table(client, run, tmp_path / "downloaded")
    assert_sample(run_dir, 64, rows, images)  # the default: every item of this small sweep
    units = client.get_metric_history(run.info.run_id, "records_ok")
    assert [m.step for m in units] == list(range(1, len(units) + 1))  # one call per unit
    assert units[-1].value == want.ok == 26
    assert [m.value for m in client.get_metric_history(run.info.run_id, "records_failed")][-1] == 0


@pytest.mark.exact_floats(SAME)
def test_a_tracker_that_is_down_warns_once_and_track_sends_the_run_later(
    mlflow_uri: str, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """A sweep with MLflow down (MLflow's retry settings clearsight's: the user set none)
    warns once and its records are an untracked sweep's; ``track`` fails while the server is
    down and sends the run once it is up."""
    clean_env.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{free_port()}")  # nobody
    run_dir = tmp_path / "sweep-b"
    alone = tmp_path / "sweep-alone"
    output = run_sweep_cli(run_dir, "--tracker", "mlflow")
    assert output.count("warning:") == 1
    warning = output[output.index("warning:") :].splitlines()[0]
    assert warning.startswith("warning: tracker mlflow dropped (MlflowException: ")
    assert warning.endswith("the run goes on, `clearsight track RUN --to mlflow` sends it later")
    run_sweep_cli(alone)  # the same sweep untracked: the same records
    want, untracked = expected(run_dir), expected(alone)
    assert (want.ok, want.steps, want.summary) == (untracked.ok, untracked.steps, untracked.summary)

    refused = runner.invoke(app, ["track", str(run_dir), "--to", "mlflow"])  # still down
    assert refused.exit_code == 1
    assert refused.output.count("warning: tracker mlflow dropped") == 1
    assert refused.output.strip().splitlines()[-1] == f"error: {run_dir} was not sent to mlflow"

    clean_env.setenv("MLFLOW_TRACKING_URI", mlflow_uri)
    clean_env.setenv("MLFLOW_EXPERIMENT_NAME", "sent-later")
    result = runner.invoke(app, ["track", str(run_dir), "--to", "mlflow", "--sample", "0"])
    assert result.exit_code == 0, result.output
    assert f"sent {run_dir} to mlflow:" in result.output
    assert result.output.strip().endswith("a table of 0 items")
    client = MlflowClient(mlflow_uri)
    _assert_equal(client, _only_run(client, "sent-later"), want, run_dir)  # --sample 0: none


@pytest.mark.parametrize("which", ["visual_grounding_run", "probe_run"])
def test_a_grounding_and_a_probe_run_send_their_sample(
    which: str,
    request: pytest.FixtureRequest,
    mlflow_uri: str,
    tmp_path: Path,
    clean_env: pytest.MonkeyPatch,
) -> None:
    """``clearsight track`` of a grounding run (its chart problems' rows with an image, its
    text problem's without: the table logged in parts, in the sample's order) and of a probe
    run (its direct answers, each with its sensor's image)."""
    run_dir = copied_run(request.getfixturevalue(which), tmp_path)
    clean_env.setenv("MLFLOW_TRACKING_URI", mlflow_uri)
    clean_env.setenv("MLFLOW_EXPERIMENT_NAME", f"sample-{which}")
    result = runner.invoke(app, ["track", str(run_dir), "--to", "mlflow"])
    assert result.exit_code == 0, result.output
    client = MlflowClient(mlflow_uri)
    rows, images = _table(client, _only_run(client, f"sample-{which}"), tmp_path / "downloaded")
    assert_sample(run_dir, 64, rows, images)
    assert any(image is not None for image in images)


@pytest.mark.parametrize("users", [{}, {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}])
def test_a_down_server_is_one_warning_within_seconds_and_the_users_settings_are_kept(
    users: dict[str, str],
    tmp_path: Path,
    clean_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A tracker run begun (a unit committed) against a port nobody listens on, MLflow's own
    retry settings not set (or one set by the user, kept): the sender gives up, with one
    warning, in seconds (MLflow's defaults: minutes), and the session ends, the sample's table
    not even drawn. The settings are the trackers' process's: this process's environment is
    left as it was."""
    import os
    import time

    import mlflow  # imported before the clock starts: its import is no wait for a server

    from clearsight import driver
    from clearsight.track import open_session
    from clearsight.track import session as session_module
    from clearsight.track.to_mlflow import QUICK_HTTP
    from test_fourth_protocol import TOY, ToyConfig

    run_dir = tmp_path / "toy"
    driver.run(TOY, ToyConfig(), run_dir, driver.Execution(progress=False))
    clean_env.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{free_port()}")  # nobody
    for name, value in users.items():
        clean_env.setenv(name, value)
    assert mlflow.get_tracking_uri().endswith(os.environ["MLFLOW_TRACKING_URI"][7:])
    drawn: list[int] = []
    clean_env.setattr(session_module, "sampled_rows", lambda *a, **k: drawn.append(1) or [])
    session = open_session(["mlflow"], run_dir, 4)
    started = time.monotonic()
    session.committed([])  # begins the tracker's run
    session.ran()  # the table, queued after the begin that fails: never drawn
    session.end(ok=True)  # waits for the sender
    waited = time.monotonic() - started
    assert session.dropped == ["mlflow"]
    assert session.live == []
    assert drawn == []  # nothing drawn for no tracker
    assert waited < 20, waited  # 2 retries 1 s and 2 s apart, each refused at once
    err = capsys.readouterr().err
    assert err.count("warning: tracker mlflow dropped") == 1
    assert {name: os.environ.get(name) for name in QUICK_HTTP} == {
        name: users.get(name) for name in QUICK_HTTP
    }


@pytest.mark.parametrize("users", [{}, {"MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}])
def test_the_mlflow_sink_sets_the_quick_http_settings_the_user_did_not(
    users: dict[str, str], clean_env: pytest.MonkeyPatch
) -> None:
    """Made (in the trackers' process), the MLflow sink sets :data:`QUICK_HTTP` where the
    user set nothing and keeps what the user set."""
    import os

    from clearsight.track.to_mlflow import QUICK_HTTP, MlflowSink

    for name, value in users.items():
        clean_env.setenv(name, value)
    clean_env.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{free_port()}")  # not asked
    MlflowSink()
    assert {name: os.environ[name] for name in QUICK_HTTP} == {**QUICK_HTTP, **users}


def test_a_missing_extra_is_one_line_naming_it_and_nothing_is_written(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setitem(sys.modules, "mlflow", None)  # as where the package is not installed
    run_dir = tmp_path / "never"
    result = runner.invoke(app, ["sweep", "--out", str(run_dir), "--tracker", "mlflow"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "error: the mlflow tracker is not installed: pip install 'clearsight[mlflow]'"
    )
    assert not run_dir.exists()
    track = runner.invoke(app, ["track", str(tmp_path), "--to", "mlflow"])
    assert track.exit_code == 2
    assert "pip install 'clearsight[mlflow]'" in track.output


def test_the_toy_fourth_protocol_is_tracked_through_its_face(
    mlflow_uri: str, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """A protocol written outside the package (tests/test_fourth_protocol.py), registered:
    ``clearsight track`` sends its card's number (5 of 6 right) and its report's files."""
    from clearsight import driver
    from clearsight.faces import register
    from test_fourth_protocol import TOY, TOY_FACE, ToyConfig

    run_dir = tmp_path / "toy"
    driver.run(TOY, ToyConfig(), run_dir, driver.Execution(progress=False))
    register("toy", TOY_FACE)
    clean_env.setenv("MLFLOW_TRACKING_URI", mlflow_uri)
    clean_env.setenv("MLFLOW_EXPERIMENT_NAME", "toy")
    result = runner.invoke(app, ["track", str(run_dir), "--to", "mlflow"])
    assert result.exit_code == 0, result.output
    client = MlflowClient(mlflow_uri)
    run = _only_run(client, "toy")
    assert run.data.metrics["toy accuracy"] == pytest.approx(5 / 6, abs=1e-12)
    assert run.data.metrics["toy accuracy/n"] == 6
    assert run.data.params["protocol"] == "toy"
    files = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert files == {"report.html", "summary.md", "summary.csv"}


def test_a_run_the_trackers_process_was_not_told_to_end_ends_as_failed(
    mlflow_uri: str, clean_env: pytest.MonkeyPatch
) -> None:
    """The trackers' process, its parent gone (the socket closed) without ending the run it
    began: it ends the run as failed, with what it had logged, and exits."""
    from clearsight.track.content import StepMetric
    from clearsight.track.process import TrackerProcess

    clean_env.setenv("MLFLOW_TRACKING_URI", mlflow_uri)
    clean_env.setenv("MLFLOW_EXPERIMENT_NAME", "parent-gone")
    process = TrackerProcess.start()
    assert process.call(("begin", ("orphan", {"a": "1"}), ("mlflow",))) == {}
    assert process.call(("steps", ([StepMetric("records_ok", 3.0, 1)],), ("mlflow",))) == {}
    process.close()
    assert process.process.wait(60) == 0  # once it has ended the run
    run = _only_run(MlflowClient(mlflow_uri), "parent-gone")
    assert (run.info.run_name, run.info.status) == ("orphan", "FAILED")
    assert (run.data.params, run.data.metrics) == ({"a": "1"}, {"records_ok": 3.0})


def test_a_trackers_process_that_died_drops_every_tracker_it_was_asked_for(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """A call to a trackers' process that was killed: every tracker it named dropped, the
    reason its exit code."""
    from clearsight.track.process import TrackerProcess

    process = TrackerProcess.start()
    process.process.kill()
    process.process.wait()
    failed = process.call(("end", (True,), ("mlflow", "wandb")))
    assert list(failed) == ["mlflow", "wandb"]
    said = "the trackers' process ended with exit code -9 ("
    assert all(reason.startswith(said) for reason in failed.values())
    process.close()
