"""The depth checkpoint's size is a stated choice (issue 46 item 9): the paper names Depth
Anything V2's metric outdoor model but no size, so the default (Small) is named as clearsight's
choice in the run's manifest and its report, never as the paper's."""

from __future__ import annotations

from pathlib import Path

import pytest

from clearsight.pages.html import esc
from clearsight.pages.output import md_text
from clearsight.scenes.depth import (
    DEFAULT_DEPTH_MODEL,
    DEPTH_CHOICE,
    DEPTH_SIZES,
    depth_checkpoint,
)


@pytest.mark.parametrize("size", list(DEPTH_SIZES))
def test_each_size_is_named_and_only_the_default_is_clearsights(size: str) -> None:
    model = DEPTH_SIZES[size]
    assert model == f"depth-anything/Depth-Anything-V2-Metric-Outdoor-{size}-hf"
    record = depth_checkpoint(model, coco=True)
    assert record["size"] == size
    assert record["used_for"] == "every scene's depth"
    assert (record["chosen"] == DEPTH_CHOICE) is (model == DEFAULT_DEPTH_MODEL)
    assert (size == "Small") is (model == DEFAULT_DEPTH_MODEL)


def test_an_assumed_depth_uses_no_checkpoint() -> None:
    record = depth_checkpoint("assumed:40", coco=True)
    assert record["size"] == "none"
    assert record["used_for"] == "nothing: the run assumes the depth (assumed:40)"
    assert record["chosen"] == "the run's coco_depth_model"


def test_the_manifest_and_the_report_name_the_size_as_clearsights_choice(tmp_path: Path) -> None:
    from clearsight.report import build_report
    from clearsight.store import run_manifest
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.protocol import run_sweep

    config = SweepConfig(  # one scene, the verification task, two levels of water
        scene_ids=("mpl-grace-hopper",),
        models=("observer",),
        arms=("water",),
        levels_m=(31.25, 1.953125),
        controls=("clean",),
        tasks=("verify",),
        wordings=("mcq.generic",),
    )
    run_sweep(config, tmp_path / "run", progress=False)
    recorded = run_manifest(tmp_path / "run")["depth_checkpoint"]
    assert recorded["model"] == DEFAULT_DEPTH_MODEL
    assert recorded["size"] == "Small"
    assert "clearsight's choice" in recorded["chosen"]
    assert "the paper names Depth Anything V2's metric outdoor model but no size" in DEPTH_CHOICE
    assert recorded["used_for"].startswith("nothing: the bundled scenes' depth")
    paths = build_report(tmp_path / "run", n_boot=50, thumbnails=False)
    said = f"depth checkpoint {DEFAULT_DEPTH_MODEL} (size Small; {DEPTH_CHOICE})"
    assert esc(said) in paths.html.read_text()  # the provenance's depth row
    assert md_text(said) in paths.summary_md.read_text()  # summary.md's Depth line
    assert "not measured" in DEPTH_CHOICE
