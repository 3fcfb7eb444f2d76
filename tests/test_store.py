"""The run store: round trips, resume semantics, config checks, export, and crash safety."""

from __future__ import annotations

import json
import math
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clearsight.seeding import content_hash
from clearsight.store import (
    DB_NAME,
    FRAME_COLUMNS,
    SCHEMA_VERSION,
    ConfigMismatch,
    Record,
    RunStore,
    StoredRecord,
    compact_json,
    load_run,
)
from clearsight.validate import InputError

CONFIG: dict[str, Any] = {"models": ["observer"], "levels": [1.0, 2.0], "seed": 0}


def _items(n: int, protocol: str = "sweep") -> list[tuple[str, str, dict[str, Any]]]:
    return [(f"k{i:05d}", protocol, {"scene": f"s{i % 3}", "level": i}) for i in range(n)]


def _ok(key: str, **readouts: Any) -> Record:
    return Record(key, "ok", None, {"text": f"answer {key}"}, readouts or {"p": 0.5}, 0.25)


def _failed(key: str, error: str = "RuntimeError: boom") -> Record:
    return Record(key, "failed", error, None, {}, 0.1)


@pytest.fixture
def store(tmp_path: Path):
    with RunStore.open(tmp_path / "runs" / "r") as s:
        s.begin_run({"config": CONFIG, "git_revision": "abc123"})
        yield s


# ------------------------------------------------------------------------------ round trips


