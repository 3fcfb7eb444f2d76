"""The viewer's side index built ahead of time (``clearsight view RUN --index``) and in the
background (pages say "indexing N of M" until it is ready, never waiting for the build), and
its place in the cache folder where the run directory cannot be written."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from clearsight.cli import app as cli_app
from clearsight.store import RunStore, last_record_id
from clearsight.sweep.results import load_run_data
from clearsight.view import index as view_index
from clearsight.view import open_views
from clearsight.view.app import create_view_app
from clearsight.view.index import INDEX_NAME, index_path

Run = tuple[Path, dict[str, npt.NDArray[np.uint8]]]


def _copy(view_run: Run, tmp_path: Path) -> Path:
    """A copy of the run without any index."""
    run = Path(shutil.copytree(view_run[0], tmp_path / "run"))
    for found in run.glob(f"{INDEX_NAME}*"):
        found.unlink()
    return run


def _indexed_keys(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT key FROM rows ORDER BY id")]


def test_index_option_builds_the_index_with_progress_and_exits(
    view_run: Run, tmp_path: Path
) -> None:
    run = _copy(view_run, tmp_path)
    result = CliRunner().invoke(cli_app, ["view", str(run), "--index"])
    assert result.exit_code == 0, result.output
    with RunStore.open(run, read_only=True) as store:
        top = last_record_id(store)
    assert f"{top:,} of {top:,} items read" in result.output  # progress, to the end
    assert "index ready: run (sweep)" in result.output
    assert _indexed_keys(run / INDEX_NAME) == list(load_run_data(run).records["key"])


def _until_ready(client: TestClient, path: str) -> tuple[list[int], str]:
    """The statuses ``path`` answered with until it answered 200, and that page."""
    statuses = []
    for _ in range(600):
        response = client.get(path)
        statuses.append(response.status_code)
        if response.status_code == 200:
            return statuses, response.text
        assert response.status_code == 503, response.text
        assert response.headers["Retry-After"] == "2"
        assert '<meta http-equiv="refresh" content="2">' in response.text
        assert "indexing" in response.text
        assert "items of this" in response.text
        time.sleep(0.05)
    raise AssertionError(f"{path} was never ready: {statuses[-5:]}")


def test_pages_say_indexing_while_the_index_is_built_in_the_background(
    view_run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _copy(view_run, tmp_path)
    other = _copy(view_run, tmp_path / "b")
    expected = TestClient(create_view_app(open_views([other])), base_url="http://127.0.0.1")
    listing = expected.get("/run/0/items?sort=desc").text  # built inline: a small run
    monkeypatch.setattr(view_index, "INLINE", 3)  # this run is now far behind
    with TestClient(create_view_app(open_views([run])), base_url="http://127.0.0.1") as client:
        started = time.perf_counter()
        first = client.get("/run/0/items?sort=desc")
        assert time.perf_counter() - started < 5  # the page did not wait for the build
        assert first.status_code == 503
        statuses, page = _until_ready(client, "/run/0/items?sort=desc")
    assert page == listing  # the same page once the index is ready
    assert statuses[-1] == 200
    assert _indexed_keys(run / INDEX_NAME) == list(load_run_data(run).records["key"])


def test_a_read_only_run_directory_keeps_its_index_in_the_cache(
    view_run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _copy(view_run, tmp_path)
    monkeypatch.setenv("CLEARSIGHT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(view_index, "writable", lambda path: path != run)  # as a read-only run
    path = index_path(run)
    assert path.parent == tmp_path / "cache" / "view-index"
    assert index_path(tmp_path) == tmp_path / INDEX_NAME  # a writable directory keeps it
    client = TestClient(create_view_app(open_views([run])), base_url="http://127.0.0.1")
    assert client.get("/run/0/items").status_code == 200
    assert not list(run.glob(f"{INDEX_NAME}*"))  # nothing written into the run directory
    assert _indexed_keys(path) == list(load_run_data(run).records["key"])
    other = _copy((run, {}), tmp_path / "other")  # another run: another file in the cache
    monkeypatch.setattr(view_index, "writable", lambda path: False)
    assert index_path(other) != path
    assert index_path(other).parent == path.parent
