"""A draw of calibration under weather weights each photo's items by how often the draw picked
it instead of repeating them: the same numbers as the repeated items (random small groups), and
the order sorted once per group serves every non-decreasing map as a fresh sort would."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.metrics import PlattMap, apply_isotonic, apply_platt, fit_isotonic
from clearsight.sweep.numbers import weather_draw
from clearsight.sweep.numbers.weather_items import Group, Items

CELLS: list[tuple[str, float]] = [("", math.inf), ("fog", 10.0), ("fog", 1.0)]
ALPHA = 0.3
# Weighted and repeated sums round differently: ECE, Brier and the means within 1e-12; the
# temperature comes out of a bounded search on a rounded objective, so the two fits stop about
# 1e-7 apart (relative; tests/metrics/test_recalibration.py's tolerance of the fit itself) and
# the temperature map's scores, differences of sums of confidences, agree within 1e-6 (where
# every right letter is on top there is no temperature: fit_temperature refuses, in both).
RTOL, ATOL, TEMPERATURE_ATOL = 1e-6, 1e-9, 1e-6


def _group(items: Items) -> Group:
    return Group(
        "m", "identify", "mcq.reason", "internal_conf", 0.25, items, items, CELLS, {"fog": [1, 2]}
    )


@st.composite
def groups(draw: st.DrawFn) -> tuple[Group, np.ndarray]:
    """A random group of up to 40 items from up to 6 photos (confidences on a grid: ties;
    cells clean, two fog levels and blank) and a draw's photo weights."""
    n = draw(st.integers(1, 40))
    photos = draw(st.integers(1, 6))
    ints = st.lists(st.integers(0, 9), min_size=n, max_size=n)
    z = np.array(
        draw(st.lists(st.lists(st.floats(-5, 0), min_size=3, max_size=3), min_size=n, max_size=n))
    )
    label = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    items = Items(
        conf=np.array(draw(ints)) / 10 + 0.05,
        correct=(z.argmax(axis=1) == label).astype(float),
        answered=np.array(draw(ints)) > 0,
        cluster=np.array(draw(ints)) % photos,
        cell=np.array(draw(ints)) % (len(CELLS) + 1),
        z=z,
        label=label,
    )
    weights = np.array(draw(st.lists(st.integers(0, 3), min_size=photos, max_size=photos)))
    return _group(items), weights.astype(float)


def _repeated(group: Group, weights: np.ndarray) -> Group:
    """The group with each item repeated as often as its photo's weight (the draw written
    out, as the draws were made before they were weighted)."""
    items = group.items
    idx = np.repeat(np.arange(items.conf.size), weights[items.cluster].astype(int))
    assert items.z is not None
    assert items.label is not None
    return _group(
        Items(
            items.conf[idx],
            items.correct[idx],
            items.answered[idx],
            items.cluster[idx],
            items.cell[idx],
            items.z[idx],
            items.label[idx],
        )
    )


@pytest.mark.exact_floats("the threshold and conformal shares: sums of integer weights")
@settings(max_examples=150, deadline=None)
@given(groups())
def test_a_weighted_draw_equals_the_repeated_items(drawn: tuple[Group, np.ndarray]) -> None:
    """The fits, every cell's scores, the conformal coverage and risk and the per-cell means a
    draw's crossings are read from (:func:`~clearsight.sweep.numbers.weather_draw.draw`),
    weighted and written out. The crossings themselves are one function of those means: a
    mean exactly at half-way in one and a rounding off it in the other may cross or not."""
    group, weights = drawn
    written_out = _repeated(group, weights)
    fitted, scores, conformal, means = weather_draw.draw(group, weights, ALPHA)
    ones = np.ones(weights.size)
    fitted_rep, scores_rep, conformal_rep, means_rep = weather_draw.draw(written_out, ones, ALPHA)
    # integer weights: the same counts, the same threshold and isotonic steps exactly
    assert (fitted.threshold, fitted.n_fit, fitted.notes) == (
        fitted_rep.threshold,
        fitted_rep.n_fit,
        fitted_rep.notes,
    )
    np.testing.assert_array_equal(conformal, conformal_rep)
    assert (fitted.temperature is None) == (fitted_rep.temperature is None)
    for name in weather_draw.MAPS:
        # the two temperatures are found by a search that stops within about 1e-7 of each
        # other (relative): their confidences, and so their scores, agree to about 1e-6
        atol = TEMPERATURE_ATOL if name == "temperature" else ATOL
        np.testing.assert_allclose(scores[name], scores_rep[name], rtol=RTOL, atol=atol)
    np.testing.assert_allclose(means, means_rep, rtol=RTOL, atol=ATOL)


def _sorted_scores(
    conf: np.ndarray, correct: np.ndarray, cell: np.ndarray, w: np.ndarray, order: np.ndarray | None
) -> np.ndarray:
    return weather_draw.cell_scores(conf, correct, cell, 4, weights=w, order=order)


@pytest.mark.exact_floats("AURC: one compiled pass over two orders with the same tie groups")
@pytest.mark.parametrize("seed", range(6))
def test_the_order_sorted_once_serves_every_non_decreasing_map(seed: int) -> None:
    """AURC (and ECE, Brier) from the group's order equal a fresh sort's for the confidence
    as read, Platt with a >= 0 and isotonic, whose steps merge ties of the confidence; a map
    that reverses the order (Platt with a < 0) is sorted afresh."""
    rng = np.random.default_rng(seed)
    n = 300
    conf = np.round(rng.uniform(0.05, 0.95, n), 2)
    correct = (rng.uniform(size=n) < conf).astype(float)
    cell = rng.integers(0, 4, n)
    w = rng.integers(0, 3, n).astype(float)
    order = np.lexsort((-conf, cell))
    isotonic = fit_isotonic(conf, correct)
    assert np.unique(apply_isotonic(isotonic, conf)).size < np.unique(conf).size  # ties merged
    maps = {
        "none": conf,
        "platt": apply_platt(PlattMap(1.7, -0.4), conf),
        "flat platt": apply_platt(PlattMap(0.0, 0.3), conf),
        "isotonic": apply_isotonic(isotonic, conf),
        "reversed platt": apply_platt(PlattMap(-1.2, 0.1), conf),
    }
    for name, mapped in maps.items():
        reused = weather_draw.by_cell(mapped, cell, order)
        assert (reused is order or np.array_equal(reused, order)) == (name != "reversed platt")
        found = _sorted_scores(mapped, correct, cell, w, order)
        fresh = _sorted_scores(mapped, correct, cell, w, np.lexsort((-mapped, cell)))
        # AURC sums each tie group's (integer) weights before its term: the same bits; ECE and
        # Brier add the items of a tie group in another order
        np.testing.assert_array_equal(found[:, 2], fresh[:, 2])
        np.testing.assert_allclose(found[:, :2], fresh[:, :2], rtol=1e-12, atol=1e-15)
