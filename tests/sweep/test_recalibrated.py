"""Calibration under weather (issue 45 item 3): maps fitted on the clean images applied at every
level, by hand on a two-level toy, against the scene bootstrap's crossings, refitted in every
draw, and end to end on an observer sweep whose report carries the section."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from clearsight.metrics import (
    apply_temperature,
    bootstrap_weights,
    brier,
    ece,
    risk_coverage,
    temperature_confidence,
)
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.numbers import recalibrated as rc
from clearsight.sweep.numbers import weather_draw, weather_items
from clearsight.sweep.numbers.crossings import scene_bootstrap
from clearsight.sweep.page.report import build_sweep_report
from clearsight.sweep.protocol import run_sweep
from clearsight.sweep.results import RunData, load_run_data
from clearsight.validate import InputError
from fixtures.sweep_runs import toy_record, toy_run

LEVELS = (10.0, 1.0)
ALPHA = 0.3
# (condition, level, confidence, correct) of one scene each. Clean: 0.5 right 1 in 4, 0.8
# right 3 in 4, so Platt's map and the isotonic one both send 0.5 to 1/4 and 0.8 to 3/4
# (tests/metrics/test_recalibration.py::test_platt_by_hand); Platt sends 0.2 (logit -log 4)
# to sigmoid(-3 log 3) = 1/28, the isotonic map to its end value 1/4.
TOY = [
    *(("clean", math.nan, 0.5, y) for y in (1, 0, 0, 0)),
    *(("clean", math.nan, 0.8, y) for y in (1, 1, 1, 0)),
    ("fog", 10.0, 0.8, 1),
    ("fog", 10.0, 0.8, 0),
    ("fog", 1.0, 0.5, 0),
    ("fog", 1.0, 0.2, 0),
    ("blank", math.nan, 0.25, 0),
]


def _toy(rows: list[tuple[str, float, float, int]] = TOY) -> RunData:
    records = pd.DataFrame(
        [
            toy_record(f"s{k:02d}", cond, level, internal_conf=conf, correct=float(y))
            for k, (cond, level, conf, y) in enumerate(rows)
        ]
    )
    records["cluster"] = records["scene"]
    return toy_run(records, LEVELS)


def _at(frame: pd.DataFrame, **where: object) -> pd.Series:
    found = frame
    for column, value in where.items():
        found = found[found[column] == value]
    assert len(found) == 1, where
    return found.iloc[0]


def test_a_two_level_toy_by_hand() -> None:
    numbers = rc.recalibrated_numbers(_toy(), pd.DataFrame(), n_boot=20, alpha=ALPHA)
    fits = numbers.fits.iloc[0]
    assert fits["platt_a"] == pytest.approx(math.log(3) / math.log(2), rel=1e-9)
    assert fits["platt_b"] == pytest.approx(-math.log(3), rel=1e-9)
    assert math.isnan(fits["temperature"])
    assert "temperature" in fits["note"]
    # at 0.8 one wrong of the 8 clean answers: (1 + 1) / 9 <= 0.3; at 0.5 (4 + 1) / 9 is not
    assert fits["threshold"] == 0.8
    levels = numbers.levels
    expected = {  # ECE and Brier at 1 m: every answer wrong
        "none": ((0.5 + 0.2) / 2, (0.25 + 0.04) / 2),
        "isotonic": (0.25, 0.0625),
        "platt": ((0.25 + 1 / 28) / 2, (0.0625 + 1 / 784) / 2),
    }
    for name, (want_ece, want_brier) in expected.items():
        row = _at(levels, map=name, level="1 m")
        assert row["ece"] == pytest.approx(want_ece, abs=1e-12)
        assert row["brier"] == pytest.approx(want_brier, abs=1e-12)
        assert row["aurc"] == pytest.approx(1.0, abs=1e-12)
        assert row["ece_low"] <= row["ece"] <= row["ece_high"]
        assert math.isnan(_at(levels, map="temperature", level="1 m")["ece"])
    # in-sample on the clean images both maps are calibrated in each bin; as read 1.2 / 8 is not
    assert _at(levels, map="isotonic", level="clean")["ece"] == pytest.approx(0.0, abs=1e-12)
    assert _at(levels, map="none", level="clean")["ece"] == pytest.approx(0.15, abs=1e-12)
    assert _at(levels, map="none", level="10 m")["ece"] == pytest.approx(0.3, abs=1e-12)
    conformal = numbers.conformal
    assert _at(conformal, level="10 m")[["coverage", "risk"]].tolist() == [1.0, 0.5]
    assert _at(conformal, level="1 m")[["coverage", "risk"]].tolist() == [0.0, 0.0]
    assert _at(conformal, level="clean")[["coverage", "risk"]].tolist() == [0.5, 0.125]


def test_w_of_each_map_by_hand_and_accuracy_crossing_unmoved() -> None:
    """Accuracy 0.5, 0.5, 0 over clean, 10 m, 1 m with a blank floor of 0: half 0.25 half-way
    to 1 m, log10 V*_acc = 0.5. Mean confidence as read 0.65, 0.8, 0.35 with floor 1/4: half
    0.45, 7/9 of the way, log10 V* = 2/9; isotonic 0.5, 0.75, 0.25: 0.75 of the way (0.25);
    Platt 0.5, 0.75, 1/7: 21/34 of the way (13/34)."""
    data = _toy()
    numbers = rc.recalibrated_numbers(data, pd.DataFrame(), n_boot=20, alpha=ALPHA)
    widths = numbers.widths
    want = {"none": 0.5 - 2 / 9, "isotonic": 0.25, "platt": 0.5 - 13 / 34}
    for name, w in want.items():
        row = _at(widths, map=name)
        assert row["w"] == pytest.approx(w, abs=1e-12)
        assert row["w_bound"] == "exact"
    # no map moves the accuracy's crossing: the same V*_acc and interval for every map, the
    # scene bootstrap's own, and W as read is the scene bootstrap's W
    assert widths["v_acc_m"].nunique() == 1
    assert widths["v_acc_m_low"].nunique() == 1
    assert widths["v_acc_m_high"].nunique() == 1
    boot = scene_bootstrap(data, n_boot=20, seed=0).crossings
    accuracy = _at(boot, signal="accuracy", arm="fog")
    assert widths["v_acc_m"].iloc[0] == pytest.approx(accuracy["v_star_m"], rel=1e-12)
    assert widths["v_acc_m_low"].iloc[0] == pytest.approx(accuracy["v_low_m"], rel=1e-12)
    assert widths["v_acc_m_high"].iloc[0] == pytest.approx(accuracy["v_high_m"], rel=1e-12)
    confidence = _at(boot, signal="internal_conf", arm="fog")
    as_read = _at(widths, map="none")
    assert as_read["w"] == pytest.approx(confidence["w"], abs=1e-12)
    assert as_read["w_low"] == pytest.approx(confidence["w_low"], abs=1e-12)
    assert as_read["w_high"] == pytest.approx(confidence["w_high"], abs=1e-12)


def test_each_draw_refits_the_maps_on_its_own_photos() -> None:
    """A bootstrap draw's numbers are those of the run in which each photo's items appear as
    often as the draw picked the photo, maps and threshold fitted again on it."""
    data = _toy()
    group = next(weather_items.groups(data, pd.DataFrame()))
    weights = bootstrap_weights(len(TOY), 3, seed=4).astype(float)
    keys = weather_draw.draw_keys(group)
    compared = 0
    for row in weights:
        drawn = dict(zip(keys, weather_draw.draw_numbers(group, row, ALPHA), strict=True))
        again = [t for t, times in zip(TOY, row.astype(int), strict=True) for _ in range(times)]
        redone = rc.recalibrated_numbers(_toy(again), pd.DataFrame(), n_boot=2, alpha=ALPHA)
        if redone.fits.empty or not (redone.levels["level"] == "1 m").any():
            continue
        assert redone.fits["threshold"].iloc[0] == drawn[("threshold",)]
        for level in redone.levels.itertuples():
            cell = {"clean": 0, "10 m": 1, "1 m": 2}[level.level]
            got = drawn[("stat", str(cell), level.map, "ece")]
            assert (math.isnan(got) and math.isnan(level.ece)) or got == pytest.approx(level.ece)
        compared += 1
    assert compared > 0


def test_cell_scores_match_the_metrics_cell_by_cell() -> None:
    rng = np.random.default_rng(1)
    for _ in range(40):
        n = int(rng.integers(1, 60))
        conf = np.round(rng.uniform(size=n), 1)  # ties, and values on the bins' edges
        correct = (rng.uniform(size=n) < conf).astype(float)
        cell = rng.integers(0, 4, size=n)
        found = weather_draw.cell_scores(conf, correct, cell, 5)
        assert np.isnan(found[4]).all()
        for c in np.unique(cell):
            m = cell == c
            want = [
                ece(conf[m], correct[m]),
                brier(conf[m], correct[m]),
                risk_coverage(conf[m], correct[m]).aurc,
            ]
            np.testing.assert_allclose(found[c], want, atol=1e-12)


def test_cell_scores_refuse_a_cell_outside_their_table() -> None:
    conf, correct = np.array([0.3, 0.9]), np.array([0.0, 1.0])
    with pytest.raises(InputError, match=r"cells must lie in 0\.\.1"):
        weather_draw.cell_scores(conf, correct, np.array([0, 2]), 2)
    # a confidence past 1 (a stored reading's rounding) falls in the last bin, as ECE's
    found = weather_draw.cell_scores(np.array([1.0 + 1e-12]), np.array([1.0]), np.array([0]), 1)
    assert found[0, 0] == pytest.approx(1e-12, abs=1e-15)


def test_without_clean_images_nothing_is_fitted() -> None:
    numbers = rc.recalibrated_numbers(_toy(TOY[8:]), pd.DataFrame(), n_boot=5)
    assert numbers.empty
    assert numbers.levels.empty
    assert numbers.breaks.empty
    assert numbers.summary.empty


def test_the_draws_are_capped_and_the_section_says_how_many() -> None:
    few = rc.recalibrated_numbers(_toy(), pd.DataFrame(), n_boot=7, alpha=ALPHA)
    many = rc.recalibrated_numbers(_toy(), pd.DataFrame(), n_boot=rc.MAX_DRAWS + 300, alpha=ALPHA)
    assert (few.draws, many.draws) == (7, rc.MAX_DRAWS)
    capped = rc.recalibrated_numbers(_toy(), pd.DataFrame(), n_boot=rc.MAX_DRAWS, alpha=ALPHA)
    pd.testing.assert_frame_equal(many.levels, capped.levels)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_a_conformal_alpha_outside_zero_one_is_refused(alpha: float) -> None:
    with pytest.raises(ValidationError, match="conformal_alpha"):
        SweepConfig(conformal_alpha=alpha)


def test_alpha_comes_from_the_run_config() -> None:
    assert SweepConfig(conformal_alpha=0.2).model_dump()["conformal_alpha"] == 0.2
    assert "conformal_alpha" not in SweepConfig().model_dump()  # a stored run's dump is kept
    data = _toy()
    assert rc.alpha_of(data) == rc.DEFAULT_ALPHA
    chosen = RunData(**{**data.__dict__, "manifest": {"config": {"conformal_alpha": 0.2}}})
    assert rc.recalibrated_numbers(chosen, pd.DataFrame(), n_boot=5).alpha == 0.2


def test_an_observer_sweep_reports_calibration_under_weather(tmp_path: Path) -> None:
    """The observer stores its letters' probabilities: temperature 1 gives back its internal
    confidence, and the report states ECE at 3.9 m before and after with intervals (none for
    temperature scaling, which has no best temperature on the observer's clean answers)."""
    far = ("skimage-astronaut", "skimage-camera", "skimage-stereo-motorcycle")
    config = SweepConfig(
        scene_ids=far, tasks=("identify",), wordings=("mcq.generic",), controls=("clean", "blank")
    )
    run = tmp_path / "run"
    run_sweep(config, run, progress=False)
    records = load_run_data(run).records
    letters = weather_items.letter_logprobs(run, records["key"].astype(str).tolist())
    assert letters is not None
    z, labels = letters
    answered = np.isfinite(records["internal_conf"].to_numpy())
    back = apply_temperature(z, 1.0).max(axis=1)
    np.testing.assert_allclose(back[answered], records["internal_conf"][answered], atol=1e-9)
    right = records["correct"].to_numpy() == 1.0
    assert (z.argmax(axis=1)[right] == labels[right]).all()
    # each group's items carry their own letters (read with the records, row for row)
    letter_groups = [
        g for g in weather_items.groups(load_run_data(run), pd.DataFrame()) if g.items.z is not None
    ]
    assert letter_groups
    for group in letter_groups:
        assert group.items.z is not None
        has = np.isfinite(group.items.conf)
        top = temperature_confidence(group.items.z, 1.0)
        np.testing.assert_allclose(top[has], group.items.conf[has], atol=1e-9)
    paths = build_sweep_report(run, tmp_path / "report", n_boot=50, thumbnails=False)
    summary = paths.summary_md.read_text(encoding="utf-8")
    assert "## Calibration under weather" in summary
    ci = r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]"
    for name in ("as read", "isotonic"):
        row = f"\\| fog \\| {name} \\| {ci} \\| 3\\.9 m \\| {ci} \\|"
        assert re.search(row, summary), name
    # every clean answer right with its letter on top: no temperature is best, and it says so
    assert "| fog | temperature | – | 3.9 m | – | n/a |" in summary
    assert "temperature: no minimum on the clean answers (every right letter on top)" in summary
    html = paths.html.read_text(encoding="utf-8")
    assert "id='calibration-weather'" in html
    assert "Calibration under weather" in html