def test_open_creates_wal_database_with_schema(tmp_path):
    run = tmp_path / "runs" / "new"
    with RunStore.open(run) as s:
        assert s.path == run / DB_NAME
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert s.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert s.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        tables = {r[0] for r in s.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert tables == {"manifest", "shapes", "kinds", "parts", "items", "records"}
        assert s.manifest() == {"schema_version": SCHEMA_VERSION}
        assert s.counts() == {"items": 0, "ok": 0, "failed": 0, "pending": 0}


def test_items_records_and_manifest_round_trip(tmp_path):
    run = tmp_path / "r"
    raw = {"texts": ["B"], "candidate_probs": {"A": 0.25, "B": 0.75}, "logprob": -math.inf}
    readouts = {"answer": "B", "letter_probs": {"A": 0.25, "B": 0.75}, "u": math.nan}
    with RunStore.open(run) as s:
        s.begin_run({"config": CONFIG, "packages": {"numpy": "2.0"}, "git_revision": "abc"})
        assert s.add_items(_items(3)) == 3
        assert s.add_items(_items(4)) == 1  # only k00003 is new
        s.write_records([Record("k00000", "ok", None, raw, readouts, 1.5), _failed("k00001")])
    with RunStore.open(run) as s:  # everything survived closing
        assert s.counts() == {"items": 4, "ok": 1, "failed": 1, "pending": 3}
        records = {r.key: r for r in s.iter_records()}
        manifest = s.manifest()
    ok = records["k00000"]
    assert isinstance(ok, StoredRecord)
    assert (ok.status, ok.error, ok.elapsed_s, ok.attempt) == ("ok", None, 1.5, 1)
    assert ok.protocol == "sweep"
    assert ok.spec == {"scene": "s0", "level": 0}
    assert ok.raw["texts"] == ["B"]
    assert ok.raw["logprob"] == -math.inf  # non-finite values survive exactly
    assert ok.readouts["letter_probs"] == {"A": 0.25, "B": 0.75}
    assert math.isnan(ok.readouts["u"])
    assert records["k00001"].error == "RuntimeError: boom"
    assert records["k00001"].raw is None
    assert manifest["config"] == CONFIG
    assert manifest["config_hash"] == content_hash(CONFIG)
    assert manifest["packages"] == {"numpy": "2.0"}
    assert manifest["git_revision"] == "abc"
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["history"] == []
    assert len(manifest["starts"]) == 1
    assert manifest["starts"][0]["config_hash"] == manifest["config_hash"]
    assert manifest["created_at"] == manifest["starts"][0]["started_at"]


def test_iter_records_filters_by_status_in_item_order(store):
    store.add_items(_items(5))
    store.write_records([_ok("k00004"), _failed("k00003"), _ok("k00000"), _failed("k00001")])
    assert [r.key for r in store.iter_records()] == ["k00000", "k00001", "k00003", "k00004"]
    assert [r.key for r in store.iter_records(status="failed")] == ["k00001", "k00003"]


def test_closed_store_says_so(tmp_path):
    s = RunStore.open(tmp_path / "r")
    s.close()
    s.close()  # idempotent
    with pytest.raises(InputError, match="closed"):
        s.counts()


# --------------------------------------------------------------------------- resume semantics


def test_pending_keys_before_and_after(store):
    store.add_items(_items(6))
    assert store.pending_keys() == [f"k{i:05d}" for i in range(6)]
    store.write_records([_ok("k00001"), _failed("k00002"), _ok("k00004")])
    assert store.pending_keys() == ["k00000", "k00002", "k00003", "k00005"]
    # Given keys: their order is kept, duplicates dropped, unknown keys count as pending.
    given = ["k00005", "k00004", "k00002", "k00005", "nope", "k00001"]
    assert store.pending_keys(given) == ["k00005", "k00002", "nope"]
    assert store.pending_keys([]) == []
    assert store.counts() == {"items": 6, "ok": 2, "failed": 1, "pending": 4}


def test_failed_record_is_pending_and_replaced_on_retry(store):
    store.add_items(_items(2))
    assert store.write_records([_failed("k00000", "TimeoutError: 30 s")]) == 1
    assert "k00000" in store.pending_keys()
    assert store.write_records([_failed("k00000", "TimeoutError: 60 s")]) == 1
    (again,) = list(store.iter_records())
    assert (again.status, again.error, again.attempt) == ("failed", "TimeoutError: 60 s", 2)
    assert store.write_records([_ok("k00000", p=0.9)]) == 1
    (done,) = list(store.iter_records())
    assert (done.status, done.error, done.attempt) == ("ok", None, 3)
    assert done.readouts == {"p": 0.9}
    assert store.pending_keys() == ["k00001"]
    assert store.counts() == {"items": 2, "ok": 1, "failed": 0, "pending": 1}


def test_an_ok_record_is_final(store):
    store.add_items(_items(1))
    store.write_records([_ok("k00000", p=0.1)])
    # A duplicate delivery (or a late failure) of a finished item changes nothing.
    assert store.write_records([_ok("k00000", p=0.2), _failed("k00000")]) == 0
    (record,) = list(store.iter_records())
    assert (record.status, record.readouts, record.attempt) == ("ok", {"p": 0.1}, 1)


def test_write_records_is_all_or_nothing(store):
    store.add_items(_items(2))
    with pytest.raises(InputError, match=r"not items.*'ghost'"):
        store.write_records([_ok("k00000"), _ok("ghost")])
    assert store.counts()["ok"] == 0  # the good record of the batch was rolled back too
    with pytest.raises(InputError, match="not JSON-able"):
        store.write_records([_ok("k00000"), Record("k00001", "ok", None, {1, 2}, {}, 0.0)])
    assert store.counts()["ok"] == 0


def test_records_numpy_values_are_stored_as_json(store):
    np = pytest.importorskip("numpy")
    store.add_items(_items(1))
    raw = {"probs": np.array([0.25, 0.75], dtype=np.float32)}
    store.write_records([Record("k00000", "ok", None, raw, {"n": np.int64(3)}, 0.0)])
    (record,) = list(store.iter_records())
    assert record.raw == {"probs": [0.25, 0.75]}
    assert record.readouts == {"n": 3}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("k", "done", None, {}, {}, 0.0), "status must be 'ok' or 'failed'"),
        (("k", "ok", "oops", {}, {}, 0.0), "error None"),
        (("k", "failed", None, {}, {}, 0.0), "needs an error message"),
        (("k", "ok", None, {}, [], 0.0), "readouts must be a mapping"),
        (("k", "ok", None, {}, {}, -1.0), "elapsed_s must be >= 0"),
        (("", "ok", None, {}, {}, 0.0), "non-empty string"),
    ],
)
def test_record_validation(args, message):
    with pytest.raises(InputError, match=message):
        Record(*args)


def test_record_finished_at_is_utc_iso(store):
    store.add_items(_items(1))
    store.write_records([_ok("k00000")])
    (record,) = list(store.iter_records())
    assert record.finished_at.endswith("+00:00")
    with pytest.raises(InputError, match="ISO-8601"):
        Record("k", "ok", None, {}, {}, 0.0, finished_at="yesterday")


