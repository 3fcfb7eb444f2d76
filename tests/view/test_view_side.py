"""Items side by side in ``clearsight view``: the same item for each model holds exactly the
store's records of that item, a scene's strip from clean to the last level shows each item's
image as its model received it, several runs are matched item by item exactly as
``clearsight compare`` matches them, and bad input is one clear message."""

from __future__ import annotations

import io
import re
import sqlite3
from collections import defaultdict
from pathlib import Path
from urllib.parse import urljoin

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image
from starlette.testclient import TestClient
from typer.testing import CliRunner

from clearsight.cli import app as cli_app
from clearsight.faces.viewing import Query
from clearsight.store import RunStore
from clearsight.sweep.comparison.matching import compare_sweeps, item_identity
from clearsight.sweep.face import question_of
from clearsight.sweep.protocol import run_sweep
from clearsight.sweep.results import level_label
from clearsight.sweep.view import SweepRunView
from clearsight.validate import InputError
from clearsight.view import open_views
from clearsight.view.app import create_view_app
from clearsight.view.index import index_path
from fixtures.capture import view_config

Run = tuple[Path, dict[str, npt.NDArray[np.uint8]]]
_IMG = re.compile(r'<section class="column" data-key="([0-9a-f]{64})">.*?<img src="([^"]+)"', re.S)


@pytest.fixture(scope="module")
def other_seed(view_run: Run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of the viewer tests' design with another seed (other option orders: other
    item keys, the same items as compare matches them)."""
    run = tmp_path_factory.mktemp("side") / "seed1"
    run_sweep(view_config().model_copy(update={"seed": 1}), run, progress=False)
    return run


def _records(run: Path) -> dict[str, dict[str, object]]:
    """Every ok sweep record of ``run`` by key: its spec and read-outs (the store's own read)."""
    with RunStore.open(run, read_only=True) as store:
        return {
            r.key: {"spec": r.spec, "readouts": r.readouts}
            for r in store.iter_records("ok", kind="sweep", raw=False)
        }


def _client(*runs: Path) -> TestClient:
    return TestClient(create_view_app(open_views(list(runs))), base_url="http://127.0.0.1")


def _decoded(png: bytes) -> npt.NDArray[np.uint8]:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def test_the_same_item_for_each_model_is_exactly_the_stores_records(view_run: Run) -> None:
    run, _ = view_run
    view = SweepRunView(run, question_of)
    records = _records(run)
    by_identity: dict[object, dict[str, str]] = defaultdict(dict)
    for key, record in records.items():
        spec = record["spec"]
        assert isinstance(spec, dict)
        by_identity[item_identity(spec)][str(spec["model"])] = key
    checked = 0
    for key, record in records.items():
        spec = record["spec"]
        assert isinstance(spec, dict)
        expected = by_identity[item_identity(spec)]
        assert "models" in {g.name for g in view.groups(key)}
        models = view.related(key, "models")
        assert models is not None
        if len(expected) < 2:  # the item alone
            assert [m.key for m in models.members] == [key]
            continue
        assert [m.label for m in models.members] == ["capture", "observer"]
        assert {m.label: m.key for m in models.members} == expected
        checked += 1
    assert checked > len(records) // 2


def test_a_scenes_cell_is_read_by_the_side_indexs_scene_index(view_run: Run) -> None:
    run, _ = view_run
    view = SweepRunView(run, question_of)
    row = view.listing(Query(filters={"model": "capture", "condition": "fog"})).rows[0]
    cell = {name: row.labels[name] for name in ("task", "wording", "condition", "scene")}
    models = view.listing(Query(filters=cell, per_page=100)).rows
    assert {r.labels["scene"] for r in models} == {row.labels["scene"]}
    assert {r.labels["model"] for r in models} == {"capture", "observer"}
    conn = sqlite3.connect(index_path(run))
    try:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT key FROM rows WHERE scene = ? AND task = ? "
            "AND wording = ? AND condition = ? AND level_m = ?",
            (row.labels["scene"], row.labels["task"], row.labels["wording"], "fog", 3.9),
        ).fetchall()
    finally:
        conn.close()
    assert "rows_by_scene_condition_level_m" in str(plan)