@pytest.mark.slow
def test_a_tiny_transformers_model_gets_a_temperature(
    tiny_qwen2vl_path: Path, tmp_path: Path
) -> None:
    """An ``hf:`` model stores its letters' probabilities as the observer does: temperature
    is fitted on its clean answers and T = 1 gives back its internal confidence."""
    config = SweepConfig(
        scene_ids=("skimage-chelsea", "skimage-coffee"),
        models=(f"hf:{tiny_qwen2vl_path}",),
        tasks=("identify",),
        wordings=("mcq.reason",),
        controls=("clean", "blank"),
        levels_m=(62.5, 1.953125),
    )
    run = tmp_path / "run"
    run_sweep(config, run, progress=False)
    data = load_run_data(run)
    letters = weather_items.letter_logprobs(run, data.records["key"].astype(str).tolist())
    assert letters is not None
    back = apply_temperature(letters[0], 1.0).max(axis=1)
    answered = np.isfinite(data.records["internal_conf"].to_numpy())
    np.testing.assert_allclose(back[answered], data.records["internal_conf"][answered], atol=1e-9)
    fits = rc.recalibrated_numbers(data, pd.DataFrame(), n_boot=10).fits
    assert (fits["temperature"] > 0).all()
    assert np.isfinite(fits["temperature"]).all()
