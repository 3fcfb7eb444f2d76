"""Every ImageNet-C corruption on the metre axis (issue 45 item 2): the matching's residual (the
detail a corruption added) and the rule it sets, the per-corruption V_eq table and metre grid on
hand-made rows, and a toy run with two corruptions through the analysis, the report and the card."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skimage.data
from scipy.ndimage import gaussian_filter

from clearsight.physics import ATTENUATION_MAX_ADDED, imagenet_c_equivalents
from clearsight.physics.equivalence import FogGainCurve
from clearsight.scenes.bundled import load_bundled_scene
from clearsight.sweep.images.corruptions import corruption_veq_table, metre_grid

LUMA = np.array([0.2126, 0.7152, 0.0722])


def _detail(image01: np.ndarray) -> np.ndarray:
    """D(Y) as methods.md §2 defines it, computed here apart from the module."""
    y = image01 @ LUMA
    return y - gaussian_filter(y, sigma=2.0, mode="reflect")


def test_a_scaled_copy_adds_no_detail_and_a_pattern_adds_its_own_energy() -> None:
    clean = skimage.data.chelsea()[::4, ::4].copy()
    curve = FogGainCurve(clean, np.full(clean.shape[:2], 10.0))
    c01 = clean / 255.0
    # contrast lowered to 40 % around a grey: D' = 0.4 D exactly, g = 0.4, a = 0
    gain, added = curve.match(0.4 * c01 + 0.3)
    assert gain == pytest.approx(0.4, rel=1e-12)
    assert added == pytest.approx(0.0, abs=1e-12)
    # plus a checkerboard: a = ||D' - g D||^2 / ||D||^2 from its own detail
    checker = (np.indices(clean.shape[:2]).sum(axis=0) % 2)[..., None] * 0.1 * np.ones(3)
    shown = 0.4 * c01 + 0.25 + checker
    d, d_shown = _detail(c01), _detail(shown)
    g = float((d_shown * d).sum() / (d * d).sum())
    expected = float(((d_shown - g * d) ** 2).sum() / (d * d).sum())
    gain, added = curve.match(shown)
    assert gain == pytest.approx(g, rel=1e-9)
    assert added == pytest.approx(expected, rel=1e-9)
    assert added > ATTENUATION_MAX_ADDED  # the pattern's detail is the corruption's own


@pytest.mark.parametrize("sigma", [0.7, 1.5, 4.0])
def test_a_blur_attenuates_detail_within_the_bound(sigma: float) -> None:
    """A Gaussian blur's transfer function lies in [0, 1]: a <= 1/4 (Popoviciu)."""
    clean = skimage.data.astronaut()[::4, ::4].copy()
    curve = FogGainCurve(clean, np.full(clean.shape[:2], 10.0))
    blurred = gaussian_filter(clean / 255.0, sigma=(sigma, sigma, 0), mode="reflect")
    gain, added = curve.match(blurred)
    assert 0.0 < gain < 1.0
    assert 0.0 <= added <= ATTENUATION_MAX_ADDED


def test_noise_is_flagged_and_contrast_is_placed_on_a_bundled_scene() -> None:
    scene = load_bundled_scene("skimage-chelsea")
    severities = (1, 3, 5)
    noise = imagenet_c_equivalents(scene.image, scene.depth_m, 7, severities, "gaussian_noise")
    contrast = imagenet_c_equivalents(scene.image, scene.depth_m, 7, severities, "contrast")
    # noise keeps the clean detail (g near 1) and adds its own: above the bound at every severity
    assert all(eq.added > ATTENUATION_MAX_ADDED for eq in noise)
    assert all(eq.gain > 0.5 for eq in noise)
    # contrast scales detail (up to 8-bit rounding): far below the bound, V_eq falling
    assert all(eq.added < 0.05 for eq in contrast)
    assert [eq.v_eq_m for eq in contrast] == sorted((eq.v_eq_m for eq in contrast), reverse=True)


