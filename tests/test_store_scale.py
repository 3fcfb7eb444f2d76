"""The store at the paper's scale: chunked adds, resumes that do not plan, bounded reads."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clearsight import driver
from clearsight.driver import Execution
from clearsight.store import Record, RunStore, _frames, _run_store, _schema, load_run
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.protocol import SWEEP
from clearsight.validate import InputError

ROOT = Path(__file__).resolve().parents[1]


def _config(**kw: Any) -> SweepConfig:
    args: dict[str, Any] = {
        "scene_ids": ("skimage-chelsea",),
        "arms": ("fog",),
        "levels_m": (250.0, 2.0),
        "tasks": ("identify", "verify"),
        "wordings": ("mcq.reason", "verbal.plain"),
        "controls": ("clean", "blank"),
    }
    return SweepConfig(**(args | kw))


def _contents(run: Path) -> list[tuple[str, str, Any, Any, Any]]:
    with RunStore.open(run, read_only=True) as store:
        return [(r.key, r.protocol, r.spec, r.raw, r.readouts) for r in store.iter_records()]


def _fill(store: RunStore) -> None:
    """An ok record for every pending item (raw and read-outs made from its key)."""
    keys = store.pending_keys()
    store.write_records([Record(k, "ok", None, {"k": k[:6]}, {"n": len(k)}, 0.0) for k in keys])


@pytest.mark.parametrize("bulk", [False, True])
def test_a_chunked_add_stores_what_a_one_shot_add_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bulk: bool
) -> None:
    items = plan_sweep(_config()).items
    assert len(items) == 25  # 4 conditions x 3 questions x 2 wordings, and a depth item
    with RunStore.open(tmp_path / "one") as store:
        assert store.add_items(items) == len(items)
        _fill(store)
    monkeypatch.setattr(_run_store, "ADD_CHUNK", 7)  # many chunks, one a partial one
    monkeypatch.setattr(_run_store, "BULK_ADD", 20 if bulk else 10**9)
    with RunStore.open(tmp_path / "chunked") as store:
        assert store.add_items(items) == len(items)
        assert store.add_items(items) == 0  # all stored: nothing new, chunk by chunk
        _fill(store)
    one, chunked = _contents(tmp_path / "one"), _contents(tmp_path / "chunked")
    assert chunked == one
    assert [row[0] for row in one] == [item.key for item in items]  # keys as specs compute
    assert [row[2] for row in one] == [item.to_json() for item in items]


@pytest.fixture
def small_bulk(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The 25 items of the small sweep, with adds of 20 or more in bulk, 4 a chunk."""
    monkeypatch.setattr(_run_store, "ADD_CHUNK", 4)
    monkeypatch.setattr(_run_store, "BULK_ADD", 20)
    return list(plan_sweep(_config()).items)


def test_a_bulk_add_builds_the_key_index_after_its_rows_and_keeps_a_keys_first_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_bulk: list[Any]
) -> None:
    items = small_bulk
    seen: list[tuple[bool, int]] = []
    add_rows = RunStore._add_rows

    def spy(self: RunStore, rows: Any, indexed: bool) -> int:
        (checks_kinds,) = self.conn.execute("PRAGMA foreign_keys").fetchone()
        seen.append((_schema.has_key_index(self.conn), checks_kinds))
        return add_rows(self, rows, indexed)

    monkeypatch.setattr(RunStore, "_add_rows", spy)
    twice = [*items[:6], items[1], *items[6:], items[0]]  # repeated in other chunks
    with RunStore.open(tmp_path / "run") as store:
        assert store.add_items(twice) == len(items)
        assert _schema.has_key_index(store.conn)
        assert store.add_items(items) == 0  # into a run with items: the index skips them
        assert store.conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
    # the bulk add went in without the index and the per-row check of kinds; the next with both
    assert seen == [(False, 0), (True, 1)]
    with RunStore.open(tmp_path / "run", read_only=True) as store:
        keys = [_key for (_key,) in store.conn.execute("SELECT key FROM items ORDER BY id")]
    assert [k.hex() for k in keys] == [item.key for item in items]  # first rows, in order


def test_a_bulk_add_cut_short_leaves_a_run_the_next_writer_indexes(
    tmp_path: Path, small_bulk: list[Any]
) -> None:
    items = small_bulk

    def stopped() -> Any:
        yield from items[:9]
        raise KeyboardInterrupt

    class Sized(list[Any]):
        def __iter__(self) -> Any:
            return stopped()

    run = tmp_path / "run"
    with RunStore.open(run) as store, pytest.raises(KeyboardInterrupt):
        store.add_items(Sized(items))
    with RunStore.open(run, read_only=True) as store:  # the index was built on the way out
        assert _schema.has_key_index(store.conn)
        assert store.counts()["items"] == 8  # the chunk in flight was lost
    # a writer killed before that: no index, and a key stored twice by two chunks
    with sqlite3.connect(run / "run.sqlite") as conn:
        conn.execute("DROP INDEX items_key")
        conn.execute("INSERT INTO items (key, kind, spec) SELECT key, kind, spec FROM items")
    conn.close()
    with RunStore.open(run, read_only=True) as store:
        assert store.counts()["items"] == 16  # a reader reads it as it is
    with RunStore.open(run) as store:
        assert _schema.has_key_index(store.conn)
        assert store.counts()["items"] == 8
        assert store.add_items(items) == len(items) - 8


