"""``clearsight view`` on a sweep run: each curve point lists exactly the records the analysis
counts for it, each image is the one the model received, the filters, sorting and pages select
what they say, and bad input is one clear message (HTTP 4xx, or the CLI's ``error:`` line)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image
from starlette.testclient import TestClient
from typer.testing import CliRunner

from clearsight.cli import app as cli_app
from clearsight.driver import run_lock
from clearsight.faces import register
from clearsight.faces.face import ProtocolFace
from clearsight.faces.viewing import Listing, Query
from clearsight.store import RunStore
from clearsight.sweep.face import question_of
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.references.human import human_items, human_record
from clearsight.sweep.results import level_label, load_run_data
from clearsight.sweep.signals import signal_values
from clearsight.sweep.view import SweepRunView
from clearsight.validate import InputError
from clearsight.view import open_views
from clearsight.view.app import create_view_app
from clearsight.view.query import parse_query
from fixtures.capture import view_config

Run = tuple[Path, dict[str, npt.NDArray[np.uint8]]]
ALL = 10**6


def _all(view: SweepRunView, **fields: object) -> Listing:
    return view.listing(Query(per_page=ALL, **fields))  # type: ignore[arg-type]


def _client(run: Path) -> TestClient:
    return TestClient(create_view_app(open_views([run])), base_url="http://127.0.0.1")


def _decoded(png: bytes) -> npt.NDArray[np.uint8]:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def test_each_point_lists_exactly_the_records_its_cell_counts(view_run: Run) -> None:
    run, _ = view_run
    view = SweepRunView(run, question_of)
    records = load_run_data(run).records
    points = [p for p in view.points() if "bin" not in p.filters]  # the curves (bins: their own)
    assert {p.filters["signal"] for p in points} >= {"accuracy", "internal_conf", "verbal_conf"}
    for point in points:
        f = point.filters
        cell = records[
            (records["model"] == f["model"])
            & (records["task"] == f["task"])
            & (records["wording"] == f["wording"])
            & (records["condition"] == f["condition"])
        ]
        if "level" in f:
            cell = cell[[level_label(v) == f["level"] for v in cell["level_m"]]]
        cell = cell[np.isfinite(signal_values(cell, f["signal"]))]
        listed = _all(view, filters=f)
        assert listed.total == point.n == len(cell), point
        assert {r.key for r in listed.rows} == set(cell["key"])


def test_served_images_are_the_pixels_the_backend_received(view_run: Run) -> None:
    run, captured = view_run
    view = SweepRunView(run, question_of)
    assert len(captured) == len(_all(view, filters={"model": "capture"}).rows) > 0
    images = list(captured.values())
    assert any(not np.array_equal(images[0], other) for other in images[1:])
    for key, received in captured.items():
        png = view.image(key)
        assert png is not None
        assert np.array_equal(_decoded(png), received), key
    client = _client(run)
    key = next(iter(captured))
    response = client.get(f"/run/0/image/{key}.png")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    assert np.array_equal(_decoded(response.content), captured[key])


def test_outcomes_partition_and_confidently_wrong_is_wrong_above_the_threshold(
    view_run: Run,
) -> None:
    view = SweepRunView(Path(view_run[0]), question_of)
    base = {"model": "capture", "wording": "mcq.reason"}
    every = _all(view, filters=base)
    parts = {o: _all(view, filters=base, outcome=o) for o in ("correct", "wrong", "abstained")}
    assert sum(p.total for p in parts.values()) == every.total > 0
    assert set().union(*({r.key for r in p.rows} for p in parts.values())) == {
        r.key for r in every.rows
    }
    for name, part in parts.items():
        assert all(r.labels["outcome"] == name for r in part.rows)
    threshold = 0.5
    sure = _all(view, filters=base, outcome="confidently-wrong", threshold=threshold)
    expected = {
        r.key for r in parts["wrong"].rows if r.confidence is not None and r.confidence > threshold
    }
    assert {r.key for r in sure.rows} == expected


def test_filters_sorting_and_pages(view_run: Run) -> None:
    view = SweepRunView(Path(view_run[0]), question_of)
    chosen = {"model": "observer", "task": "verify", "condition": "fog", "level": "3.9"}
    rows = _all(view, filters=chosen).rows
    assert rows
    for row in rows:
        assert (row.labels["model"], row.labels["task"]) == ("observer", "verify")
        assert (row.labels["condition"], row.labels["level"]) == ("fog", "3.9 m")
    ranked = _all(view, filters={"wording": "mcq.reason"}, sort="desc").rows
    values = [r.confidence for r in ranked]
    assert all(v is not None for v in values)
    assert values == sorted(values, reverse=True)  # type: ignore[type-var]
    rising = [r.confidence for r in _all(view, filters={"wording": "mcq.reason"}, sort="asc").rows]
    assert rising == sorted(rising)  # type: ignore[type-var]
    total = _all(view).total
    paged = [
        r.key
        for page in range(-(-total // 7))
        for r in view.listing(Query(page=page, per_page=7)).rows
    ]
    assert paged == [r.key for r in _all(view).rows]
    assert len(set(paged)) == total


OFFERED = {"model": ("a", "b"), "level": ("3.9", "62.5")}


@given(
    name=st.sampled_from(sorted(OFFERED)),
    value=st.text(min_size=1, max_size=8),
)
def test_parse_query_takes_offered_values_only(name: str, value: str) -> None:
    if value in OFFERED[name]:
        assert parse_query({name: value}, OFFERED).filters == {name: value}
    else:
        with pytest.raises(InputError, match="does not exist in this run"):
            parse_query({name: value}, OFFERED)


@given(text=st.text(max_size=10))
def test_parse_query_numbers_are_checked(text: str) -> None:
    try:
        number = float(text)
    except ValueError:
        number = float("nan")
    query_ok = 0.0 <= number <= 1.0
    if query_ok:
        assert parse_query({"threshold": text}, OFFERED).threshold == number
    elif text.strip():
        with pytest.raises(InputError, match="threshold"):
            parse_query({"threshold": text}, OFFERED)


@pytest.mark.parametrize(
    ("path", "status", "said"),
    [
        ("/run/0/items?model=gpt-9", 400, "does not exist in this run"),
        ("/run/0/items?colour=red", 400, "no filter"),
        ("/run/0/items?threshold=high", 400, "must be a number"),
        ("/run/0/items?page=-1", 400, "page"),
        ("/run/0/items?outcome=lucky", 400, "does not exist"),
        ("/run/4/", 404, "no run 4"),
        ("/run/0/item/..%2F..%2Frun.sqlite", 404, "Not Found"),
        ("/run/0/image/run.sqlite.png", 404, "64-digit key"),
        ("/run/0/item/" + "Z" * 64, 404, "64-digit key"),
        ("/run/0/image/" + "0" * 64 + ".png", 404, "has no item"),
        ("/run/0/item/" + "ab" * 32, 404, "has no item"),
    ],
)
def test_bad_requests_are_one_clear_page(view_run: Run, path: str, status: int, said: str) -> None:
    response = _client(view_run[0]).get(path)
    assert response.status_code == status
    assert said in response.text
    assert "Traceback" not in response.text


def test_other_host_names_are_refused(view_run: Run) -> None:
    client = _client(view_run[0])
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400
    assert client.get("/", headers={"host": "localhost"}).status_code == 200


def test_cli_bad_runs_are_one_error_line(tmp_path: Path) -> None:
    runner = CliRunner()
    for target in (tmp_path / "missing", tmp_path):
        result = runner.invoke(cli_app, ["view", str(target)])
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1, result.output
        assert lines[0].startswith("error:"), result.output
    assert list(tmp_path.iterdir()) == []


def test_a_run_being_written_is_viewed_and_new_records_appear(
    view_run: Run, tmp_path: Path
) -> None:
    run = Path(shutil.copytree(view_run[0], tmp_path / "run"))
    view = SweepRunView(run, question_of)
    before = _all(view)
    questions = plan_sweep(view_config()).questions
    answered = human_items(questions, "ann", "mcq.reason")[:3]
    with run_lock(run), RunStore.open(run) as writer:
        writer.add_items(answered)
        writer.write_records([human_record(i, i.question.correct, 0.9, 1.0) for i in answered])
        after = _all(view)
        assert after.total == before.total + len(answered)
        assert {r.key for r in after.rows} - {r.key for r in before.rows} == {
            i.key for i in answered
        }
        assert view.detail(answered[0].key) is not None
        person = [p for p in view.points() if p.filters["model"] == "human:ann"]
        assert person
        client = _client(run)
        for point in person:
            assert _all(view, filters=point.filters).total == point.n
            page = client.get("/run/0/items", params=dict(point.filters))
            assert page.status_code == 200
            assert f'<span id="count">{point.n}</span>' in page.text
        assert client.get("/run/0/items?model=human:nobody").status_code == 200
        assert client.get("/run/0/items?model=nobody").status_code == 400


def test_a_run_whose_protocol_has_no_view_is_one_error_line(tmp_path: Path) -> None:
    register("viewless", ProtocolFace("viewless"))
    run = tmp_path / "run"
    with RunStore.open(run) as store:
        store.begin_run({"protocol": "viewless", "config": {}})
    with pytest.raises(InputError, match="a viewless run has no viewer"):
        open_views([run])
    result = CliRunner().invoke(cli_app, ["view", str(run)])
    assert result.exit_code == 2
    assert result.output == "error: a viewless run has no viewer (clearsight view)\n"
