"""The viewer's side index (:mod:`clearsight.view.index`, the sweep's design
:mod:`clearsight.sweep.view.index`): its rows are the run's records, it sees records written
after it was built, a build killed half way is resumed to the same rows, and the points made
of it are the analysis's curves."""

from __future__ import annotations

import dataclasses
import math
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from clearsight.driver import run_lock
from clearsight.store import IndexDesign, RunStore, last_record_id, record_chunks
from clearsight.sweep.face import question_of
from clearsight.sweep.numbers.crossings import scene_bootstrap
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.references.human import human_items, human_record
from clearsight.sweep.results import load_run_data
from clearsight.sweep.view import SweepRunView
from clearsight.sweep.view.index import SWEEP_INDEX
from clearsight.view.index import INDEX_NAME, _catch_up, _open, index_path, synced
from fixtures.capture import view_config

Run = tuple[Path, dict[str, npt.NDArray[np.uint8]]]


def _copy(view_run: Run, tmp_path: Path) -> Path:
    """A copy of the run without any index."""
    run = Path(shutil.copytree(view_run[0], tmp_path / "run"))
    (run / INDEX_NAME).unlink(missing_ok=True)
    return run


def _rows(
    run: Path, design: IndexDesign = SWEEP_INDEX, chunk: int = 20_000, table: str = "rows"
) -> pd.DataFrame:
    """The index's rows (or its ``tally``), brought up to date ``chunk`` records at a time."""
    order = "id" if table == "rows" else ", ".join(design.tally)
    synced(run, design, chunk=chunk).close()
    with sqlite3.connect(index_path(run)) as conn:
        return pd.read_sql(f"SELECT * FROM {table} ORDER BY {order}", conn)


def test_index_rows_are_the_records_the_analysis_reads(view_run: Run, tmp_path: Path) -> None:
    run = _copy(view_run, tmp_path)
    rows = _rows(run, chunk=7)  # many chunks
    records = load_run_data(run).records
    assert list(rows["key"]) == list(records["key"])  # the run's order, each record once
    for column in ("model", "task", "wording", "condition"):
        assert list(rows[column]) == list(records[column].astype(str)), column
    for column in ("level_m", "correct", "abstained", "internal_conf", "verbal_conf"):
        np.testing.assert_allclose(rows[column].astype(float), records[column], err_msg=column)
    assert (run / INDEX_NAME).is_file()


def test_new_records_appear_in_the_index(view_run: Run, tmp_path: Path) -> None:
    run = _copy(view_run, tmp_path)
    before = _rows(run)
    answered = human_items(plan_sweep(view_config()).questions, "ann", "mcq.reason")[:4]
    with run_lock(run), RunStore.open(run) as writer:
        writer.add_items(answered)
        writer.write_records([human_record(answered[0], "A", 0.9, 1.0)])
        middle = _rows(run)  # three items are waiting for their records
        writer.write_records([human_record(i, i.question.correct, 0.4, 1.0) for i in answered])
    after = _rows(run)
    assert len(middle) == len(before) + 1
    assert set(middle["key"]) - set(before["key"]) == {answered[0].key}
    assert len(after) == len(before) + 4
    assert set(after["key"]) - set(before["key"]) == {i.key for i in answered}
    person = after[after["model"] == "human:ann"]
    assert list(person["confidence"]) == pytest.approx([0.9, 0.4, 0.4, 0.4])


def test_a_killed_build_is_resumed_to_the_same_rows(view_run: Run, tmp_path: Path) -> None:
    run = _copy(view_run, tmp_path)
    whole, tally = _rows(run), _rows(run, table="tally")
    (run / INDEX_NAME).unlink()
    calls = {"n": 0}

    def dies_on_the_third_chunk(frame: pd.DataFrame) -> pd.DataFrame:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # as a kill between two chunks' transactions
        return SWEEP_INDEX.rows(frame)

    dying = dataclasses.replace(SWEEP_INDEX, rows=dies_on_the_third_chunk)
    with pytest.raises(KeyboardInterrupt):
        synced(run, dying, chunk=5)
    with sqlite3.connect(run / INDEX_NAME) as conn:
        partial = conn.execute("SELECT count(*) FROM rows").fetchone()[0]
    assert 0 < partial < len(whole)  # two chunks committed, the third rolled back
    pd.testing.assert_frame_equal(_rows(run, chunk=5), whole)
    resumed = _rows(run, table="tally")  # each row counted once, sums in another order
    pd.testing.assert_frame_equal(resumed, tally, check_exact=False, rtol=1e-12)