def _counting(calls: list[int]) -> Any:
    def plan(config: SweepConfig) -> Any:
        calls.append(1)
        return plan_sweep(config)

    return dataclasses.replace(SWEEP, plan=plan)


def test_a_finished_run_resumes_without_planning_and_a_changed_one_plans(
    tmp_path: Path,
) -> None:
    calls: list[int] = []
    protocol, run, config = _counting(calls), tmp_path / "run", _config()
    first = driver.run(protocol, config, run, Execution(progress=False))
    assert first.ok > 0
    assert first.failed == 0
    assert len(calls) == 1
    before = _contents(run)
    again = driver.run(protocol, config, run, Execution(progress=False))
    assert len(calls) == 1  # the fingerprint matched: no plan, no model loaded, nothing run
    assert again.units == again.ok == 0
    assert set(again.stages) == set(first.stages)
    assert _contents(run) == before
    # a partly finished run (records lost) plans again and runs only what is missing
    with sqlite3.connect(run / "run.sqlite") as conn:
        conn.execute("DELETE FROM records WHERE id IN (SELECT id FROM records LIMIT 3)")
    conn.close()
    partly = driver.run(protocol, config, run, Execution(progress=False))
    assert len(calls) == 2
    assert partly.ok == 3
    assert _contents(run) == before
    # a changed config has another fingerprint: it plans
    changed = _config(levels_m=(250.0, 5.0))
    driver.run(protocol, changed, run, Execution(progress=False), allow_mismatch=True)
    assert len(calls) == 3


def test_load_run_selects_exactly_the_columns_and_rows_asked_for(tmp_path: Path) -> None:
    run = tmp_path / "run"
    driver.run(SWEEP, _config(), run, Execution(progress=False))
    full = load_run(run)
    columns = ["key", "model", "condition", "level_m", "answer", "internal_conf", "scene.id"]
    where = {"condition": ["fog", "blank"], "task": "verify", "status": "ok"}
    got = load_run(run, columns=columns, where=where)
    keep = full["condition"].isin(["fog", "blank"]) & (full["task"] == "verify")
    keep &= full["status"] == "ok"
    expected = full.loc[keep, columns].reset_index(drop=True)
    assert 0 < len(got) < len(full)
    pd.testing.assert_frame_equal(got, expected, check_categorical=False)
    # repeated text is categorical; a name no row has is left out; no row matches nothing
    assert isinstance(got["condition"].dtype, pd.CategoricalDtype)
    assert list(load_run(run, columns=["key", "no_such"]).columns) == ["key"]
    assert len(load_run(run, where={"condition": "no_such"})) == 0
    one_kind = load_run(run, kind="sweep.depth", columns=["protocol", "median_m"])
    assert list(one_kind["protocol"]) == ["sweep.depth"]


def test_a_column_only_some_chunks_have_is_read_across_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """All columns of a run whose kinds have different columns, read a few rows at a time (the
    paper-scale read of every column failed here: a numeric column that one chunk lacks)."""
    run = tmp_path / "run"
    driver.run(SWEEP, _config(), run, Execution(progress=False))
    whole = load_run(run)
    monkeypatch.setattr(_frames, "CHUNK", 4)  # the depth row's chunk lacks `target`
    chunked = load_run(run)
    assert len(chunked) == len(whole) > 4
    assert list(chunked.columns) == list(whole.columns)
    assert chunked["target"].isna().sum() == whole["target"].isna().sum() == 1
    pd.testing.assert_frame_equal(chunked, whole, check_categorical=False, check_dtype=False)


def test_a_store_of_another_schema_is_refused_by_a_reader_with_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    RunStore.open(run).close()
    with sqlite3.connect(run / "run.sqlite") as conn:
        conn.execute("UPDATE manifest SET value = '2' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(InputError, match=r"older clearsight \(run-store schema 2\)") as caught:
        load_run(run)
    assert "\n" not in str(caught.value)


@pytest.mark.slow
def test_the_paper_scale_benchmark_runs_at_five_scenes(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "paper_scale.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
        env={**os.environ, "CLEARSIGHT_CACHE": str(tmp_path)},
        cwd=ROOT,
    )
    figures = dict(line.split(": ") for line in out.stdout.splitlines() if ": " in line)
    assert int(figures["items"]) == 5 * 1800 + 5 * 5 + 5
    assert float(figures["store_bytes_per_item"]) < 2000
    assert float(figures["resume_s_finished_run"]) < 5
    assert (tmp_path / "paper_scale" / "instances.json").is_file()


def test_parts_flattened_once_give_the_frame_flattened_per_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """to_frame flattens a shared part (question, scene, physics, model options) once per
    chunk: the frame is the one flattening every row gives."""
    run = tmp_path / "run"
    driver.run(SWEEP, _config(), run, Execution(progress=False))
    monkeypatch.setattr(_frames, "CHUNK", 5)  # several chunks, a memo each
    once = load_run(run)
    assert "question.chance" in once.columns  # a part's field, flattened from the memo
    flatten = _frames._flatten

    def per_row(obj: dict[str, Any], prefix: str = "", **_: Any) -> dict[str, Any]:
        return flatten(obj, prefix)

    monkeypatch.setattr(_frames, "_flatten", per_row)
    pd.testing.assert_frame_equal(load_run(run), once)
