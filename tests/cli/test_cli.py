"""The command line: output a user sees and the errors it names."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.scenes.bundled import load_bundled_scene
from clearsight.sweep.images.corruptions import summarise
from clearsight.sweep.images.equivalence import equivalence_table, monotone_veq_share
from clearsight.sweep.plan import plan_sweep

runner = CliRunner()


def test_scenes_lists_bundled_ids():
    result = runner.invoke(app, ["scenes"])
    assert result.exit_code == 0
    assert "skimage-stereo-motorcycle" in result.output
    assert "measured" in result.output
    assert "assumed" in result.output


def test_scenes_prints_every_column_its_help_promises():
    """`scenes --help` names id, source photo, depth provenance and targets; each line has them."""
    helptext = runner.invoke(app, ["scenes", "--help"]).output
    assert "source photo" in helptext
    assert "size" not in helptext
    lines = {line.split()[0]: line for line in runner.invoke(app, ["scenes"]).output.splitlines()}
    assert lines["skimage-chelsea"].split()[1:5] == [
        "skimage:chelsea",
        "depth",
        "assumed",
        "targets:",
    ]
    if "darknet-kite-sky" in lines:
        assert lines["darknet-kite-sky"].split()[1:3] == ["darknet:kite.jpg", "(crop)"]


def test_preview_writes_png_and_rejects_unknown_scene(tmp_path):
    out = tmp_path / "sheet.png"
    result = runner.invoke(app, ["preview", "skimage-coffee", "--out", str(out), "--target", "1"])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = runner.invoke(app, ["preview", "no-such-scene"])
    assert bad.exit_code == 2
    assert "unknown scene id 'no-such-scene'" in bad.output
    bad_target = runner.invoke(app, ["preview", "skimage-coffee", "--target", "5"])
    assert bad_target.exit_code == 2
    assert "target index 5" in bad_target.output


def test_equivalence_table_and_summary():
    scenes = [load_bundled_scene("skimage-chelsea"), load_bundled_scene("mpl-grace-hopper")]
    table = equivalence_table(scenes, seed=0, progress=False)
    assert len(table) == 10
    assert set(table["severity"]) == {1, 2, 3, 4, 5}
    assert (table["v_eq_m"] > 0).all()
    # the strongest severity is murkier than the weakest for each scene
    for _, g in table.groupby("scene"):
        v = g.set_index("severity")["v_eq_m"]
        assert v[5] < v[1]
    text = summarise(table)
    assert "of 2 scenes" in text


def test_monotone_share_strict_and_not():
    series = {
        "a": [50, 40, 30, 20, 10],  # strictly decreasing
        "b": [50, 40, 45, 20, 10],  # one step up
        "c": [50, 40, 40, 20, 10],  # a tie: non-increasing, not strictly decreasing
        "d": [50, 40, 30, 20],  # severity 5 missing: left out
    }
    rows = [(k, s, v) for k, vs in series.items() for s, v in enumerate(vs, start=1)]
    table = pd.DataFrame(rows, columns=["scene", "severity", "v_eq_m"])
    share = monotone_veq_share(table)
    assert (share.strict, share.n) == (1 / 3, 3)
    assert share.non_strict == 2 / 3
    assert "strictly over severities 1-5 in 33% of 3 scenes (non-increasing: 67%)" in summarise(
        table
    )


def test_demo_says_how_to_start_over_when_its_models_changed(tmp_path, monkeypatch):
    from clearsight.cli import demo
    from clearsight.sweep.config import SweepConfig

    small = {
        "scene_ids": ("skimage-chelsea", "skimage-coffee"),
        "arms": ("fog",),
        "levels_m": (250.0, 2.0),
        "controls": ("clean", "blank"),
        "wordings": ("mcq.reason",),
        "tasks": ("identify",),
    }
    out = tmp_path / "demo"
    args = ["demo", "--out", str(out), "--workers", "1"]
    before = SweepConfig(**small)
    after = SweepConfig(**small, models=("observer", "perceiver:detector"))
    monkeypatch.setattr(demo, "demo_config", lambda: before)
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    # the first stage's records are reused: the full demo writes only the others
    quick = len(plan_sweep(demo.quick_config(before)).items)
    assert f"demo: first stage: {quick} records written, 0 failed" in first.output
    assert f"\n{len(plan_sweep(before).items) - quick} records written, 0 failed" in first.output
    # the machine gained a model (say `make models` ran): the demo's config changed
    monkeypatch.setattr(demo, "demo_config", lambda: after)
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2
    assert "--fresh" in refused.output
    again = runner.invoke(app, [*args, "--fresh"])
    assert again.exit_code == 0, again.output
    quick = len(plan_sweep(demo.quick_config(after)).items)
    assert f"demo: first stage: {quick} records written, 0 failed" in again.output
    assert f"\n{len(plan_sweep(after).items) - quick} records written, 0 failed" in again.output


@pytest.mark.parametrize(
    "command",
    [["sweep"], ["probe", "run"], ["grounding"], ["demo"]],
    ids=["sweep", "probe", "grounding", "demo"],
)
def test_run_commands_refuse_bad_execution_options_before_any_work(tmp_path, command):
    out = tmp_path / "run"
    bad_workers = runner.invoke(app, [*command, "--out", str(out), "--workers", "0"])
    assert bad_workers.exit_code == 2
    assert "workers" in bad_workers.output
    assert bad_workers.output.startswith("error: ")
    if command != ["demo"]:
        bad = runner.invoke(app, [*command, "--out", str(out), "--executor", "threads"])
        assert bad.exit_code == 2
        assert "'threads' is not one of serial, process, ray" in bad.output
    assert not out.exists()