def test_a_damaged_or_foreign_index_is_built_again(view_run: Run, tmp_path: Path) -> None:
    run = _copy(view_run, tmp_path)
    whole = _rows(run)
    (run / INDEX_NAME).write_bytes(b"not a database at all" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{run / INDEX_NAME}{suffix}").unlink(missing_ok=True)
    pd.testing.assert_frame_equal(_rows(run), whole)
    with sqlite3.connect(run / INDEX_NAME) as conn:  # read past the run's last record
        conn.execute("UPDATE meta SET value = '999999999' WHERE key = 'high'")
        conn.execute("DELETE FROM rows")
    pd.testing.assert_frame_equal(_rows(run), whole)


def _curves(run: Path) -> list[tuple[Any, ...]]:
    curves = scene_bootstrap(load_run_data(run), n_boot=1).curves
    fields = ("model", "task", "wording", "signal", "condition", "x", "n", "estimate")
    return [tuple(getattr(row, f) for f in fields) for row in curves.itertuples(index=False)]


def test_points_are_the_analysis_curves_in_its_order(view_run: Run, tmp_path: Path) -> None:
    run = _copy(view_run, tmp_path)
    expected = _curves(run)
    points = [p for p in SweepRunView(run, question_of).points() if "bin" not in p.filters]
    assert len(points) == len(expected)  # the curves first; then the reliability bins
    for point, (model, task, wording, signal, condition, _, n, estimate) in zip(
        points, expected, strict=True
    ):
        curve = " · ".join((model, task, wording, signal, condition))
        assert (point.curve, point.n) == (curve, n)
        assert math.isclose(point.value, estimate, rel_tol=1e-12, abs_tol=1e-12)


def test_record_chunks_by_range_and_by_ids_read_the_same_records(view_run: Run) -> None:
    with RunStore.open(view_run[0], read_only=True) as store:
        columns = ("key", "model", "internal_conf")
        ranged = list(record_chunks(store, "sweep", columns, chunk=4))
        ids = [i for part in ranged for i in part.frame["id"]]
        by_ids = list(record_chunks(store, "sweep", columns, ids=ids[::-1], chunk=3))
        keys = [r.key for r in store.iter_records("ok", kind="sweep", raw=False)]
    assert [k for part in ranged for k in part.frame["key"]] == keys
    assert [k for part in by_ids for k in part.frame["key"]] == keys  # in id order
    assert all(part.waiting == () for part in ranged)
    assert ranged[-1].last_id == max(ids)


def test_two_processes_catching_up_at_once_write_each_record_once(
    view_run: Run, tmp_path: Path
) -> None:
    run = _copy(view_run, tmp_path)
    whole, tally = _rows(run), _rows(run, table="tally")
    (run / INDEX_NAME).unlink()
    other = _open(run / INDEX_NAME, SWEEP_INDEX)  # the other process's connection
    calls = {"n": 0}

    def the_other_catches_up_meanwhile(frame: pd.DataFrame) -> pd.DataFrame:
        calls["n"] += 1
        if calls["n"] == 2:  # after this process's first chunk, before its second
            with RunStore.open(run, read_only=True) as store:
                _catch_up(other, store, last_record_id(store), 5, lambda done, total: None)
        return SWEEP_INDEX.rows(frame)

    racing = dataclasses.replace(SWEEP_INDEX, rows=the_other_catches_up_meanwhile)
    synced(run, racing, chunk=5).close()
    other.close()
    assert calls["n"] == 2  # its second chunk found high moved by the other: it stopped
    pd.testing.assert_frame_equal(_rows(run), whole)
    tallied = _rows(run, table="tally")
    pd.testing.assert_frame_equal(tallied, tally, check_exact=False, rtol=1e-12)
