"""Calibration from a finished sweep, the guarded model in a sweep, and the estimate table.

One small sweep (module fixture, about 10 s): the observer and ``guard:observer`` on four
bundled scenes, fog and water at four levels, clean and blank, identification with the
reason-naming letter wording and the plain verbal wording.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.guard.calibrate import (
    FORMAT_VERSION,
    GuardCalibration,
    _on_estimate_scale,
    calibrate,
    load_calibration,
    split_scenes,
)
from clearsight.guard.estimate import estimate_visibility
from clearsight.models import load_backend
from clearsight.pages.html import render
from clearsight.physics import VISIBILITY_CONSTANT
from clearsight.scenes.bundled import load_bundled_scene
from clearsight.store import load_run
from clearsight.sweep.conditions import arm_stack
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.numbers.crossings import scene_bootstrap
from clearsight.sweep.numbers.guarded import guard_estimate_table, guard_estimates
from clearsight.sweep.page.sections import guard_section
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.protocol import run_sweep
from clearsight.sweep.results import load_run_data
from clearsight.validate import InputError

SCENES = ("skimage-astronaut", "skimage-chelsea", "mpl-grace-hopper", "darknet-eagle")
LEVELS = (250.0, 62.5, 15.625, 3.90625)
GUARD = "guard:observer"
THRESHOLD_M = 20.0
runner = CliRunner()


def config(models=("observer", GUARD)) -> SweepConfig:
    return SweepConfig(
        scene_ids=SCENES,
        all_targets=False,
        arms=("fog", "water"),
        levels_m=LEVELS,
        controls=("clean", "blank"),
        tasks=("identify",),
        wordings=("mcq.reason", "verbal.plain"),
        models=models,
        # options only for a model of the run: others are refused (a typo is not ignored)
        model_options={GUARD: {"threshold_m": THRESHOLD_M}} if GUARD in models else {},
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("guard") / "run"
    run_sweep(config(), out, progress=False)
    return out


# ------------------------------------------------------------------------------- the split


@settings(max_examples=100, deadline=None)
@given(
    ids=st.lists(st.text("abcdefgh-", min_size=1, max_size=6), min_size=2, max_size=30),
    seed=st.integers(0, 2**31),
    share=st.floats(0.05, 0.95),
)
def test_split_is_a_seeded_partition_whatever_the_order(ids, seed, share):
    distinct = sorted(set(ids))
    if len(distinct) < 2:
        return
    cal, held = split_scenes(ids, seed, share)
    assert set(cal) | set(held) == set(distinct)
    assert not set(cal) & set(held)
    assert 1 <= len(cal) <= len(distinct) - 1
    assert abs(len(cal) - share * len(distinct)) <= 1
    assert split_scenes(list(reversed(ids)), seed, share) == (cal, held)


def test_split_depends_on_the_seed():
    ids = [f"scene-{i}" for i in range(22)]
    splits = {split_scenes(ids, s) for s in range(5)}
    assert len(splits) == 5
    with pytest.raises(InputError, match="at least two scenes"):
        split_scenes(["one", "one"], 0)
    with pytest.raises(InputError, match="share"):
        split_scenes(ids, 0, 1.0)


# --------------------------------------------------------------------------- calibration


def test_calibration_is_deterministic_from_the_run_and_the_seed(run):
    a = calibrate(run, "observer", split_seed=3)
    b = calibrate(run, "observer", split_seed=3)
    assert a == b
    assert sorted((*a.calibration_scenes, *a.held_out_scenes)) == sorted(SCENES)
    assert len(a.calibration_scenes) == 2
    assert a.run_config_hash == load_run_data(run).manifest["config_hash"]
    other = {calibrate(run, "observer", split_seed=s).calibration_scenes for s in range(6)}
    assert len(other) > 1  # another seed, another split


def test_true_scale_threshold_is_the_largest_accuracy_crossing(run):
    cal = calibrate(run, "observer", split_seed=1, scale="true")
    assert cal.scale == "true"
    data = load_run_data(run)
    recs = data.records
    only_cal = recs[(recs["model"] == "observer") & recs["scene"].isin(cal.calibration_scenes)]
    rows = scene_bootstrap(
        dataclasses.replace(data, records=only_cal.reset_index(drop=True)), n_boot=20
    ).crossings
    acc = rows[(rows["model"] == "observer") & (rows["signal"] == "accuracy")]
    assert {(c.arm, c.wording) for c in cal.crossings} == set(
        zip(acc["arm"], acc["wording"], strict=True)
    )
    assert cal.threshold_m == pytest.approx(acc["v_star_m"].max(), rel=1e-12)
    assert min(LEVELS) <= cal.threshold_m <= max(LEVELS)
    # the depth-free threshold: the transmission at the calibration scenes' median depth
    z = float(
        np.median(data.depth.set_index("scene").loc[list(cal.calibration_scenes)]["median_m"])
    )
    assert cal.median_depth_m == pytest.approx(z, rel=1e-12)
    assert cal.threshold_t == pytest.approx(math.exp(-VISIBILITY_CONSTANT * z / cal.threshold_m))


def test_estimate_scale_threshold_is_what_the_guard_reads_at_the_crossing(run):
    cal = calibrate(run, "observer", split_seed=1)
    assert cal.scale == "estimate"
    true = calibrate(run, "observer", split_seed=1, scale="true")
    assert cal.crossings == true.crossings
    want_m, want_t = [], []
    for arm in ("fog", "water"):
        v = max(c.v_star_m for c in cal.crossings if c.arm == arm)
        est = []
        for scene_id in cal.calibration_scenes:
            scene = load_bundled_scene(scene_id)
            image = arm_stack(scene, arm, [v])[0]  # the run used the default physics
            est.append(estimate_visibility(image, scene.depth_m))
        want_m.append(np.median([e.visibility_m for e in est]))
        want_t.append(np.median([e.transmission for e in est]))
    assert cal.threshold_m == pytest.approx(max(want_m), rel=1e-9)
    assert cal.threshold_t == pytest.approx(max(want_t), rel=1e-6)
    # the estimate reads low (water, bright scenes): the guard's threshold is below V*
    assert cal.threshold_m < true.threshold_m


def test_estimate_scale_needs_bundled_scenes(run):
    data = load_run_data(run)
    coco = dataclasses.replace(data, records=data.records.assign(**{"scene.source": "coco"}))
    cal = calibrate(run, "observer")
    with pytest.raises(InputError, match="use scale 'true'"):
        _on_estimate_scale(coco, cal.calibration_scenes, cal.crossings)


def test_calibration_file_round_trip_and_versions(run, tmp_path):
    cal = calibrate(run, "observer")
    path = cal.write(tmp_path / "cal.json")
    assert load_calibration(path) == cal
    data = json.loads(path.read_text())
    assert data["format_version"] == FORMAT_VERSION
    assert data["model"] == "observer"
    data["format_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="format_version 99"):
        load_calibration(path)
    path.write_text("{not json")
    with pytest.raises(InputError, match="not readable JSON"):
        load_calibration(path)
    with pytest.raises(InputError, match="no records of model 'nope'"):
        calibrate(run, "nope")


def test_the_guard_loads_its_calibration(run, tmp_path):
    cal = calibrate(run, "observer")
    path = str(cal.write(tmp_path / "cal.json"))
    g = load_backend(GUARD, {"calibration": path})
    assert (g.threshold_m, g.threshold_t) == (cal.threshold_m, cal.threshold_t)
    explicit = load_backend(GUARD, {"calibration": path, "threshold_m": 7.0})
    assert explicit.threshold_m == 7.0
    wrong = GuardCalibration(**{**cal.model_dump(), "model": "perceiver:llm"})
    wrong.write(tmp_path / "wrong.json")
    with pytest.raises(InputError, match="fitted for 'perceiver:llm'"):
        load_backend(GUARD, {"calibration": str(tmp_path / "wrong.json")})


def test_cli_calibrate(run, tmp_path):
    out = tmp_path / "c.json"
    result = runner.invoke(
        app,
        [
            "guard",
            "calibrate",
            str(run),
            "--model",
            "observer",
            "--split-seed",
            "2",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    cal = load_calibration(out)
    assert cal == calibrate(run, "observer", split_seed=2)
    true = runner.invoke(
        app,
        [
            "guard",
            "calibrate",
            str(run),
            "--model",
            "observer",
            "--scale",
            "true",
            "--out",
            str(out),
        ],
    )
    assert true.exit_code == 0, true.output
    assert load_calibration(out) == calibrate(run, "observer", scale="true")
    assert "(scale: true)" in true.output
    wrong = runner.invoke(
        app, ["guard", "calibrate", str(run), "--model", "observer", "--scale", "x"]
    )
    assert wrong.exit_code == 2
    assert "--scale must be estimate or true" in wrong.output
    assert f"--scene-ids): {','.join(cal.held_out_scenes)}" in result.output
    bad = runner.invoke(app, ["guard", "calibrate", str(run), "--model", "nope"])
    assert bad.exit_code == 2
    assert "error: the run" in bad.output


# ----------------------------------------------------------------- the guarded model in a run


def test_guarded_sweep_records(run):
    frame = load_run(run)
    frame = frame[(frame.protocol == "sweep") & (frame.status == "ok")]
    guarded = frame[frame["model"] == GUARD]
    raw = load_run_data(run).raw_outputs(guarded["key"].tolist())
    info = {k: raw[k]["extra"]["guard"] for k in guarded["key"]}
    for row in guarded.itertuples():
        got = info[row.key]
        if row.condition == "blank":  # no depth for the blank control: the depth-free path
            assert got["visibility_m"] is None
            assert got["decision"] == "pass"  # only a metres threshold was given
        else:
            assert got["visibility_m"] is not None
            assert got["decision"] == ("abstain" if got["visibility_m"] < THRESHOLD_M else "pass")
        if got["decision"] == "abstain":
            assert row.abstained
    share = {}
    for r in guarded.itertuples():
        share.setdefault((r.condition, r.level_m), []).append(info[r.key]["decision"] == "abstain")
    for arm in ("fog", "water"):
        assert all(share[(arm, min(LEVELS))])  # every murkiest image is abstained on
        assert np.mean(share[(arm, max(LEVELS))]) < 1.0
        assert np.mean(share[(arm, min(LEVELS))]) >= np.mean(share[(arm, max(LEVELS))])


def test_the_guard_leaves_the_other_models_keys_and_records_alone(run, tmp_path):
    alone = tmp_path / "alone"
    run_sweep(config(models=("observer",)), alone, progress=False)
    keys = {i.key for i in plan_sweep(config(models=("observer",))).questions}
    both = {i.key for i in plan_sweep(config()).questions if i.model == "observer"}
    assert keys == both
    cols = ["key", "answer", "correct", "abstained", "internal_conf", "verbal_conf"]
    a, b = load_run(alone), load_run(run)
    a = a[(a.protocol == "sweep") & (a.model == "observer")][cols].sort_values("key")
    b = b[(b.protocol == "sweep") & (b.model == "observer")][cols].sort_values("key")
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))


def test_estimate_table(run):
    data = load_run_data(run)
    est = guard_estimates(data)
    # one row per shown image: scene x arm x level (the two wordings share each image)
    assert len(est) == len(SCENES) * 2 * len(LEVELS)
    table = guard_estimate_table(data)
    assert list(table["arm"]) == ["fog", "water"]
    assert (table["n_images"] == len(SCENES) * len(LEVELS)).all()
    for row in table.itertuples():
        sub = est[est["condition"] == row.arm]
        ok = np.isfinite(sub["visibility_hat_m"]) & (sub["visibility_hat_m"] > 0)
        err = np.log10(sub["visibility_hat_m"][ok] / sub["level_m"][ok])
        assert row.n_finite == int(ok.sum())
        assert row.median_decades == pytest.approx(float(np.median(err)))
        assert row.q25_decades <= row.median_decades <= row.q75_decades
        assert row.abstain_share == pytest.approx((sub["decision"] == "abstain").mean())
    # water reads murkier than fog (the documented bias of the dark channel under water)
    by_arm = table.set_index("arm")["median_decades"]
    assert by_arm["water"] < by_arm["fog"]
    html = render(guard_section(table))
    assert "id='guard'" in html
    assert f">{GUARD}</td>" in html
    assert html.count("<tr>") == 1 + len(table)


def test_estimate_table_without_guarded_models(tmp_path):
    out = tmp_path / "r"
    run_sweep(
        SweepConfig(
            scene_ids=SCENES[:2],
            all_targets=False,
            arms=("fog",),
            levels_m=(62.5, 15.625),
            controls=("clean",),
            tasks=("identify",),
            wordings=("mcq.reason",),
        ),
        out,
        progress=False,
    )
    table = guard_estimate_table(load_run_data(out))
    assert table.empty
    assert guard_section(table) == []
