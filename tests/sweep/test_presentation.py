"""The sweep's presentation of the paper's displays (issue 46 item 12): Table III (the fixed
settings) rendered from the run's own configuration on the page and in summary.md, and Fig. 2
(one scene under the sweep's levels) drawn for a COCO scene by ``clearsight preview``."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.pages.html import esc
from clearsight.pages.output import md_text
from clearsight.scenes.coco import CocoSelectionConfig, select_coco_targets
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.protocol import run_sweep
from fixtures.coco import synthetic_coco

runner = CliRunner()


def test_table_iii_states_the_runs_own_settings(tmp_path: Path) -> None:
    """Settings chosen away from the defaults are what Table III says, on the page and in
    summary.md; the ImageNet-C rows only where the run has that control."""
    from clearsight.report import build_report

    config = SweepConfig(
        scene_ids=("skimage-chelsea", "skimage-coffee"),
        models=("observer",),
        arms=("fog",),
        levels_m=(62.5, 3.90625),
        controls=("clean",),
        tasks=("identify",),
        wordings=("mcq.reason",),
        box_thickness_px=5,
        seed=3,
        airlight=0.9,
    )
    run_sweep(config, tmp_path / "run", progress=False)
    paths = build_report(tmp_path / "run", n_boot=50, seed=7, thumbnails=False)
    rows = {
        "visibility levels (m)": "62.5, 3.9",
        "box thickness (px)": "5",
        "seed": "3",
        "airlight": "0.9",
        "arms": "fog",
        "controls": "clean",
        "scenes": "2 from 2 source photos",
        "bootstrap": "B = 50 resamples of the source photos, seed 7, 95 % percentile intervals",
    }
    html = paths.html.read_text("utf-8")
    settings = html.split("id='settings'")[1].split("</table>")[0]
    summary = paths.summary_md.read_text("utf-8")
    table = summary.split("## Fixed settings (Table III)")[1].split("\n## ")[0]
    for setting, value in rows.items():
        assert f"<td class='t'>{esc(setting)}</td><td class='t'>{esc(value)}</td>" in settings
        assert f"| {md_text(setting)} | {md_text(value)} |" in table
    assert "ImageNet-C" not in table  # no such control in this run


@pytest.fixture(scope="module")
def coco(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return synthetic_coco(tmp_path_factory.mktemp("coco"), 4)


def test_preview_draws_fig_2_for_a_coco_scene(coco: tuple[Path, Path], tmp_path: Path) -> None:
    ann, images = coco
    scene = select_coco_targets(ann, images, CocoSelectionConfig(n=4))[0]
    out = tmp_path / "fig2.png"
    args = ["preview", scene.scene_id, "--coco-annotations", str(ann)]
    args += ["--coco-images", str(images), "--coco-depth", "assumed:20", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output
    width, height = Image.open(out).size
    assert width > height > 0  # a sheet: nine columns, fog, water, ImageNet-C rows


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--coco-depth", "assumed:20"], "no COCO scene 'coco-999'"),
        (["--coco-depth", "no/such-depth-model"], "no/such-depth-model"),
    ],
)
def test_a_coco_preview_that_cannot_be_drawn_is_one_error_line(
    coco: tuple[Path, Path], tmp_path: Path, extra: list[str], said: str
) -> None:
    ann, images = coco
    out = tmp_path / "fig2.png"
    args = ["preview", "coco-999", "--coco-annotations", str(ann), "--coco-images", str(images)]
    result = runner.invoke(app, [*args, *extra, "--out", str(out)])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    assert said in errors[0]
    assert not out.exists()


def test_table_iii_lists_a_fields_row_only_where_the_run_uses_it() -> None:
    """COCO's rows in a COCO run, ImageNet-C's with its control (as the JSON manifest stores
    the lists), levels by their labels."""
    from types import SimpleNamespace
    from typing import cast

    from clearsight.sweep.numbers.crossings import SceneBootstrap
    from clearsight.sweep.page.settings import settings_frame

    boot = cast(
        SceneBootstrap,
        SimpleNamespace(n_scenes=4, n_clusters=2, n_boot=100, seed=0, level=0.95),
    )
    config: dict[str, object] = {
        "scenes": "coco",
        "coco_n": 1000,
        "coco_depth_model": "assumed:20",
        "levels_m": [250.0, 15.625, 1.953125],
        "controls": ["clean", "imagenet_c"],
        "imagenet_c_severities": [1, 5],
        "imagenet_c_corruptions": ["fog"],
    }
    shown: dict[str, str] = dict(settings_frame(config, boot).itertuples(index=False))
    assert shown["COCO images drawn"] == "1000"
    assert shown["depth of COCO scenes"] == "assumed:20"
    assert shown["visibility levels (m)"] == "250, 15.6, 1.95"
    assert shown["ImageNet-C severities"] == "1, 5"
    assert shown["scenes"] == "4 from 2 source photos"
    bundled: dict[str, str] = dict(
        settings_frame(config | {"scenes": "bundled", "controls": ["clean"]}, boot).itertuples(
            index=False
        )
    )
    assert "COCO images drawn" not in bundled
    assert "ImageNet-C severities" not in bundled
