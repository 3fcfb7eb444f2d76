"""``clearsight export --format parquet``: the details dataset read back with ``datasets`` and
pandas equals the run's rows as its protocol's face gives them (every column, every row) for a
sweep, a grounding and a probe run; its card's YAML names the file and the features
``datasets`` reads; the sample of each protocol holds its rows with the pixels the model was
shown, planned again; bad input writes nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.faces import face_of
from clearsight.store import RunStore, run_protocol

runner = CliRunner()


def _face_rows(run: Path) -> list[dict[str, object]]:
    face = face_of(run_protocol(run))
    return [dict(r) for r in face.need(face.rows, "rows")(run)]


@pytest.mark.parametrize(
    "which", ["sweep_run", "grounding_run", "visual_grounding_run", "probe_run"]
)
def test_parquet_reads_back_as_the_faces_rows(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    datasets = pytest.importorskip("datasets")
    run: Path = request.getfixturevalue(which)
    out = tmp_path / "out"
    result = runner.invoke(app, ["export", str(run), "--format", "parquet", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out / 'data' / 'details.parquet'}" in result.output
    expected = _face_rows(run)
    assert expected, "the run has rows"
    parquet = str(out / "data" / "details.parquet")
    loaded = datasets.load_dataset(
        "parquet", data_files=parquet, split="train", cache_dir=str(tmp_path / "cache")
    )
    # one computation: the stored values written to Parquet and read back, bit for bit
    assert loaded.to_list() == expected
    assert list(loaded.column_names) == list(expected[0])
    # the folder itself, as a Hub dataset is read: through its card's configs
    assert (
        datasets.load_dataset(str(out), split="train", cache_dir=str(tmp_path / "c")).to_list()
        == expected
    )
    frame = pd.read_parquet(parquet)
    assert list(frame.columns) == list(expected[0])
    assert len(frame) == len(expected)
    # the card's header names the file and gives the features datasets reads
    text = (out / "README.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["configs"][0] == {
        "config_name": "default",
        "data_files": [{"split": "train", "path": "data/details.parquet"}],
    }
    info = header["dataset_info"][0]
    assert datasets.Features._from_yaml_list(info["features"]) == loaded.features
    assert info["splits"][0]["num_examples"] == len(expected)
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(out / "README.md")
    assert card.data.to_dict()["configs"] == header["configs"]


def test_the_sweeps_sample_holds_the_image_each_item_was_shown(
    sweep_run: Path, tmp_path: Path
) -> None:
    """The sample: rows of the details, drawn across every condition, each with the pixels the
    sweep sent its model (:func:`clearsight.sweep.unit.item_image` of the planned item)."""
    datasets = pytest.importorskip("datasets")
    from clearsight.store import run_manifest
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.plan import plan_sweep
    from clearsight.sweep.unit import item_image

    out = tmp_path / "out"
    args = ["export", str(sweep_run), "--format", "parquet", "--out", str(out), "--images", "6"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    sample = datasets.load_dataset(str(out), "sample", split="train", cache_dir=str(tmp_path / "c"))
    assert isinstance(sample.features["image"], datasets.Image)
    assert len(sample) == 6
    rows = {r["key"]: r for r in _face_rows(sweep_run)}
    config = SweepConfig.model_validate(run_manifest(sweep_run)["config"])
    items = {i.key: i for u in plan_sweep(config).units for i in u.items}
    conditions = {r["condition"] for r in rows.values()}
    assert {row["condition"] for row in sample} == conditions  # 6 draws cover the 4 conditions
    for row in sample:
        image = row.pop("image")
        assert row == rows[row["key"]]
        shown = item_image(items[row["key"]], config.coco_depth_model)
        np.testing.assert_array_equal(np.asarray(image.convert("RGB")), shown)


def planned_pixels(run: Path, row: dict[str, object]) -> np.ndarray | None:
    """The pixels the run's model was shown for ``row``'s item, planned again from what the
    run was asked: a grounding problem generated again from its id (family/seed/index) and its
    image drawn; a probe item planned again from the run's configuration and its instance's
    image loaded. None: a text problem."""
    from clearsight.grounding.problems.bundled import generate
    from clearsight.grounding.problems.images import load_image
    from clearsight.probe.config import ProbeConfig
    from clearsight.probe.instances import instance_image
    from clearsight.probe.plan import plan_probe
    from clearsight.probe.specs import DirectSpec
    from clearsight.store import run_manifest

    if run_protocol(run) == "grounding":
        family, seed, index = str(row["problem"]).split("/")
        problem = generate(family, int(index), int(seed))
        return None if problem.image is None else load_image(problem.image)
    config = ProbeConfig.model_validate(run_manifest(run)["config"])
    (item,) = [i for i in plan_probe(config) if i.key == row["key"]]
    assert isinstance(item, DirectSpec)
    return instance_image(item.instance)


@pytest.mark.parametrize("which", ["visual_grounding_run", "probe_run"])
def test_a_grounding_and_a_probe_sample_hold_the_image_each_item_was_shown(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Grounding's sample: every elicitation (6), each chart problem's image and no image for
    the text problem; the probe's: its direct answers (what verify re-asks), each with the
    image its sensor saw. Each row is the details' row of its item."""
    datasets = pytest.importorskip("datasets")
    run: Path = request.getfixturevalue(which)
    out = tmp_path / "out"
    args = ["export", str(run), "--format", "parquet", "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    sample = datasets.load_dataset(str(out), "sample", split="train", cache_dir=str(tmp_path / "c"))
    assert isinstance(sample.features["image"], datasets.Image)
    rows = {r["key"]: r for r in _face_rows(run)}
    eligible = {k for k, r in rows.items() if r.get("strategy", "direct") == "direct"}
    assert {row["key"] for row in sample} == eligible  # the default 64 draw every one
    shown = 0
    for row in sample:
        image = row.pop("image")
        assert row == rows[row["key"]]
        want = planned_pixels(run, row)
        assert (image is None) == (want is None), row["key"]
        if want is not None:
            np.testing.assert_array_equal(np.asarray(image.convert("RGB")), want)
            shown += 1
    assert shown == (4 if which == "visual_grounding_run" else len(eligible)) > 0


def test_a_text_only_grounding_run_has_no_sample(grounding_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["export", str(grounding_run), "--format", "parquet", "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    assert sorted(p.name for p in (out / "data").iterdir()) == ["details.parquet"]
    header = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert [c["config_name"] for c in header["configs"]] == ["default"]


def _error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("error: "), output
    return lines[0]


def test_not_a_run_and_an_unknown_format_write_nothing(tmp_path: Path, grounding_run: Path) -> None:
    out = tmp_path / "out"
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["export", str(empty), "--format", "parquet", "--out", str(out)])
    assert result.exit_code == 2
    assert "holds no run" in _error_line(result.output)
    result = runner.invoke(
        app, ["export", str(grounding_run), "--format", "csv", "--out", str(out)]
    )
    assert result.exit_code == 2
    line = _error_line(result.output)
    assert "unknown export format 'csv'" in line
    assert "parquet, eval-results, eee" in line
    assert not out.exists()
    assert not (grounding_run / "export").exists()


def test_an_unfinished_run_writes_nothing(tmp_path: Path, grounding_run: Path) -> None:
    import shutil

    run = tmp_path / "unfinished"
    shutil.copytree(grounding_run, run)
    with RunStore.open(run, read_only=True) as store:
        before = store.counts()
    with sqlite3.connect(run / "run.sqlite") as conn:
        conn.execute("DELETE FROM records WHERE id = (SELECT min(id) FROM records)")
    conn.close()
    for fmt in ("parquet", "eval-results", "eee"):
        result = runner.invoke(app, ["export", str(run), "--format", fmt])
        assert result.exit_code == 2
        line = _error_line(result.output)
        assert f"is an unfinished run: 1 of its {before['items']} items have no record" in line
    assert not (run / "export").exists()