def test_add_items_skips_stored_keys_without_reencoding(store):
    # a key is the content hash of its spec: a stored key is the same item, so re-adding it
    # (even with a spec that claims otherwise) neither re-encodes nor replaces the stored one
    store.add_items([("a", "sweep", {"x": 1, "y": 2})])
    assert store.add_items([("a", "sweep", {"y": 2, "x": 1})]) == 0
    assert store.add_items([("b", "sweep", {}), ("a", "sweep", {"x": 1, "y": 3})]) == 1
    assert store.counts()["items"] == 2
    store.write_records([_ok("a")])
    stored = store.record("a")
    assert stored is not None
    assert stored.spec == {"x": 1, "y": 2}
    with pytest.raises(InputError, match="spec must be a mapping"):
        store.add_items([("c", "sweep", [1, 2])])  # type: ignore[list-item]


# ------------------------------------------------------------------------- manifest & config


def test_config_mismatch_names_both_hashes(tmp_path):
    run = tmp_path / "r"
    with RunStore.open(run) as s:
        s.begin_run({"config": CONFIG})
        s.add_items(_items(1))
        s.write_records([_ok("k00000")])
    changed = {**CONFIG, "seed": 1, "workers": 4}
    with RunStore.open(run) as s, pytest.raises(ConfigMismatch) as info:
        s.begin_run({"config": changed})
    err = info.value
    assert isinstance(err, InputError)
    old, new = content_hash(CONFIG), content_hash(changed)
    assert (err.old_hash, err.new_hash) == (old, new)
    message = str(err)
    assert old in message
    assert new in message
    assert "seed: 0 -> 1" in message
    assert "workers added (4)" in message
    assert "levels" not in message  # unchanged keys are not listed
    assert "--fresh" in message
    assert "--allow-mismatch" in message
    with RunStore.open(run) as s:  # the failed begin_run changed nothing
        assert s.manifest()["config_hash"] == old
        assert len(s.manifest()["starts"]) == 1


def test_allow_mismatch_continues_and_keeps_history(tmp_path):
    run = tmp_path / "r"
    with RunStore.open(run) as s:
        s.begin_run({"config": CONFIG, "git_revision": "old"})
        s.add_items(_items(2))
        s.write_records([_ok("k00000")])
    changed = {**CONFIG, "seed": 7}
    with RunStore.open(run) as s:
        s.begin_run({"config": changed, "git_revision": "new"}, allow_mismatch=True)
        manifest = s.manifest()
        assert s.counts() == {"items": 2, "ok": 1, "failed": 0, "pending": 1}
    assert manifest["config"] == changed
    assert manifest["config_hash"] == content_hash(changed)
    assert manifest["git_revision"] == "new"
    (previous,) = manifest["history"]
    assert previous["config"] == CONFIG
    assert previous["config_hash"] == content_hash(CONFIG)
    assert previous["git_revision"] == "old"
    assert "superseded_at" in previous
    assert [s["config_hash"] for s in manifest["starts"]] == [
        content_hash(CONFIG),
        content_hash(changed),
    ]
    assert manifest["created_at"] == manifest["starts"][0]["started_at"]


def test_resume_with_same_config_updates_manifest(tmp_path):
    run = tmp_path / "r"
    with RunStore.open(run) as s:
        s.begin_run({"config": CONFIG, "packages": {"numpy": "1"}, "note": "first"})
        s.add_items(_items(1))
        s.write_records([_ok("k00000")])
    with RunStore.open(run) as s:
        s.begin_run({"config": dict(reversed(CONFIG.items())), "packages": {"numpy": "2"}})
        manifest = s.manifest()
    assert manifest["packages"] == {"numpy": "2"}
    assert "note" not in manifest  # top-level entries are those of the latest start
    assert manifest["history"] == []
    assert len(manifest["starts"]) == 2


def test_config_change_without_records_is_accepted(tmp_path):
    with RunStore.open(tmp_path / "r") as s:
        s.begin_run({"config": CONFIG})
        s.add_items(_items(1))
        s.begin_run({"config": {"other": True}})
        assert s.manifest()["config_hash"] == content_hash({"other": True})
        assert s.manifest()["history"][0]["config_hash"] == content_hash(CONFIG)


def test_begin_run_checks_the_manifest(store):
    with pytest.raises(InputError, match="must hold 'config'"):
        store.begin_run({"git_revision": "x"})
    with pytest.raises(InputError, match="written by the store"):
        store.begin_run({"config": {}, "config_hash": "forged"})
    with pytest.raises(InputError, match="not JSON-able"):
        store.begin_run({"config": {"bad": object()}})


