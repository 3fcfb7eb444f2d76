"""Weights & Biases in offline mode: what a sweep sent while it ran (``--tracker wandb``) read
back from the run file wandb wrote (``offline-run-*/run-*.wandb``) equals the analysis's values
to the float, and the ``wandb.Table`` of the sample it logged (the run's table artifact as the
run file records it: its ``sample.table.json`` and images, staged under ``WANDB_DATA_DIR`` for
``wandb sync``) holds the face's rows with the images its ``shown`` draws; so does the table
of a grounding and of a probe run sent by ``clearsight track``.

wandb 0.31 reads its run files in wandb-core (Go) only; the Python reader it shipped before
(``wandb.sdk.internal.datastore``) is gone. So :func:`wandb_records` reads the file's framing
(a ``:W&B`` header, then LevelDB log blocks of 32 KiB, each record under a 7-byte header:
checksum, length, type full/first/middle/last) and decodes each record with wandb's own
protobuf message, ``wandb.proto.wandb_internal_pb2.Record``."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clearsight.cli import app
from clearsight.track.to_wandb import LEVEL_AXIS, UNIT_AXIS
from fixtures.trackers import (
    assert_params,
    assert_sample,
    copied_run,
    expected,
    run_sweep_cli,
    runner,
)

#: Why the test compares floats exactly (tests/conftest.py).
SAME = "the tracker holds the floats the report's analysis computed; the test's is one more"
_BLOCK, _HEADER = 32768, 7
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def wandb_records(path: Path) -> Iterator[Any]:
    """Every record of a ``.wandb`` file, decoded by wandb's own protobuf message."""
    from wandb.proto.wandb_internal_pb2 import Record

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, pending = _HEADER, b""
    while pos + _HEADER <= len(data):
        left = _BLOCK - pos % _BLOCK
        _, length, kind = struct.unpack("<IHB", data[pos : pos + _HEADER])
        if left < _HEADER or (kind == 0 and length == 0):  # a block's zero-filled end
            pos += left
            continue
        chunk, pos = data[pos + _HEADER : pos + _HEADER + length], pos + _HEADER + length
        pending = chunk if kind in (_FULL, _FIRST) else pending + chunk
        if kind in (_FULL, _LAST):
            record = Record()
            record.ParseFromString(pending)
            yield record


@pytest.fixture(autouse=True)
def _wandb_set_up_again() -> Iterator[None]:
    """wandb reads its settings (``WANDB_DIR``) once per process, when first set up: each
    test's run is written where that test says, wandb torn down after it."""
    import wandb

    yield
    wandb.teardown()


def _run_file(wandb_dir: Path) -> Path:
    """The one run file wandb wrote under ``wandb_dir``, once wandb is torn down: the file was
    seen to appear only after the run's ``finish`` returned (two tests in one process), and
    ``wandb.teardown`` waits for wandb's service to end."""
    import wandb

    wandb.teardown()
    (found,) = wandb_dir.glob("wandb/offline-run-*/run-*.wandb")
    return found


def _key(item: Any) -> str:
    return str(item.key or ".".join(item.nested_key))


@pytest.mark.exact_floats(SAME)
def test_a_sweep_sent_while_it_runs_reads_back_equal(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("WANDB_MODE", "offline")  # wandb's own settings
    clean_env.setenv("WANDB_DIR", str(tmp_path))
    clean_env.setenv("WANDB_DATA_DIR", str(tmp_path / "staged"))  # the table's files, staged
    clean_env.setenv("WANDB_PROJECT", "clearsight-test")
    run_dir = tmp_path / "sweep-wandb"
    output = run_sweep_cli(run_dir, "--tracker", "wandb", "--tracker-sample", "5")
    assert "warning: tracker" not in output
    want = expected(run_dir)
    found = _run_file(tmp_path)
    records = [(r.WhichOneof("record_type"), r) for r in wandb_records(found)]
    (run,) = [r.run for kind, r in records if kind == "run"]
    assert (run.display_name, run.project) == (run_dir.name, "clearsight-test")
    config = {_key(u): json.loads(u.value_json) for u in run.config.update}
    assert_params({k: v for k, v in config.items() if k != "_wandb"}, want.manifest)
    history = [r.history for kind, r in records if kind == "history"]
    rows = [{_key(i): json.loads(i.value_json) for i in h.item} for h in history]
    logged: dict[str, dict[int, float]] = {}
    for row in (r for r in rows if LEVEL_AXIS in r):
        for key, value in row.items():
            logged.setdefault(key, {})[row[LEVEL_AXIS]] = value
    assert {k: logged[k] for k in want.steps} == want.steps
    units = [r for r in rows if UNIT_AXIS in r]
    assert [r[UNIT_AXIS] for r in units] == list(range(1, len(units) + 1))  # one log per unit
    assert units[-1]["records_ok"] == want.ok
    summary: dict[str, Any] = {}
    for kind, r in records:
        if kind == "summary":
            summary.update({_key(u): json.loads(u.value_json) for u in r.summary.update})
    assert {k: summary[k] for k in want.summary} == want.summary
    saved = {f.path for kind, r in records if kind == "files" for f in r.files.files}
    assert {"report.html", "summary.md", "summary.csv"} <= saved
    copied = found.parent / "files" / "summary.csv"
    assert copied.read_bytes() == (run_dir / "summary.csv").read_bytes()
    assert [r.exit.exit_code for kind, r in records if kind == "exit"] == [0]
    (entry,) = [r for r in rows if "sample.path" in r]  # the table's entry, flattened
    assert (entry["sample._type"], entry["sample.nrows"]) == ("table-file", 5)
    cells, images = _table(records)
    assert_sample(run_dir, 5, cells, images)


def _table(records: list[tuple[str | None, Any]]) -> tuple[list[dict[str, Any]], list[Path | None]]:
    """The logged ``sample`` table's rows (without their image column) and each row's image
    file (None: the row has none), from the run's table artifact as the run file records it."""
    (table_artifact,) = [r.artifact for kind, r in records if kind == "artifact"]
    staged = {e.path: Path(e.local_path) for e in table_artifact.manifest.contents}
    table = json.loads(staged["sample.table.json"].read_text())
    cells = [dict(zip(table["columns"], row, strict=True)) for row in table["data"]]
    images = [cell.pop("image") for cell in cells]
    assert all(image is None or image["_type"] == "image-file" for image in images)
    return cells, [None if image is None else staged[image["path"]] for image in images]


@pytest.mark.parametrize("which", ["visual_grounding_run", "probe_run"])
def test_a_grounding_and_a_probe_run_send_their_sample(
    which: str, request: pytest.FixtureRequest, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    """``clearsight track`` of a grounding run (chart problems and a text one: its rows
    without an image) and of a probe run (its direct answers, each with its sensor's image)."""
    clean_env.setenv("WANDB_MODE", "offline")
    clean_env.setenv("WANDB_DIR", str(tmp_path))
    clean_env.setenv("WANDB_DATA_DIR", str(tmp_path / "staged"))
    run_dir = copied_run(request.getfixturevalue(which), tmp_path)
    result = runner.invoke(app, ["track", str(run_dir), "--to", "wandb"])
    assert result.exit_code == 0, result.output
    found = _run_file(tmp_path)
    cells, images = _table([(r.WhichOneof("record_type"), r) for r in wandb_records(found)])
    assert_sample(run_dir, 64, cells, images)
    assert any(image is not None for image in images)
