"""``clearsight plan CONFIG`` and the budget it prints (:mod:`clearsight.sweep.budget`)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.sweep.budget import (
    LETTER_RECORD_BYTES,
    TOKEN_BYTES,
    VERBAL_RECORD_BYTES,
    budget,
    totals,
    unit_counts,
)
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import plan_sweep

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def _counted_item_by_item(unit: object) -> tuple[int, int, int]:
    """What :func:`unit_counts` must say, from the items themselves."""
    items = list(unit.items)  # type: ignore[attr-defined]
    images = {
        (i.condition, i.level_m, i.severity, i.box, None if i.shown is None else i.shown.scene.id)
        for i in items
    }
    verbal = sum(i.question.readout == "verbalized" for i in items)
    return len(items), verbal, len(images)


@pytest.mark.parametrize("limit", [None, 1])
def test_unit_counts_equal_the_items_counted_one_by_one(limit: int | None) -> None:
    cfg = SweepConfig(
        scene_ids=("skimage-chelsea", "skimage-coffee", "mpl-grace-hopper"),
        models=("observer", "hf:some/model"),
        wordings=("mcq.reason", "mcq.generic", "verbal.plain"),
        controls=("clean", "blank", "shuffled", "imagenet_c"),
        imagenet_c_severities=(1, 3),
        wording_scenes={} if limit is None else {"verbal.plain": limit},
        model_wordings={"observer": ("mcq.reason", "verbal.plain")},
    )
    plan = plan_sweep(cfg)
    for unit in plan.units:
        assert unit_counts(unit) == _counted_item_by_item(unit)
    found = {b.model: b for b in budget(plan, {"observer": 50.0})}
    observer, hf = found["observer"], found["hf:some/model"]
    assert observer.items + hf.items == len(plan.questions)
    assert observer.vision_encodes == 0
    assert observer.model_s == pytest.approx(observer.items / 50.0)
    assert hf.model_s is None
    assert hf.vision_encodes == hf.distinct_images < hf.items
    assert hf.prompt_passes == hf.items
    letter = hf.items - hf.generations
    want = letter * LETTER_RECORD_BYTES + hf.generations * (
        VERBAL_RECORD_BYTES + cfg.max_new_tokens * TOKEN_BYTES
    )
    assert hf.store_bytes == want
    total = totals([observer, hf])
    assert total.items == len(plan.questions)
    assert total.model_s is None  # one model's rate unknown


def test_plan_prints_the_published_design_on_a_coco_fixture(tmp_path: Path) -> None:
    from fixtures.coco import synthetic_coco

    ann, images = synthetic_coco(tmp_path / "coco", 4)
    sets = [f"coco_annotations={ann}", f"coco_images={images}", "coco_depth_model=assumed:40"]
    args = ["plan", str(ROOT / "examples" / "sweep-coco-hf.yaml"), "--rate", "20"]
    started = time.perf_counter()
    result = runner.invoke(app, [*args, *(x for s in sets for x in ("--set", s))])
    assert result.exit_code == 0, result.output
    assert time.perf_counter() - started < 30
    lines = result.output.splitlines()
    assert lines[0].split()[:3] == ["model", "items", "units"]
    rows = {line.split()[0]: line.split() for line in lines[1:7]}
    assert len(rows) == 6  # five models and the total
    # per model: 4 scenes x 24 conditions x 15 questions; 9 of the 15 verbalized
    for model, row in rows.items():
        scale = 5 if model == "total" else 1
        assert row[1:7] == [f"{n * scale:,}" for n in (1440, 4, 1440, 864, 96, 96)]
    assert rows["total"][-2:] == [f"{5 * 1440 / 20 / 3600:.1f}", "h"]
    assert lines[-1].startswith("planned in ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rate", "0"], "--rate must be a positive number"),
        (["--rate", "-3"], "--rate must be a positive number"),
        (["--set", "levels_m=[-1]"], "levels_m"),
    ],
)
def test_plan_refuses_bad_input_with_one_line(args: list[str], message: str) -> None:
    path = ROOT / "examples" / "sweep-coco-hf.yaml"
    result = runner.invoke(app, ["plan", str(path), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_plan_of_a_missing_file_is_an_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(tmp_path / "none.yaml")])
    assert result.exit_code == 2
    assert "error:" in result.output


def test_plan_counts_the_published_design_with_no_coco_file_and_no_depth_weights(
    tmp_path: Path,
) -> None:
    args = ["plan", str(ROOT / "examples" / "sweep-coco-hf.yaml"), "--rate", "20", "--n", "4"]
    missing = ["--coco-annotations", str(tmp_path / "none.json"), "--coco-depth", "org/unfetched"]
    result = runner.invoke(app, [*args, *missing])
    assert result.exit_code == 0, result.output
    assert "note: the depth model org/unfetched is not fetched: depth assumed:40" in result.stderr
    assert "planned on 4 stand-in scenes" in result.stderr
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:7]}
    for model, row in rows.items():  # the counts of 4 real COCO images (the test above)
        scale = 5 if model == "total" else 1
        assert row[1:7] == [f"{n * scale:,}" for n in (1440, 4, 1440, 864, 96, 96)]


def test_plan_takes_the_sweeps_options() -> None:
    result = runner.invoke(
        app,
        [
            "plan",
            str(ROOT / "examples" / "sweep-coco-hf.yaml"),
            "--model",
            "observer",
            "--n",
            "2",
            "--wordings",
            "mcq.reason,mcq.generic",
            "--coco-depth",
            "assumed:30",
        ],
    )
    assert result.exit_code == 0, result.output
    assert [line.split()[0] for line in result.stdout.splitlines()[1:3]] == ["observer", "total"]
    assert "wording_scenes entries dropped" in result.stderr
