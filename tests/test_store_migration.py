"""Runs of older run-store schemas still load, report and resume: those written before typed
specs (schema 1) and those whose items table declared its key unique inline (schema 3).

A writer migrates them on open (schema 1 re-keyed, then repacked into the compact layout;
schema 3's items table rebuilt with a named key index); a reader refuses them with one line
that says how to migrate.

The fixtures in ``tests/fixtures/schema1`` are SQL dumps of runs made by clearsight at commit
3540399 (the last schema-1 version; how: ``tests/fixtures/schema1/README.md``): a sweep of two
bundled scenes with every control, a probe run with both post-hoc analyses, and a grounding
run of a tiny Llama. ``tests/fixtures/schema3`` holds a sweep made at commit 317fd74 (how: its
README).
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from clearsight.specs import json_key
from clearsight.store import SCHEMA_VERSION, ConfigMismatch, RunStore
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.sweep.config import SweepConfig

FIXTURES = Path(__file__).parent / "fixtures" / "schema1"
SCHEMA3 = FIXTURES.parent / "schema3"


def _old_sweep_config(**changes: Any) -> SweepConfig:
    """The stored sweeps' configuration as their runs resume it today: they show ImageNet-C
    images drawn with one plasma per scene, so ``imagenet_c_plasma: common`` (the default draws
    each severity on its own), a field their stored configuration lacks: the resume allows the
    mismatch, and every item keeps its key."""
    from clearsight.sweep.config import SweepConfig

    fields = yaml.safe_load((FIXTURES / "sweep.yaml").read_text())
    return SweepConfig(**{**fields, "imagenet_c_plasma": "common", **changes})


def restore(name: str, run: Path, fixtures: Path = FIXTURES) -> Path:
    """The run ``name`` (of schema 1, or of the schema of ``fixtures``) restored from its dump
    into ``run``."""
    run.mkdir(parents=True)
    conn = sqlite3.connect(run / "run.sqlite")
    conn.executescript(gzip.decompress((fixtures / f"{name}.sql.gz").read_bytes()).decode())
    conn.close()
    return run


def rows(run: Path) -> dict[str, tuple[str, Any, Any, Any]]:
    """key -> (kind, spec, raw, readouts) of every item and its record: read with plain SQL
    from a schema-1 run, through the store from a migrated one."""
    if version(run) == SCHEMA_VERSION:
        with RunStore.open(run, read_only=True) as store:
            return {
                r.key: (r.protocol, r.spec, r.raw, dict(r.readouts)) for r in store.iter_records()
            }
    conn = sqlite3.connect(run / "run.sqlite")
    got = {
        key: (kind, json.loads(spec), json.loads(raw), json.loads(readouts))
        for key, kind, spec, raw, readouts in conn.execute(
            "SELECT i.key, i.protocol, i.spec, r.raw, r.readouts FROM items AS i "
            "JOIN records AS r ON r.key = i.key"
        )
    }
    conn.close()
    return got


def version(run: Path) -> int:
    conn = sqlite3.connect(run / "run.sqlite")
    (value,) = conn.execute("SELECT value FROM manifest WHERE key = 'schema_version'").fetchone()
    conn.close()
    return int(json.loads(value))


def rekeyed(before: dict[str, Any]) -> dict[str, Any]:
    """``before`` under the keys of the one recipe."""
    return {json_key(kind, spec): (kind, spec, *rest) for kind, spec, *rest in before.values()}


def test_a_schema_1_sweep_reports_then_resumes_with_nothing_to_do(tmp_path: Path) -> None:
    from clearsight.sweep.plan import plan_sweep
    from clearsight.sweep.protocol import run_sweep
    from clearsight.sweep.results import load_run_data

    run = restore("sweep", tmp_path / "sweep")
    before = rows(run)
    with pytest.raises(InputError, match=r"older clearsight \(run-store schema 1\); rerun the"):
        load_run_data(run)  # a reader does not migrate: it says how to
    assert version(run) == 1
    with RunStore.open(run):  # the writer migrates
        pass
    read = load_run_data(run)
    assert len(read.records) == sum(kind == "sweep" for kind, *_ in before.values())
    config = _old_sweep_config()
    summary = run_sweep(config, run, progress=False, allow_mismatch=True)
    # every planned item is found done under its new key; only the depth profiles, which runs
    # of that time did not store, are new (one per scene)
    assert {k: s.units for k, s in summary.stages.items() if k != "sweep.depth"} == {
        "sweep": 0,
        "sweep.veq": 0,
    }
    assert summary.stages["sweep.depth"].ok == summary.ok == read.records["scene"].nunique()
    assert version(run) == SCHEMA_VERSION == 4
    after = {k: row for k, row in rows(run).items() if row[0] != "sweep.depth"}
    assert after == rekeyed(before)
    # question keys now include their kind and parts; ImageNet-C ones were [kind, spec] already
    for kind, moved in (("sweep", True), ("sweep.veq", False)):
        old = {k for k, row in before.items() if row[0] == kind}
        new = {k for k, row in after.items() if row[0] == kind}
        assert old
        assert old.isdisjoint(new) if moved else old == new
    assert set(after) == {
        item.key for item in plan_sweep(config).items if item.kind != "sweep.depth"
    }
    again = load_run_data(run)
    ident = ["scene", "target", "condition", "level_m", "severity", "task", "asked", "wording"]
    cols = [*ident, "answer", "correct", "abstained", "internal_conf", "verbal_conf"]
    old = read.records.sort_values(ident)[cols].reset_index(drop=True)
    new = again.records.sort_values(ident)[cols].reset_index(drop=True)
    assert old.equals(new)


def test_a_schema_1_probe_run_keeps_its_keys_and_references(tmp_path: Path) -> None:
    from clearsight.probe.results import load_probe_results

    run = restore("probe", tmp_path / "probe")
    before = rows(run)
    with RunStore.open(run):  # the writer migrates
        pass
    results = load_probe_results(run)
    assert version(run) == SCHEMA_VERSION
    after = rows(run)
    assert after == before  # probe kinds were keyed content_hash([kind, spec]) already
    transcripts = {k for k, (kind, *_) in after.items() if kind == "probe"}
    named = {spec["transcript"] for kind, spec, *_ in after.values() if kind != "probe"}
    assert named
    assert named <= transcripts
    beliefs = [readouts for kind, _, _, readouts in before.values() if kind == "probe.belief"]
    assert len(results.beliefs) == len(beliefs) > 0


def test_a_schema_1_grounding_run_is_rekeyed_with_its_records(tmp_path: Path) -> None:
    from clearsight.grounding.results import load_grounding_results

    run = restore("grounding", tmp_path / "grounding")
    before = rows(run)
    with RunStore.open(run):
        pass
    after = rows(run)
    assert after == rekeyed(before)
    assert set(after).isdisjoint(before)
    results = load_grounding_results(run)
    elicit = [spec for kind, spec, *_ in before.values() if kind == "grounding.elicit"]
    assert len(results.elicitations) == len(elicit) > 0


def test_a_migration_that_fails_changes_nothing(tmp_path: Path) -> None:
    run = restore("sweep", tmp_path / "sweep")
    conn = sqlite3.connect(run / "run.sqlite")
    (key,) = conn.execute("SELECT key FROM items LIMIT 1 OFFSET 7").fetchone()
    conn.execute("UPDATE items SET spec = '{not json' WHERE key = ?", (key,))
    conn.commit()
    conn.close()
    before = rows_without(run, key)
    with pytest.raises(InputError, match=f"table items, key {key}, column spec"):
        RunStore.open(run)
    assert version(run) == 1
    assert rows_without(run, key) == before


def rows_without(run: Path, key: str) -> dict[str, Any]:
    conn = sqlite3.connect(run / "run.sqlite")
    got = dict(conn.execute("SELECT key, spec FROM items WHERE key <> ?", (key,)).fetchall())
    conn.close()
    return got


def test_a_schema_3_sweep_keeps_every_row_and_resumes_with_nothing_to_do(tmp_path: Path) -> None:
    from clearsight.sweep.protocol import run_sweep
    from clearsight.sweep.results import load_run_data

    run = restore("sweep", tmp_path / "sweep", SCHEMA3)

    def table(name: str) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(run / "run.sqlite")
        got = conn.execute(f"SELECT * FROM {name} ORDER BY id").fetchall()
        conn.close()
        return got

    items, records = table("items"), table("records")
    assert version(run) == 3
    assert len(records) == 204
    with pytest.raises(InputError, match=r"run-store schema 3"):
        load_run_data(run)  # a reader does not migrate
    with RunStore.open(run) as store:
        index = store.conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'items'"
        ).fetchall()
        assert store.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert index == [("CREATE UNIQUE INDEX items_key ON items (key)",)]
    assert version(run) == SCHEMA_VERSION
    assert (table("items"), table("records")) == (items, records)  # ids, keys, specs, records
    assert len(load_run_data(run).records) == sum(1 for i in items if i[2] == 1)
    with pytest.raises(ConfigMismatch, match=r'imagenet_c_plasma added \("independent"\)'):
        run_sweep(_old_sweep_config(imagenet_c_plasma="independent"), run, progress=False)
    assert (table("items"), table("records")) == (items, records)  # refused: nothing changed
    config = _old_sweep_config()
    summary = run_sweep(config, run, progress=False, allow_mismatch=True)
    assert {kind: s.units for kind, s in summary.stages.items()} == dict.fromkeys(summary.stages, 0)
    assert table("items") == items


@pytest.mark.parametrize(
    ("name", "fixtures"),
    [("sweep", FIXTURES), ("probe", FIXTURES), ("grounding", FIXTURES), ("sweep", SCHEMA3)],
)
def test_an_old_run_s_readouts_read_back_typed(tmp_path: Path, name: str, fixtures: Path) -> None:
    """Runs stored before a key was added to a kind's read-outs (the probe's ``failed_calls``,
    a belief's ``unparsed``, a V_eq's ``gain``, an elicitation's slots) read back as the kind's
    registered type: every ok record of every kind they hold."""
    from fixtures.kept_runs import typed_readouts

    run = restore(name, tmp_path / "run", fixtures)
    typed = typed_readouts(run, migrate=True)
    with RunStore.open(run, read_only=True) as store:
        assert sum(typed.values()) == store.count_records(status="ok") > 0