def _veq_rows() -> pd.DataFrame:
    """Two scenes; ``flat`` falls on both, ``noisy`` adds detail at severity 2, ``zigzag`` rises
    on scene b."""
    rows = []
    table = {
        "flat": {1: ((40.0, 0.1), (20.0, 0.2)), 2: ((10.0, 0.1), (6.0, 0.0))},
        "noisy": {1: ((400.0, 0.2), (300.0, 0.2)), 2: ((100.0, 3.0), (90.0, 5.0))},
        "zigzag": {1: ((8.0, 0.0), (5.0, 0.0)), 2: ((4.0, 0.0), (7.0, 0.0))},
    }
    for name, by_severity in table.items():
        for severity, scenes in by_severity.items():
            for scene, (v, a) in zip("ab", scenes, strict=True):
                rows.append(
                    {
                        "scene": scene,
                        "severity": float(severity),
                        "v_eq_m": v,
                        "gain": 0.5,
                        "added": a,
                        "corruption": name,
                    }
                )
    return pd.DataFrame(rows)


def test_the_veq_table_and_the_metre_grid_by_hand() -> None:
    table = corruption_veq_table(_veq_rows())
    assert list(dict.fromkeys(table["corruption"])) == [
        "flat",
        "noisy",
        "zigzag",
    ]  # unknown: sorted
    row = table.set_index(["corruption", "severity"])
    assert row.loc[("flat", 1.0), "veq_median"] == pytest.approx(30.0)  # (40 + 20) / 2
    assert row.loc[("flat", 2.0), "added_median"] == pytest.approx(0.05)
    assert row.loc[("noisy", 2.0), "added_median"] == pytest.approx(4.0)
    assert bool(row.loc[("noisy", 1.0), "placed"])
    assert not bool(row.loc[("noisy", 2.0), "placed"])
    assert row.loc[("zigzag", 1.0), "strict"] == pytest.approx(0.5)  # scene b rises 5 -> 7
    flat = metre_grid(table[table["corruption"] == "flat"])
    assert flat.levels == (30.0, 8.0)
    assert flat.reason == ""
    noisy = metre_grid(table[table["corruption"] == "noisy"])
    assert noisy.levels == ()
    assert "adds detail at severity 2" in noisy.reason
    zigzag = metre_grid(table[table["corruption"] == "zigzag"])  # medians 6.5, 5.5: falls
    assert zigzag.levels == (6.5, 5.5)
    rising = table.assign(veq_median=np.where(table["severity"] == 2, 50.0, table["veq_median"]))
    assert "does not fall" in metre_grid(rising[rising["corruption"] == "flat"]).reason


def test_a_run_without_added_detail_places_nothing() -> None:
    old = _veq_rows().drop(columns="added")
    table = corruption_veq_table(old)
    assert not table["placed"].any()
    assert "before it was stored" in metre_grid(table[table["corruption"] == "flat"]).reason
    assert math.isnan(table["added_median"].iloc[0])


@pytest.fixture(scope="module")
def two_corruptions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.protocol import run_sweep

    config = SweepConfig(
        scene_ids=("skimage-chelsea", "skimage-coffee"),
        models=("observer",),
        arms=("fog",),
        levels_m=(250.0, 15.625, 1.953125),
        controls=("clean", "blank", "imagenet_c"),
        imagenet_c_severities=(1, 3, 5),
        imagenet_c_corruptions=("contrast", "gaussian_noise"),
        tasks=("identify",),
        wordings=("mcq.reason",),
    )
    run = tmp_path_factory.mktemp("corruptions") / "run"
    run_sweep(config, run, progress=False)
    return run