def test_fresh_wipes_the_run(tmp_path):
    run = tmp_path / "r"
    with RunStore.open(run) as s:
        s.begin_run({"config": CONFIG})
        s.add_items(_items(3))
        s.write_records([_ok("k00000")])
        # While the writer is open its -wal/-shm exist: fresh must remove those too.
        with RunStore.open(run, fresh=False, read_only=True) as r:
            assert r.counts()["items"] == 3
    with RunStore.open(run, fresh=True) as s:
        assert s.counts() == {"items": 0, "ok": 0, "failed": 0, "pending": 0}
        assert s.manifest() == {"schema_version": SCHEMA_VERSION}
        s.begin_run({"config": {"seed": 99}})  # no mismatch: the old records are gone


# ------------------------------------------------------------------ concurrency & read-only


def test_reader_reads_while_writer_holds_a_transaction(store):
    store.add_items(_items(3))
    store.write_records([_ok("k00000")])
    with RunStore.open(store.path, read_only=True) as reader:
        with store._write() as conn:  # the writer is mid-transaction
            conn.execute("INSERT INTO records VALUES (2, 'ok', NULL, '[0]', '[0]', 0, 'now', 1)")
            assert reader.counts()["ok"] == 1  # readers see the last commit, without waiting
        assert reader.counts()["ok"] == 2
        assert reader.pending_keys() == ["k00002"]
        with pytest.raises(InputError, match="read-only"):
            reader.write_records([_ok("k00002")])
        with pytest.raises(InputError, match="read-only"):
            reader.begin_run({"config": {}})


def test_a_reader_reads_records_of_shapes_written_after_it_opened(store):
    """Raw outputs and read-outs whose key names the writer stored after a reader loaded the
    shapes read back (the reader catches up), in records, pages, raw outputs and frames."""
    store.add_items(_items(2))
    store.write_records([_ok("k00000")])
    with RunStore.open(store.path, read_only=True) as reader:
        assert [r.readouts for r in reader.iter_records()] == [{"p": 0.5}]
        late = Record("k00001", "ok", None, {"late": [{"nested": 1}]}, {"fresh": 2}, 0.0)
        store.write_records([late])
        got = reader.record("k00001")
        assert got is not None
        assert (got.raw, got.readouts) == (late.raw, late.readouts)
    both = [{"p": 0.5}, {"fresh": 2}]
    reads = [
        (lambda r: [x.readouts for x in r.iter_records()], both),
        (lambda r: [x.readouts for x in r.records_page(0, 5)], both),
        (lambda r: r.raw_outputs(["k00001"]), {"k00001": {"late": [{"nested": 1}]}}),
        (lambda r: r.to_frame()["fresh"].tolist()[1], 2),
    ]
    for read, expected in reads:
        with RunStore.open(store.path, read_only=True) as reader:
            reader._tables.shapes.keys.clear()  # as if loaded before the writer's shapes
            reader._tables.shapes.ids.clear()
            assert read(reader) == expected


# ------------------------------------------------------------------------ frames & export


def _frame_store(store: RunStore) -> RunStore:
    store.add_items(
        [
            ("a", "sweep", {"scene": "cat", "level": 1, "decode": {"t": 0.0}, "status": "x"}),
            ("b", "sweep", {"scene": "dog", "level": 2, "decode": {"t": 0.5}, "status": "y"}),
            ("c", "sweep", {"scene": "eel", "level": 3, "decode": {"t": 1.0}, "status": "z"}),
        ]
    )
    readouts = {
        "answer": "A",
        "letter_probs": {"A": 0.75, "B": 0.25},
        "level": 10,
        "options": ["A", "B"],
    }
    store.write_records(
        [
            Record("a", "ok", None, {"texts": ["A"]}, readouts, 0.5),
            Record("b", "failed", "ValueError: bad image", None, {}, 0.125),
        ]
    )
    return store


# ------------------------------------------------------------------------ reads by kind


