"""The sample's images kept while a run runs (clearsight.faces.sample): the sample drawn before
a stage runs is the one drawn after it; a unit hands back the pixels its request carried for
the kept items only; the table sends what the run kept and draws only the other items again;
and a tracked sweep draws no image again at its end (the image the model was shown, rendered
once, by the unit)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from clearsight.execute.kept import keeping
from clearsight.faces import face_of, sample
from clearsight.faces.sample import planned_keys, sample_rows, sampled_specs
from clearsight.store import RunStore, run_manifest
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import SweepPlan, plan_sweep
from clearsight.sweep.references import human
from clearsight.sweep.results import load_run_data
from clearsight.sweep.unit import item_image, run_unit
from fixtures.trackers import assert_sample, pixels, run_sweep_cli

SWEEP = face_of("sweep")


def _plan(run: Path) -> SweepPlan:
    return plan_sweep(SweepConfig.model_validate(run_manifest(run)["config"]))


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys whose image the sweep's face draws again (its ``shown``: ``item_png``)."""
    keys: list[str] = []
    original = human.item_png

    def counted(item: object, depth_model: str) -> bytes:
        keys.append(item.key)  # type: ignore[attr-defined]
        return original(item, depth_model)  # type: ignore[arg-type]

    monkeypatch.setattr(human, "item_png", counted)
    return keys


@pytest.mark.parametrize("n", [1, 5, 13, 40])
def test_the_sample_drawn_before_a_run_is_the_one_drawn_after_it(sweep_run: Path, n: int) -> None:
    """Every item of the finished sweep is ok: the keys drawn from its plan equal those drawn
    from its records, in the same order (all of them where n is more than there are)."""
    assert SWEEP.reask is not None
    with RunStore.open(sweep_run, read_only=True) as store:
        before = planned_keys(store, SWEEP.reask, n, 0)
        after = sampled_specs(store, SWEEP.reask, n, 0)
        assert store.counts()["failed"] == 0
        total = store.count_items("sweep")
    assert before == tuple(after)
    assert len(before) == min(n, total)


def test_the_draw_made_before_the_run_is_taken_where_every_item_finished_ok(
    sweep_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every item ok the planned draw is the sample, its rows read by key, and the run's
    items are not read again; with an item unfinished they are (the draws may differ)."""
    assert SWEEP.reask is not None
    with RunStore.open(sweep_run, read_only=True) as store:
        planned = planned_keys(store, SWEEP.reask, 5, 0)
    redrawn: list[int] = []
    again = sample.sampled_specs
    monkeypatch.setattr(sample, "sampled_specs", lambda *a: redrawn.append(1) or again(*a))
    rows = sample_rows(sweep_run, SWEEP, 5, 0, planned=planned)
    assert [r.row["key"] for r in rows] == list(planned)
    assert redrawn == []
    assert SWEEP.rows is not None
    whole = {row["key"]: row for row in SWEEP.rows(sweep_run)}
    assert [r.row for r in rows] == [whole[key] for key in planned]  # the whole run's values
    assert load_run_data(sweep_run) is load_run_data(sweep_run)  # one read while held

    unfinished = tmp_path / "unfinished"
    shutil.copytree(sweep_run, unfinished)
    with RunStore.open(unfinished) as store:
        _, spec = next(store.item_specs("sweep"))
        store.add_items([("0" * 64, "sweep", {**spec, "severity": 99})])  # no record
    rows = sample_rows(unfinished, SWEEP, 5, 0, planned=planned)
    assert redrawn == [1]
    assert [r.row["key"] for r in rows] == list(planned)  # the same finished items


def test_a_unit_hands_back_the_pixels_it_sent_for_the_kept_items_only(sweep_run: Path) -> None:
    unit = _plan(sweep_run).units[0]
    items = list(unit.items)
    kept = frozenset(item.key for item in items[::3])
    records = keeping(run_unit, kept, unit)
    assert [r.key for r in records] == [item.key for item in items]
    depth = unit.depth_model
    for item, record in zip(items, records, strict=True):
        if item.key in kept:
            assert np.array_equal(record.shown, item_image(item, depth)), item.key
        else:
            assert record.shown is None
    assert all(r.shown is None for r in run_unit(unit))  # outside keeping: nothing kept


def test_the_table_sends_what_the_run_kept_and_draws_only_the_rest(
    sweep_run: Path, drawn: list[str]
) -> None:
    """Kept pixels (here: each image inverted, so that the test sees which was sent) are
    encoded as they are; the items the run did not keep are drawn again by the face."""
    assert SWEEP.rows is not None
    assert SWEEP.reask is not None
    assert SWEEP.shown is not None
    with RunStore.open(sweep_run, read_only=True) as store:
        specs = sampled_specs(store, SWEEP.reask, 6, 0)
    shown = {key: pixels(png) for key, png in SWEEP.shown(sweep_run, specs).items()}
    drawn.clear()
    kept = {key: 255 - shown[key] for key in list(specs)[:4]}
    rows = sample_rows(sweep_run, SWEEP, 6, 0, kept=kept)
    assert [r.row["key"] for r in rows] == list(specs)
    assert sorted(drawn) == sorted(list(specs)[4:])  # the two not kept, drawn again once
    for row in rows:
        assert row.image is not None
        want = kept.get(str(row.row["key"]), shown[str(row.row["key"])])
        assert np.array_equal(pixels(row.image), want)


@pytest.mark.parametrize("executor", [("serial",), ("process", "--workers", "2")])
def test_a_tracked_sweep_draws_no_image_again(
    tmp_path: Path,
    clean_env: pytest.MonkeyPatch,
    drawn: list[str],
    executor: tuple[str, ...],
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Sent to trackio while it runs, with a table of 9 of its 26 items: every image of the
    table is one a unit sent, in this process or handed back by a pool's worker with its
    records; each the pixels the face's ``shown`` draws for its item. trackio, in the trackers'
    process, skips no metric (it looks for matplotlib's figures in ``sys.modules``: in the
    run's process, its report's thread might have been importing matplotlib at the time)."""
    from trackio.sqlite_storage import SQLiteStorage
    from trackio.utils import MEDIA_DIR

    from clearsight.track.names import PROJECT

    run_dir = tmp_path / f"sweep-kept-{executor[0]}"
    run_sweep_cli(run_dir, "--tracker", "trackio", "--tracker-sample", "9", "--executor", *executor)
    assert drawn == []
    assert "skipped" not in capfd.readouterr().err  # what the trackers' process printed
    logged = [row.get("sample") for row in SQLiteStorage.get_logs(PROJECT, run_dir.name)]
    (table,) = [t for t in logged if t is not None]
    rows = table["_value"]
    cells = [row.pop("image") for row in rows]
    assert all(cell["_type"] == "trackio.image" for cell in cells)
    assert_sample(run_dir, 9, rows, [MEDIA_DIR / cell["file_path"] for cell in cells])