def test_the_models_page_shows_each_models_record(view_run: Run) -> None:
    run, _ = view_run
    view = SweepRunView(run, question_of)
    records = _records(run)
    key = view.listing(Query(filters={"model": "capture", "condition": "fog"})).rows[0].key
    models = view.related(key, "models")
    assert models is not None
    page = _client(run).get(f"/run/0/related/{key}/models")
    assert page.status_code == 200
    shown = re.findall(r'<section class="column" data-key="([0-9a-f]{64})">', page.text)
    assert shown == [m.key for m in models.members]
    for member in models.members:
        readouts = records[member.key]["readouts"]
        assert isinstance(readouts, dict)
        column = page.text.split(f'data-key="{member.key}"')[1].split("</section>")[0]
        assert f"<th>answer</th><td>{readouts['answer']}</td>" in column
        assert f"<td>{readouts['internal_conf']:.3f}</td>" in column
    item = _client(run).get(f"/run/0/item/{key}")
    assert f'href="../related/{key}/models"' in item.text
    assert "across" not in item.text  # one run: nothing to match it in


def test_the_strip_runs_from_clean_to_the_last_level_with_the_images_the_model_received(
    view_run: Run,
) -> None:
    run, captured = view_run
    view = SweepRunView(run, question_of)
    records = _records(run)
    config = view_config()
    labels = ["clean", *(f"{level_label(v)} m" for v in sorted(config.levels_m, reverse=True))]
    client = _client(run)
    strips = 0
    for key in captured:
        spec = records[key]["spec"]
        assert isinstance(spec, dict)
        strip = view.related(key, "fog")  # a blank control's too: its scene's strip
        assert strip is not None
        assert [m.label for m in strip.members] == labels
        assert (key in {m.key for m in strip.members}) == (spec["condition"] in ("fog", "clean"))
        for member in strip.members:
            other = records[member.key]["spec"]
            assert isinstance(other, dict)
            assert (other["model"], other["scene"], other["task"]) == (
                spec["model"],
                spec["scene"],
                spec["task"],
            )
            assert (other["wording"], other["target"]) == (spec["wording"], spec["target"])
            where = (
                "clean" if other["condition"] == "clean" else f"{level_label(other['level_m'])} m"
            )
            assert where == member.label
        strips += 1
        if strips > 3:
            continue
        page = client.get(f"/run/0/related/{key}/fog")
        shown = _IMG.findall(page.text)
        assert [k for k, _ in shown] == [m.key for m in strip.members]
        for member_key, src in shown:
            png = client.get(urljoin(f"http://127.0.0.1/run/0/related/{key}/fog", src))
            assert png.status_code == 200
            assert np.array_equal(_decoded(png.content), captured[member_key])
    assert strips > 0


def test_several_runs_are_matched_as_compare_matches(view_run: Run, other_seed: Path) -> None:
    run, _ = view_run
    a, b = open_views([run, other_seed])
    pairs = compare_sweeps(run, other_seed, tolerance=0.5, n_boot=10).pairs
    assert len(pairs) > 0
    assert set(pairs["key_a"]) != set(pairs["key_b"])  # another seed: other keys
    matched = dict(zip(pairs["key_a"], pairs["key_b"], strict=True))
    for key in _records(run):
        identity = a.identity(key)
        assert identity is not None
        assert b.find(identity) == matched.get(key)
    for key_b, key_a in zip(pairs["key_b"], pairs["key_a"], strict=True):
        identity = b.identity(key_b)
        assert identity is not None
        assert a.find(identity) == key_a
    client = _client(run, other_seed)
    key_a, key_b = str(pairs["key_a"][0]), str(pairs["key_b"][0])
    assert f'href="../across/{key_a}"' in client.get(f"/run/0/item/{key_a}").text
    page = client.get(f"/run/0/across/{key_a}")
    assert page.status_code == 200
    shown = re.findall(r'<section class="column" data-key="([0-9a-f]{64})">', page.text)
    assert shown == [key_a, key_b]
    assert f"../../../run/1/item/{key_b}" in page.text


def test_bad_side_by_side_requests_are_one_clear_message(view_run: Run, tmp_path: Path) -> None:
    run, captured = view_run
    client = _client(run)
    key = next(iter(captured))
    page = client.get(f"/run/0/related/{key}/nope")
    assert page.status_code == 404
    assert re.search(r"has no group &#39;nope&#39;: it has models, fog", page.text)
    assert client.get(f"/run/0/related/{'0' * 64}/models").status_code == 404
    assert client.get(f"/run/0/across/{'0' * 64}").status_code == 404
    assert client.get("/run/0/across/not-a-key").status_code == 404
    other = tmp_path / "grounding"
    with RunStore.open(other) as store:
        store.begin_run({"protocol": "grounding", "config": {}})
    with pytest.raises(InputError, match=r"is a sweep run and .* a grounding run"):
        open_views([run, other])
    result = CliRunner().invoke(cli_app, ["view", str(run), str(other)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert result.output.startswith("error: ")
    assert "one protocol" in result.output