def _kinds_store(store: RunStore) -> RunStore:
    """Three sweep items (one failed, retried), a V_eq item, two probe items (one failed), and
    a probe.build item without a record, added in this order."""
    store.add_items(
        [
            ("s1", "sweep", {"scene": "cat", "level": 1.5}),
            ("v1", "sweep.veq", {"scene": "cat", "severity": 3}),
            ("p1", "probe", {"instance": "ü", "run": 0}),
            ("s2", "sweep", {"scene": "dog", "level": math.nan}),
            ("p2", "probe", {"instance": "q", "run": 1}),
            ("s3", "sweep", {"scene": "eel", "level": 3.0}),
            ("b1", "probe.build", {"samples": 11}),
        ]
    )
    store.write_records(
        [
            Record("s1", "ok", None, {"texts": ["A"]}, {"answer": "A"}, 0.5),
            Record("v1", "ok", None, {}, {"v_eq_m": 62.5}, 0.25),
            Record("p1", "failed", "RuntimeError: sensor", {"turns": [1]}, {"rounds": 1}, 0.1),
            Record("s2", "failed", "ValueError: bad image", None, {}, 0.125),
            Record("p2", "ok", None, {"turns": [1, 2]}, {"rounds": 2}, 1.0),
            Record("s3", "ok", None, {"texts": ["C"]}, {"answer": "C"}, 0.75),
        ]
    )
    store.write_records([Record("s2", "ok", None, {"texts": ["B"]}, {"answer": "B"}, 0.5)])
    return store


def test_item_kinds_and_records_per_kind(store: RunStore) -> None:
    _kinds_store(store)
    assert store.item_kinds() == ["probe", "probe.build", "sweep", "sweep.veq"]
    assert store.records_per_kind() == {"probe": 2, "sweep": 3, "sweep.veq": 1}
    assert store.count_records() == 6
    assert store.count_records(status="failed") == 1
    assert store.count_records(kind="sweep") == 3
    assert store.count_records(status="ok", kind="probe") == 1
    assert store.count_records(kind="probe.build") == 0
    assert store.count_records(status="nope") == 0


def test_iter_records_by_kind_and_without_raw(store: RunStore) -> None:
    _kinds_store(store)
    assert [r.key for r in store.iter_records(kind="sweep")] == ["s1", "s2", "s3"]
    assert [r.key for r in store.iter_records("failed")] == ["p1"]
    assert [r.key for r in store.iter_records("ok", kind="probe")] == ["p2"]
    (p1,) = store.iter_records(kind="probe", status="failed", raw=False)
    assert (p1.raw, p1.readouts, p1.spec, p1.error) == (
        None,
        {"rounds": 1},
        {"instance": "ü", "run": 0},
        "RuntimeError: sensor",
    )
    (p2,) = store.iter_records("ok", kind="probe")
    assert p2.raw == {"turns": [1, 2]}


def test_item_specs_of_a_kind_of_its_finished_items_and_of_some_keys(store: RunStore) -> None:
    _kinds_store(store)
    assert [key for key, _ in store.item_specs("probe")] == ["p1", "p2"]
    assert [key for key, _ in store.item_specs("probe", ok=True)] == ["p2"]  # p1 failed
    assert list(store.item_specs("probe.build", ok=True)) == []  # no record
    some = list(store.item_specs("sweep", keys=["s3", "nope", "p2", "s1"]))
    assert some == [("s1", {"scene": "cat", "level": 1.5}), ("s3", {"scene": "eel", "level": 3.0})]
    assert list(store.item_specs("sweep", keys=[])) == []
    assert [key for key, _ in store.item_specs("sweep", ok=True, keys=["s2"])] == ["s2"]
    whole = list(store.item_specs("sweep"))
    assert [key for key, _ in whole] == ["s1", "s2", "s3"]
    assert repr(list(store.item_specs("sweep", shared=True))) == repr(whole)  # NaN level too


def test_records_page_counts_from_an_offset_in_item_order(store: RunStore) -> None:
    _kinds_store(store)
    assert [r.key for r in store.records_page(0, 4)] == ["s1", "v1", "p1", "s2"]
    assert [r.key for r in store.records_page(4, 4)] == ["p2", "s3"]
    assert store.records_page(6, 4) == []
    page = store.records_page(1, 5, kind="sweep")
    assert [(r.key, r.status, r.attempt) for r in page] == [("s2", "ok", 2), ("s3", "ok", 1)]
    assert all(r.raw is None for r in page)  # a page never reads raw outputs
    assert math.isnan(page[0].spec["level"])
    assert [r.key for r in store.records_page(0, 9, status="ok", kind="sweep")] == [
        "s1",
        "s2",
        "s3",
    ]


def test_one_record_by_key_and_raw_outputs_of_keys(store: RunStore) -> None:
    _kinds_store(store)
    s2 = store.record("s2")
    assert s2 is not None
    assert (s2.protocol, s2.status, s2.error, s2.attempt, s2.elapsed_s) == (
        "sweep",
        "ok",
        None,
        2,
        0.5,
    )
    assert (s2.raw, s2.readouts) == ({"texts": ["B"]}, {"answer": "B"})
    assert store.record("b1") is None  # an item without a record
    assert store.record("missing") is None
    assert store.raw_outputs(["s3", "missing", "p1"]) == {
        "s3": {"texts": ["C"]},
        "p1": {"turns": [1]},
    }
    assert store.raw_outputs([]) == {}