def test_a_toy_run_places_contrast_and_flags_noise(two_corruptions: Path) -> None:
    from clearsight.sweep.analysis import analyse_sweep
    from clearsight.sweep.face.card import sweep_numbers
    from clearsight.sweep.page.report import write_sweep_report

    analysis = analyse_sweep(two_corruptions, n_boot=50)
    numbers = analysis.corruptions
    assert set(numbers.veq["corruption"]) == {"contrast", "gaussian_noise"}
    assert numbers.grids["gaussian_noise"][0] == ()
    assert "not lost contrast" in numbers.grids["gaussian_noise"][1]
    levels = numbers.grids["contrast"][0]
    contrast = numbers.veq[numbers.veq["corruption"] == "contrast"]
    assert levels == tuple(contrast.sort_values("severity")["veq_median"])
    # each severity's accuracy is the share correct of its records (every weight 1)
    records = analysis.data.corrupted
    for name in ("contrast", "gaussian_noise"):
        mine = records[records["corruption"] == name]
        direct = mine.groupby("severity")["correct"].mean()
        acc = numbers.signals[
            (numbers.signals["corruption"] == name) & (numbers.signals["signal"] == "accuracy")
        ].set_index("severity")["estimate"]
        pd.testing.assert_series_equal(acc.sort_index(), direct, check_names=False)
    assert set(numbers.crossings["arm"]) == {"contrast"}
    assert numbers.crossings.loc[numbers.crossings["signal"] != "accuracy", "w"].notna().all()
    keys = [n.key for n in sweep_numbers(analysis)["observer"]]
    assert "ImageNet-C contrast W internal" in keys
    assert not any("gaussian_noise" in k for k in keys)
    page = write_sweep_report(analysis, two_corruptions).html.read_text()
    section = page[page.index("id='corruptions'") :]
    assert "gaussian_noise" in section
    assert "contrast" in section
    assert "no: adds detail" in section
    assert "Crossings and W of each corruption" in section


def test_summary_csv_holds_each_gridded_corruptions_w_as_the_arms_rows(
    two_corruptions: Path, tmp_path: Path
) -> None:
    """summary.csv's rows of ``imagenet_c:contrast`` (the corruption with a metre grid) carry
    the corruption's crossings and W as the report's table has them, in the physical arms'
    columns; noise (no grid) has none."""
    from clearsight.sweep.analysis import analyse_sweep
    from clearsight.sweep.page.report import write_sweep_report

    analysis = analyse_sweep(two_corruptions, n_boot=50)
    csv = pd.read_csv(write_sweep_report(analysis, tmp_path).summary_csv)
    arms = set(csv["arm"])
    assert arms == {"fog", "imagenet_c:contrast"}
    key = ["model", "wording", "signal"]
    mine = csv[csv["arm"] == "imagenet_c:contrast"].sort_values(key)
    expected = analysis.corruptions.crossings.sort_values(key)
    assert mine[key].values.tolist() == expected[key].values.tolist()
    for column in ("v_star_m", "w", "w_low", "w_high", "v_low_m", "v_high_m"):
        np.testing.assert_allclose(  # written to CSV and read back
            mine[column].to_numpy(float), expected[column].to_numpy(float), rtol=1e-12
        )
    physical = csv[csv["arm"] == "fog"]
    assert list(csv.columns) == [*analysis.labelled.columns, "n_boot", "seed", "ci_level"]
    assert len(physical) == len(analysis.labelled)
    assert mine["w_display"].notna().any()


def test_a_veq_beyond_the_search_is_larger_than_every_finite_one() -> None:
    from clearsight.sweep.images.equivalence import veq_summary

    rows = pd.DataFrame(
        {"scene": list("abc"), "severity": 1.0, "v_eq_m": [10.0, 20.0, math.inf], "gain": 0.9}
    )
    (summary,) = veq_summary(rows).itertuples()
    assert summary.veq_median == 20.0  # the middle of 10, 20, inf
    assert summary.veq_q25 == 15.0  # half-way from 10 to 20
    assert summary.veq_q75 == math.inf  # half-way from 20 to beyond the search
    assert summary.gain_median == pytest.approx(0.9)
    (every,) = veq_summary(rows.assign(v_eq_m=math.inf)).itertuples()
    assert every.veq_median == math.inf