def test_to_frame_of_one_kind_has_that_kinds_columns(store: RunStore) -> None:
    _kinds_store(store)
    veq = store.to_frame(kind="sweep.veq")
    assert list(veq["key"]) == ["v1"]
    assert [c for c in veq.columns if c not in FRAME_COLUMNS] == ["scene", "severity", "v_eq_m"]
    assert veq["v_eq_m"].tolist() == [62.5]
    ok_sweep = store.to_frame(status="ok", kind="sweep", include_raw=True)
    assert list(ok_sweep["key"]) == ["s1", "s2", "s3"]
    assert list(ok_sweep["answer"]) == ["A", "B", "C"]
    assert [json.loads(r) for r in ok_sweep["raw"]] == [{"texts": [t]} for t in "ABC"]
    assert list(store.to_frame(status="failed")["key"]) == ["p1"]


def test_compact_json_reproduces_the_stored_values(store: RunStore) -> None:
    # specs read back encode to the text of the specs as added, key order and NaN kept
    _kinds_store(store)
    by_key = {record.key: compact_json(record.spec) for record in store.iter_records(raw=False)}
    assert by_key["s2"] == '{"scene":"dog","level":NaN}'
    assert by_key["p1"] == '{"instance":"ü","run":0}'
    # what is stored is packed: the key names live once in the shapes table
    (text,) = store.conn.execute("SELECT spec FROM items WHERE key = 's2'").fetchone()
    assert "scene" not in text


def test_a_corrupted_raw_output_names_its_record(store: RunStore) -> None:
    _kinds_store(store)
    store.conn.execute(
        "UPDATE records SET raw = '{oops' WHERE id = (SELECT id FROM items WHERE key = 's3')"
    )
    with pytest.raises(InputError, match="table records, key s3, column raw"):
        store.record("s3")
    with pytest.raises(InputError, match="table records, key s3, column raw"):
        store.raw_outputs(["s3"])
    assert [r.key for r in store.iter_records(kind="sweep", raw=False)] == ["s1", "s2", "s3"]


def test_no_sql_outside_the_store() -> None:
    """Only the store package talks SQLite: everything else reads the run through RunStore's
    methods and the viewer's side index through typed Select values (store/_side.py)."""
    src = Path(__file__).resolve().parents[1] / "src" / "clearsight"
    sql = re.compile(
        r"\bsqlite3\b|\.conn\b|\.execute(many)?\(|"
        r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+TABLE)\b"
    )
    found = [
        f"{path.relative_to(src)}:{number}: {line.strip()}"
        for path in sorted(src.rglob("*.py"))
        if path.parent != src / "store"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if sql.search(line)
    ]
    assert found == []


def test_to_frame_flattens_spec_and_readouts(store):
    frame = _frame_store(store).to_frame()
    assert list(frame.columns) == [
        "key",
        "protocol",
        "status",
        "error",
        "elapsed_s",
        "finished_at",
        "attempt",
        "scene",
        "level",
        "decode.t",
        "spec.status",  # collides with a fixed column
        "answer",
        "letter_probs.A",
        "letter_probs.B",
        "readouts.level",  # collides with a spec field
        "options",
    ]
    assert list(frame["key"]) == ["a", "b"]  # "c" has no record yet
    a, b = frame.iloc[0], frame.iloc[1]
    assert (a["status"], a["spec.status"], a["level"], a["readouts.level"]) == ("ok", "x", 1, 10)
    assert a["letter_probs.A"] == 0.75
    assert a["letter_probs.B"] == 0.25
    assert a["decode.t"] == 0.0
    assert json.loads(a["options"]) == ["A", "B"]
    assert pd.isna(a["error"])
    assert b["error"] == "ValueError: bad image"
    assert pd.isna(b["letter_probs.A"])
    assert b["elapsed_s"] == 0.125
    assert "raw" not in frame.columns
    with_raw = store.to_frame(include_raw=True)
    assert list(with_raw.columns) == [*frame.columns, "raw"]
    assert json.loads(with_raw["raw"].iloc[0]) == {"texts": ["A"]}
    assert json.loads(with_raw["raw"].iloc[1]) is None


def test_to_frame_of_an_empty_run_has_the_fixed_columns(store):
    frame = store.to_frame()
    assert len(frame) == 0
    assert list(frame.columns) == [
        "key",
        "protocol",
        "status",
        "error",
        "elapsed_s",
        "finished_at",
        "attempt",
    ]


def test_export_parquet_and_csv_read_back_equal(store, tmp_path):
    frame = _frame_store(store).to_frame()
    parquet = store.export(tmp_path / "out" / "records.parquet")
    assert parquet == tmp_path / "out" / "records.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(parquet), frame)
    csv = store.export(tmp_path / "records.txt", "csv", include_raw=True)
    # Read with only empty cells as NA, so a raw output of JSON "null" stays the text "null".
    back = pd.read_csv(csv, keep_default_na=False, na_values=[""])
    expected = store.to_frame(include_raw=True)
    for column in expected.select_dtypes("category"):  # CSV has no categoricals: compare text
        expected[column] = expected[column].astype(object)
    pd.testing.assert_frame_equal(back, expected, check_dtype=False)
    with pytest.raises(InputError, match="export format"):
        store.export(tmp_path / "records.xlsx")


def test_load_run_from_directory_and_file(store):
    expected = _frame_store(store).to_frame()
    run_dir = store.path.parent
    pd.testing.assert_frame_equal(load_run(run_dir), expected)  # while the writer is open
    pd.testing.assert_frame_equal(load_run(str(store.path)), expected)
    store.close()
    pd.testing.assert_frame_equal(load_run(run_dir), expected)
    assert "raw" in load_run(run_dir, include_raw=True).columns


def test_load_run_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_run(tmp_path / "missing")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(InputError, match="does not exist"):
        load_run(tmp_path / "empty_dir")
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database at all, just some text that is long enough " * 20)
    with pytest.raises(InputError, match="not a clearsight run"):
        load_run(text)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    with pytest.raises(InputError, match="not a clearsight run"):
        load_run(other)
    with pytest.raises(InputError, match="not a clearsight run"):
        RunStore.open(other)  # the writer will not adopt another application's database
    sqlite3.connect(tmp_path / "blank.sqlite").close()
    with pytest.raises(InputError, match="empty database"):
        load_run(tmp_path / "blank.sqlite")


def test_a_run_directory_may_end_in_sqlite(tmp_path):
    run = tmp_path / "odd.sqlite"
    with RunStore.open(run) as s:
        assert s.path == run / DB_NAME
        s.begin_run({"config": CONFIG})
        s.add_items(_items(1))
        s.write_records([_ok("k00000")])
    assert list(load_run(run)["key"]) == ["k00000"]
    assert list(load_run(run / DB_NAME)["key"]) == ["k00000"]


def test_schema_version_is_checked(tmp_path):
    run = tmp_path / "r"
    RunStore.open(run).close()
    with sqlite3.connect(run / DB_NAME) as conn:
        conn.execute("UPDATE manifest SET value = '999' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(InputError, match="schema version 999"):
        RunStore.open(run)
    with pytest.raises(InputError, match="schema version 999"):
        load_run(run)


# -------------------------------------------------------------------------------- crashes

_WRITER = """
import sys
from pathlib import Path
from clearsight.store import Record, RunStore

run, batch = Path(sys.argv[1]), int(sys.argv[2])
with RunStore.open(run) as store:
    keys = store.pending_keys()
    for start in range(0, len(keys), batch):
        chunk = keys[start : start + batch]
        store.write_records(
            [Record(k, "ok", None, {"text": k * 40}, {"batch": start // batch}, 0.0) for k in chunk]
        )
        print(start // batch, flush=True)
"""

# Same writer, but it kills itself with SIGKILL from inside SQLite, right after the insert of
# one chosen row, i.e. in the middle of a transaction whose pages already spill into the WAL.
_SELF_KILLING_WRITER = """
import os, signal, sys
from pathlib import Path
from clearsight.store import Record, RunStore

run, batch, die_at = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
wal = Path(str(run / "run.sqlite") + "-wal")
with RunStore.open(run) as store:
    store.conn.execute("PRAGMA cache_size = -64")  # 64 KiB of cache: a batch must spill
    store.conn.create_function("die", 0, lambda: os.kill(os.getpid(), signal.SIGKILL))
    store.conn.execute(
        "CREATE TEMP TRIGGER die AFTER INSERT ON main.records "
        f"WHEN NEW.id = (SELECT id FROM items WHERE key = '{die_at}') BEGIN SELECT die(); END"
    )
    keys = store.pending_keys()
    for start in range(0, len(keys), batch):
        chunk = keys[start : start + batch]
        raw = [{"text": k * 600} for k in chunk]
        store.write_records(
            [Record(k, "ok", None, r, {"batch": start // batch}, 0.0) for k, r in zip(chunk, raw)]
        )
        print(wal.stat().st_size, flush=True)
"""


def _setup_run(run: Path, n: int) -> None:
    with RunStore.open(run) as s:
        s.begin_run({"config": {"n": n}})
        s.add_items(_items(n))


def _check_after_crash(run: Path, batch: int) -> int:
    """Assert the store holds whole batches only and is intact; return the number of records."""
    with RunStore.open(run) as s:
        assert s.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert s.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        records = list(s.iter_records())
    sizes = Counter(r.readouts["batch"] for r in records)
    assert set(sizes.values()) <= {batch}, "a batch was partly written"
    assert sorted(sizes) == list(range(len(sizes))), "batches are committed in order"
    for r in records:  # no torn rows: every stored value is complete
        assert r.status == "ok"
        assert r.raw["text"].startswith(r.key)
        assert len(r.raw["text"]) % len(r.key) == 0
    return len(records)


def _resume(run: Path, n: int) -> None:
    """Finish the run in-process and check every item has exactly one ok record."""
    with RunStore.open(run) as s:
        pending = s.pending_keys()
        for start in range(0, len(pending), 1000):
            s.write_records([_ok(k) for k in pending[start : start + 1000]])
        assert s.counts() == {"items": n, "ok": n, "failed": 0, "pending": 0}
        assert s.pending_keys() == []
        keys = [r.key for r in s.iter_records()]
        assert sorted(keys) == [f"k{i:05d}" for i in range(n)]  # each once
        assert {r.attempt for r in s.iter_records()} == {1}


@pytest.mark.slow
def test_sigkill_mid_run_keeps_whole_batches_and_resumes(tmp_path):
    run, n, batch = tmp_path / "r", 20_000, 10
    _setup_run(run, n)
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(run), str(batch)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    for line in child.stdout:  # let it commit some batches, then kill it at a random point
        if int(line) >= 30:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    written = _check_after_crash(run, batch)
    assert 31 * batch <= written < n
    _resume(run, n)


@pytest.mark.slow
def test_sigkill_inside_a_transaction_loses_only_that_batch(tmp_path):
    run, n, batch = tmp_path / "r", 400, 50
    _setup_run(run, n)
    die_at = f"k{3 * batch + 40:05d}"  # row 40 of the fourth batch
    child = subprocess.run(
        [sys.executable, "-c", _SELF_KILLING_WRITER, str(run), str(batch), die_at],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    committed_wal_sizes = [int(line) for line in child.stdout.split()]
    assert len(committed_wal_sizes) == 3
    wal = Path(f"{run / DB_NAME}-wal")
    # The killed transaction had already written pages to the WAL; recovery must ignore them.
    assert wal.stat().st_size > committed_wal_sizes[-1]
    assert _check_after_crash(run, batch) == 3 * batch
    _resume(run, n)


# ---------------------------------------------------------------------------------- speed


@pytest.mark.slow
def test_pending_keys_is_fast_for_100k_items(tmp_path):
    n = 100_000
    with RunStore.open(tmp_path / "r") as s:
        s.begin_run({"config": {}})
        items = [(f"{i:064x}", "sweep", {"i": i}) for i in range(n)]
        s.add_items(items)
        keys = [key for key, _, _ in items]
        for start in range(0, n, 20_000):  # every third item done, every seventh failed
            s.write_records(
                [
                    _failed(k) if i % 7 == 0 else _ok(k)
                    for i, k in enumerate(keys[start : start + 20_000], start)
                    if i % 3 == 0 or i % 7 == 0
                ]
            )
        expected = [k for i, k in enumerate(keys) if not (i % 3 == 0 and i % 7 != 0)]
        started = time.perf_counter()
        all_pending = s.pending_keys()
        all_elapsed = time.perf_counter() - started
        started = time.perf_counter()
        given_pending = s.pending_keys(keys)
        given_elapsed = time.perf_counter() - started
    assert all_pending == expected
    assert given_pending == expected
    assert all_elapsed < 2.0
    assert given_elapsed < 2.0
