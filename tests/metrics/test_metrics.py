"""Metrics pinned to hand-computed values and to independent implementations.

References: torchmetrics (ECE, MCE), scikit-learn (AUROC), scipy (JSD, Wilcoxon), brute-force
enumeration (Wilcoxon), and slow explicit loops (cluster and two-stage bootstrap).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import wilcoxon
from sklearn.metrics import roc_auc_score

from clearsight.metrics import (
    BlindSpot,
    Crossing,
    auroc,
    bin_edges,
    blind_spot_width,
    blind_spot_width_batch,
    bootstrap_weights,
    brier,
    cluster_bootstrap,
    cluster_bootstrap_mean,
    cluster_sums,
    crossing_visibility,
    crossing_visibility_batch,
    ece,
    jsd_bits,
    jsd_bits_batch,
    mce,
    percentile_interval,
    reliability_bins,
    two_stage_bootstrap,
    wilcoxon_exact,
)
from clearsight.metrics import bootstrap as bootstrap_module
from clearsight.validate import InputError

LEVELS = 250.0 * 2.0 ** -np.arange(8)  # 250, 125, ..., 1.953125 (docs/methods.md §1)


# ---------------------------------------------------------------- calibration


def test_bin_edges_are_the_decimal_literals():
    edges = bin_edges(10)
    assert edges[3] == 0.3  # 3 * 0.1 would be 0.30000000000000004
    assert edges[7] == 0.7
    assert edges.tolist() == [k / 10 for k in range(11)]


@pytest.mark.exact_floats("bin accuracies are means of 0/1 values, exact in any order")
def test_ece_mce_brier_hand_computed_with_edge_values():
    # 0 -> first bin (0, 0.1]; 0.3 -> (0.2, 0.3] (right-closed); 0.35 -> (0.3, 0.4];
    # 1.0 -> (0.9, 1.0].
    conf = [0.0, 0.3, 0.35, 1.0]
    correct = [False, True, False, True]
    rb = reliability_bins(conf, correct)
    assert rb.count.tolist() == [1, 0, 1, 1, 0, 0, 0, 0, 0, 1]
    assert rb.lo[2] == pytest.approx(0.2)
    assert rb.hi[2] == 0.3
    np.testing.assert_allclose(rb.mean_confidence[[0, 2, 3, 9]], [0.0, 0.3, 0.35, 1.0])
    np.testing.assert_array_equal(rb.accuracy[[0, 2, 3, 9]], [0.0, 1.0, 0.0, 1.0])
    assert np.isnan(rb.accuracy[1])
    assert np.isnan(rb.mean_confidence[1])
    # gaps: 0, 0.7, 0.35, 0 -> ECE = (0.7 + 0.35) / 4, MCE = 0.7
    assert ece(conf, correct) == pytest.approx(0.2625, abs=1e-15)
    assert mce(conf, correct) == pytest.approx(0.7, abs=1e-15)
    assert brier(conf, correct) == pytest.approx((0.49 + 0.1225) / 4, abs=1e-15)


def test_ece_edge_value_shares_the_bin_below():
    # Right-closed: 0.25 and 0.3 share (0.2, 0.3]: conf 0.275, acc 0.5 -> 0.225.
    # A left-closed binning ([0.2, 0.3), [0.3, 0.4)) would give (0.75 + 0.3) / 2 = 0.525.
    assert ece([0.25, 0.3], [1, 0]) == pytest.approx(0.225, abs=1e-15)
    assert mce([0.25, 0.3], [1, 0]) == pytest.approx(0.225, abs=1e-15)
    # 0.45 and 0.5 share (0.4, 0.5]: conf 0.475, acc 0.5 (left-closed: (0.55 + 0.5) / 2).
    assert ece([0.45, 0.5], [1, 0]) == pytest.approx(0.025, abs=1e-15)
    # 1.0 shares (0.9, 1.0] with 0.95: conf 0.975, acc 0.5.
    assert ece([0.95, 1.0], [1, 0]) == pytest.approx(0.475, abs=1e-15)


def test_ece_and_mce_match_torchmetrics_off_the_bin_edges():
    torch = pytest.importorskip("torch")
    tmc = pytest.importorskip("torchmetrics.functional.classification")
    rng = np.random.default_rng(7)
    conf = rng.uniform(0.0, 1.0, 3000)
    # keep away from the edges, where the conventions differ (see the test below)
    assert np.min(np.abs(conf * 10 - np.round(conf * 10))) > 1e-9
    correct = rng.uniform(size=conf.size) < conf**1.7  # overconfident
    preds = torch.tensor(conf, dtype=torch.float64)
    target = torch.tensor(correct.astype(np.int64))
    for n_bins in (10, 15):
        ref_l1 = tmc.binary_calibration_error(preds, target, n_bins=n_bins, norm="l1")
        ref_max = tmc.binary_calibration_error(preds, target, n_bins=n_bins, norm="max")
        assert ece(conf, correct, n_bins) == pytest.approx(float(ref_l1), abs=1e-12)
        assert mce(conf, correct, n_bins) == pytest.approx(float(ref_max), abs=1e-12)
    assert ece(conf, correct) > 0.05  # a real, non-trivial value was compared

    # On the edges torchmetrics is left-closed [lo, hi) and gives 1.0 a bin of its own.
    # (Its edges come from torch.linspace, whose 4th edge is 0.30000000000000004, so 0.3
    # happens to land below it; 0.5 is an exact edge in both.)
    edge = tmc.binary_calibration_error(
        torch.tensor([0.45, 0.5], dtype=torch.float64), torch.tensor([1, 0]), n_bins=10
    )
    assert float(edge) == pytest.approx(0.525, abs=1e-12)  # ours: 0.025
    one = tmc.binary_calibration_error(
        torch.tensor([0.95, 1.0], dtype=torch.float64), torch.tensor([1, 0]), n_bins=10
    )
    assert float(one) == pytest.approx(0.525, abs=1e-12)  # ours: 0.475


def test_brier_of_constant_half_is_a_quarter():
    assert brier([0.5] * 6, [0, 1, 1, 0, 1, 0]) == 0.25
    assert brier([1.0, 0.0], [True, False]) == 0.0


def test_auroc_hand_case_with_a_tie():
    # pairs (correct, wrong): (0.9, 0.8)=1, (0.9, 0.3)=1, (0.8, 0.8)=1/2, (0.8, 0.3)=1
    assert auroc([0.9, 0.8, 0.8, 0.3], [1, 1, 0, 0]) == 0.875
    assert auroc([0.1, 0.9], [1, 0]) == 0.0
    assert auroc([0.5, 0.5, 0.5], [1, 0, 1]) == 0.5


def test_auroc_matches_sklearn_with_many_ties():
    rng = np.random.default_rng(3)
    for n in (10, 200, 5000):
        conf = rng.integers(0, 6, n) / 5.0  # 6 distinct values: many ties
        correct = rng.uniform(size=n) < 0.2 + 0.6 * conf
        if correct.all() or not correct.any():
            continue
        assert auroc(conf, correct) == pytest.approx(roc_auc_score(correct, conf), abs=1e-12)


def test_auroc_is_nan_when_undefined():
    assert math.isnan(auroc([0.2, 0.9], [1, 1]))
    assert math.isnan(auroc([0.2, 0.9], [0, 0]))


@pytest.mark.parametrize(
    ("conf", "correct", "match"),
    [
        ([0.1, 0.2], [1], "same length"),
        ([0.1, 1.2], [1, 0], "outside"),
        ([-0.1, 0.5], [1, 0], "outside"),
        ([0.1, np.nan, np.nan], [1, 0, 1], "2 NaN"),
        ([], [], "empty"),
        ([0.1, 0.2], [1, 2], "boolean or 0/1"),
        ([[0.1, 0.2]], [[1, 0]], "1-D"),
        (["a", "b"], [1, 0], "numeric"),
    ],
)
def test_calibration_rejects_bad_input(conf, correct, match):
    for fn in (ece, mce, brier, auroc, reliability_bins):
        with pytest.raises(InputError, match=match):
            fn(conf, correct)


def test_calibration_rejects_bad_bin_count():
    with pytest.raises(InputError, match="n_bins"):
        ece([0.5], [1], n_bins=0)


# ---------------------------------------------------------------- crossing visibility


def test_crossing_monotone_exact_log_interpolation():
    values = [0.9, 0.85, 0.8, 0.6, 0.4, 0.3, 0.25, 0.25]
    c = crossing_visibility(LEVELS, values, clean=0.9, floor=0.25)
    # h = 0.575; first value < h is 0.4 at 15.625 m, previous 0.6 at 31.25 m;
    # t = (0.575 - 0.6) / (0.4 - 0.6) = 0.125; log10 V = log10 31.25 - 0.125 log10 2.
    assert c.half == pytest.approx(0.575)
    assert c.censored is None
    assert c.visibility_m == pytest.approx(31.25 * 2**-0.125, rel=1e-13)
    assert (c.clean, c.floor) == (0.9, 0.25)


def test_crossing_half_way_is_geometric_not_arithmetic_mean():
    # h = 0.5 exactly half-way between 0.8 (125 m) and 0.2 (62.5 m): V* = sqrt(125 * 62.5),
    # not the arithmetic mean 93.75.
    c = crossing_visibility(LEVELS, [1.0, 0.8, 0.2, 0, 0, 0, 0, 0], clean=1.0, floor=0.0)
    assert c.visibility_m == pytest.approx(math.sqrt(125 * 62.5), rel=1e-13)


def test_crossing_first_crossing_wins_even_if_it_recovers():
    values = [0.9, 0.5, 0.9, 0.9, 0.3, 0.25, 0.25, 0.25]
    c = crossing_visibility(LEVELS, values, clean=0.9, floor=0.25)
    t = (0.575 - 0.9) / (0.5 - 0.9)  # 0.8125, between 250 and 125 m
    assert c.censored is None
    assert c.visibility_m == pytest.approx(250 * 0.5**t, rel=1e-13)


def test_crossing_censored_below_and_above():
    below = crossing_visibility(LEVELS, [0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6], 0.9, 0.25)
    assert (below.visibility_m, below.censored) == (1.953125, "below")
    above = crossing_visibility(LEVELS, [0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3], 0.9, 0.25)
    assert (above.visibility_m, above.censored) == (250.0, "above")


def test_crossing_value_equal_to_half_is_not_past_it():
    # h = 0.5 exactly; never strictly below it.
    c = crossing_visibility(LEVELS, [1.0, 0.7, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], 1.0, 0.0)
    assert (c.visibility_m, c.censored) == (1.953125, "below")
    # equal to h at 62.5 m, then past at 31.25 m: t = 0, so V* is exactly 62.5 m
    c = crossing_visibility(LEVELS, [1.0, 0.7, 0.5, 0.2, 0, 0, 0, 0], 1.0, 0.0)
    assert (c.visibility_m, c.censored) == (62.5, None)


def test_crossing_rising_signal():
    # abstain rate: clean 0, floor 1 -> h = 0.5; first value > 0.5 is 0.8 at 15.625 m
    values = [0.0, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    c = crossing_visibility(LEVELS, values, clean=0.0, floor=1.0)
    t = (0.5 - 0.4) / (0.8 - 0.4)
    assert c.censored is None
    assert c.visibility_m == pytest.approx(31.25 * 0.5**t, rel=1e-13)
    # the same numbers read as a falling signal are already past h at 250 m
    assert crossing_visibility(LEVELS, values, clean=1.0, floor=0.0).censored == "above"
    # a rising signal that never exceeds h
    assert crossing_visibility(LEVELS, [0.1] * 8, clean=0.0, floor=1.0).censored == "below"


def test_crossing_with_a_single_level_is_censored_either_way():
    assert crossing_visibility([10.0], [0.2], 1.0, 0.0).censored == "above"
    assert crossing_visibility([10.0], [0.8], 1.0, 0.0) == Crossing(10.0, "below", 0.5, 0.0, 1.0)


def test_crossing_with_clean_equal_to_floor_is_undefined():
    with pytest.raises(InputError, match="no range"):
        crossing_visibility(LEVELS, [0.25] * 8, clean=0.25, floor=0.25)
    batch = crossing_visibility_batch(LEVELS, np.full((2, 8), 0.25), [0.25, 0.9], 0.25)
    assert np.isnan(batch.visibility_m[0])
    assert batch.censored.tolist() == ["undefined", "above"]


def test_crossing_batch_equals_scalar_loop():
    rng = np.random.default_rng(11)
    curves = np.sort(rng.uniform(0, 1, (300, 8)), axis=1)[:, ::-1]  # mostly falling
    curves += rng.normal(0, 0.1, curves.shape)  # some non-monotone
    clean = rng.uniform(0.6, 1.0, 300)
    floor = rng.uniform(0.0, 0.5, 300)
    batch = crossing_visibility_batch(LEVELS, curves, clean, floor)
    for i in range(300):
        c = crossing_visibility(LEVELS, curves[i], clean[i], floor[i])
        assert batch.visibility_m[i] == pytest.approx(c.visibility_m, rel=1e-13)
        assert batch.censored[i] == (c.censored or "none")
    assert set(batch.censored.tolist()) == {"none", "below", "above"}  # all kinds exercised
    with_nan = curves.copy()
    with_nan[5, 3] = np.nan
    b2 = crossing_visibility_batch(LEVELS, with_nan, clean, floor)
    assert np.isnan(b2.visibility_m[5])
    assert b2.censored[5] == "undefined"


@pytest.mark.parametrize(
    ("levels", "match"),
    [
        (LEVELS[::-1], "strictly decrease"),
        ([250, 125, 125, 62.5], "strictly decrease"),
        ([250, -125], "> 0"),
        ([250, np.nan], "NaN"),
        ([], "empty"),
    ],
)
def test_crossing_rejects_bad_levels(levels, match):
    with pytest.raises(InputError, match=match):
        crossing_visibility(levels, np.zeros(len(levels)), clean=1.0, floor=0.0)


def test_crossing_rejects_bad_values():
    with pytest.raises(InputError, match=r"same length|last axis"):
        crossing_visibility(LEVELS, [1.0, 0.5], clean=1.0, floor=0.0)
    with pytest.raises(InputError, match="1 NaN"):
        crossing_visibility(LEVELS, [1, 1, np.nan, 0, 0, 0, 0, 0], clean=1.0, floor=0.0)
    with pytest.raises(InputError, match="finite"):
        crossing_visibility(LEVELS, [0.0] * 8, clean=np.nan, floor=0.0)


# ---------------------------------------------------------------- blind-spot width

# Curves (clean 1, floor 0) with a known censoring state; "none" crosses inside the sweep.
CURVES = {
    None: [1.0, 1.0, 0.8, 0.2, 0.0, 0.0, 0.0, 0.0],  # crosses between 125 and 62.5 m
    "below": [1.0, 0.9, 0.9, 0.8, 0.8, 0.7, 0.7, 0.6],
    "above": [0.1] * 8,
}
# Rows: accuracy censoring; columns: awareness censoring (the docstring's table).
BOUND_TABLE = {
    (None, None): "exact",
    (None, "below"): "lower",
    (None, "above"): "upper",
    ("below", None): "upper",
    ("below", "below"): "undetermined",
    ("below", "above"): "upper",
    ("above", None): "lower",
    ("above", "below"): "lower",
    ("above", "above"): "undetermined",
}


@pytest.mark.parametrize(("acc_state", "aware_state"), list(BOUND_TABLE))
def test_blind_spot_bound_for_all_nine_censoring_combinations(acc_state, aware_state):
    acc = crossing_visibility(LEVELS, CURVES[acc_state], 1.0, 0.0)
    aware = crossing_visibility(LEVELS, CURVES[aware_state], 1.0, 0.0)
    assert (acc.censored, aware.censored) == (acc_state, aware_state)
    w = blind_spot_width(acc, aware)
    assert w.bound == BOUND_TABLE[(acc_state, aware_state)]
    assert w.value == pytest.approx(math.log10(acc.visibility_m / aware.visibility_m))


def test_blind_spot_bound_table_is_complete_and_batch_agrees():
    states: list[str | None] = [None, "below", "above"]
    assert set(BOUND_TABLE) == set(itertools.product(states, states))
    acc_curves = np.array([CURVES[a] for a, _ in BOUND_TABLE])
    aware_curves = np.array([CURVES[w] for _, w in BOUND_TABLE])
    acc = crossing_visibility_batch(LEVELS, acc_curves, 1.0, 0.0)
    aware = crossing_visibility_batch(LEVELS, aware_curves, 1.0, 0.0)
    w = blind_spot_width_batch(acc, aware)
    assert w.bound.tolist() == list(BOUND_TABLE.values())
    undefined = crossing_visibility_batch(LEVELS, np.zeros((1, 8)), 0.0, 0.0)
    w_undef = blind_spot_width_batch(undefined, acc)
    assert np.isnan(w_undef.value).all()
    assert w_undef.bound.tolist() == ["undetermined"] * 9


def test_blind_spot_hand_value():
    acc = Crossing(visibility_m=31.25, censored=None, half=0.6, floor=0.25, clean=0.95)
    aware = Crossing(visibility_m=3.90625, censored=None, half=0.6, floor=0.25, clean=0.95)
    w = blind_spot_width(acc, aware)
    assert w == BlindSpot(value=pytest.approx(math.log10(8)), bound="exact")
    assert blind_spot_width(aware, acc).value == pytest.approx(-math.log10(8))


def test_depth_scale_invariance_of_crossing_and_width():
    acc_values = [0.95, 0.9, 0.85, 0.7, 0.5, 0.3, 0.25, 0.25]
    conf_values = [0.9, 0.9, 0.9, 0.88, 0.85, 0.8, 0.6, 0.4]
    acc = crossing_visibility(LEVELS, acc_values, clean=0.95, floor=0.25)
    aware = crossing_visibility(LEVELS, conf_values, clean=0.92, floor=0.25)
    w = blind_spot_width(acc, aware)
    assert w.bound == "exact"
    assert w.value > 0
    for k in (0.37, 1.7, 4.0):
        acc_k = crossing_visibility(LEVELS * k, acc_values, clean=0.95, floor=0.25)
        aware_k = crossing_visibility(LEVELS * k, conf_values, clean=0.92, floor=0.25)
        assert acc_k.visibility_m == pytest.approx(k * acc.visibility_m, rel=1e-12)
        assert aware_k.visibility_m == pytest.approx(k * aware.visibility_m, rel=1e-12)
        w_k = blind_spot_width(acc_k, aware_k)
        assert w_k.value == pytest.approx(w.value, abs=1e-12)
        assert w_k.bound == w.bound


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_weights_are_multinomial_counts():
    w = bootstrap_weights(7, 4000, seed=1)
    assert w.shape == (4000, 7)
    assert np.issubdtype(w.dtype, np.integer)
    assert (w.sum(axis=1) == 7).all()
    assert (w >= 0).all()
    # each count is Binomial(7, 1/7): mean 1, variance 6/7
    np.testing.assert_allclose(w.mean(axis=0), 1.0, atol=0.06)
    np.testing.assert_allclose(w.var(axis=0), 6 / 7, atol=0.08)
    np.testing.assert_array_equal(w, bootstrap_weights(7, 4000, seed=1))
    assert not np.array_equal(w, bootstrap_weights(7, 4000, seed=2))
    with pytest.raises(InputError, match="seed"):
        bootstrap_weights(7, 10, seed=None)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="n_clusters"):
        bootstrap_weights(0, 10, seed=0)


def test_percentile_interval_hand_case_and_nans():
    samples = np.arange(101.0)  # 0..100: the q-th percentile is q
    assert percentile_interval(samples, level=0.9) == (5.0, 95.0)
    assert percentile_interval(samples) == (2.5, 97.5)
    with_nan = np.concatenate([samples, [np.nan] * 30])
    assert percentile_interval(with_nan, level=0.9) == (5.0, 95.0)
    low, high = percentile_interval([np.nan, np.nan])
    assert math.isnan(low)
    assert math.isnan(high)
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(InputError, match="level"):
            percentile_interval(samples, level=bad)


def _clustered_data(rng, n_clusters, effect_sd=1.0):
    sizes = rng.integers(1, 9, n_clusters)
    labels = np.repeat(np.arange(n_clusters), sizes)
    values = rng.normal(0.0, effect_sd, n_clusters)[labels] + rng.normal(0.0, 1.0, labels.size)
    return values, labels


@pytest.mark.exact_floats("the last line calls the same function twice with one seed (determinism)")
def test_cluster_bootstrap_mean_equals_slow_resampling_loop():
    rng = np.random.default_rng(5)
    values, labels = _clustered_data(rng, 25)
    names = np.array([f"img{j:03d}" for j in range(25)])[labels]  # string labels, sorted order
    n_boot, seed = 300, 42
    res = cluster_bootstrap_mean(values, names, n_boot=n_boot, level=0.9, seed=seed)
    W = bootstrap_weights(25, n_boot, seed)
    by_cluster = [values[names == name] for name in np.unique(names)]
    reps = []
    for row in W:  # the slow way: build each resampled data set and take its mean
        resampled = np.concatenate([by_cluster[c] for c in range(25) for _ in range(row[c])])
        reps.append(resampled.mean())
    low, high = np.percentile(reps, [5, 95])
    assert res.estimate == pytest.approx(values.mean(), rel=1e-13)
    assert res.low == pytest.approx(low, rel=1e-12)
    assert res.high == pytest.approx(high, rel=1e-12)
    assert (res.n_boot, res.level) == (n_boot, 0.9)
    assert res.low < res.estimate < res.high
    assert res == cluster_bootstrap_mean(values, names, n_boot=n_boot, level=0.9, seed=seed)
    assert res != cluster_bootstrap_mean(values, names, n_boot=n_boot, level=0.9, seed=43)


def test_cluster_bootstrap_mean_rejects_bad_input():
    with pytest.raises(InputError, match="same length"):
        cluster_bootstrap_mean([1.0, 2.0], [0])
    with pytest.raises(InputError, match="NaN"):
        cluster_bootstrap_mean([1.0, np.nan], [0, 1])
    with pytest.raises(InputError, match="empty"):
        cluster_bootstrap_mean([], [])
    with pytest.raises(InputError, match="n_boot"):
        cluster_bootstrap_mean([1.0], [0], n_boot=0)


def test_cluster_bootstrap_coverage_and_why_clusters_matter():
    # 200 simulated data sets with true mean 0 and strong image effects (ICC 0.5).
    rng = np.random.default_rng(2024)
    hits_cluster = hits_item = 0
    n_sets = 200
    for s in range(n_sets):
        values, labels = _clustered_data(rng, 60)
        ci = cluster_bootstrap_mean(values, labels, n_boot=400, seed=s)
        hits_cluster += ci.low <= 0.0 <= ci.high
        naive = cluster_bootstrap_mean(values, np.arange(values.size), n_boot=200, seed=s)
        hits_item += naive.low <= 0.0 <= naive.high
    # Nominal 0.95; the percentile bootstrap with 60 clusters of unequal size undercovers a
    # little (0.93 over 1000 such data sets); binomial sd over 200 sets is 0.018.
    assert 0.88 <= hits_cluster / n_sets <= 0.98
    assert hits_item / n_sets < 0.85  # resampling items ignores the image effects


@pytest.mark.exact_floats(
    "the replicates are one matrix product with one seed's weights on both sides"
)
def test_cluster_bootstrap_general_matches_mean_and_handles_vectors():
    rng = np.random.default_rng(8)
    values, labels = _clustered_data(rng, 30)
    cs = cluster_sums(values, labels)
    res = cluster_bootstrap(lambda W: (W @ cs.sums) / (W @ cs.counts), labels, 500, 0.9, 3)
    ref = cluster_bootstrap_mean(values, labels, n_boot=500, level=0.9, seed=3)
    got = res.interval()
    # Two paths to the estimate: a (1, C) matrix product here, a direct mean there. OpenBLAS
    # picks its kernels (and so its summation order) by CPU, so they agree to rounding only:
    # rtol 1e-12 is ~4500 ulp, far above the ~C ulp error of a 30-term sum, far below any
    # statistical difference. The replicates are the same (B, C) product with the same seed's
    # weights on both sides, but the bounds may still be snapped onto the estimate by
    # contain_estimate, so they get the same tolerance.
    np.testing.assert_allclose(
        [got.estimate, got.low, got.high], [ref.estimate, ref.low, ref.high], rtol=1e-12
    )
    assert (got.n_boot, got.level) == (ref.n_boot, ref.level)
    # the replicates are one computation (the same product, the same seed's weights): exact
    W = bootstrap_weights(30, 500, 3).astype(np.float64)
    np.testing.assert_array_equal(res.replicates, (W @ cs.sums) / (W @ cs.counts))
    assert res.replicates.shape == (500,)
    assert res.n_undefined == 0

    # a statistic undefined on some resamples: NaN replicates are counted and ignored
    def flaky(W):
        out = (W @ cs.sums) / (W @ cs.counts)
        return np.where(W[:, 0] > 1, np.nan, out)

    res2 = cluster_bootstrap(flaky, 30, 500, 0.9, 3)
    n_nan = int((bootstrap_weights(30, 500, 3)[:, 0] > 1).sum())
    assert res2.n_undefined == n_nan > 0
    assert res2.estimate == pytest.approx(values.mean())
    with pytest.raises(InputError, match=r"one row per weight row|shape"):
        cluster_bootstrap(lambda W: W.sum(), 30, 50)


@pytest.mark.exact_floats("sums and counts of small integers are exact in any order")
def test_cluster_sums_per_column():
    values = [1, 0, 1, 1, 0, 1]
    images = ["b", "a", "b", "a", "b", "b"]
    levels = [0, 0, 1, 1, 1, 0]
    cs = cluster_sums(values, images, columns=levels)
    assert cs.clusters.tolist() == ["a", "b"]
    assert cs.columns is not None
    assert cs.columns.tolist() == [0, 1]
    np.testing.assert_array_equal(cs.sums, [[0, 1], [2, 1]])
    np.testing.assert_array_equal(cs.counts, [[1, 1], [2, 2]])


def test_bootstrap_of_a_whole_curve_and_its_crossing_in_one_go():
    # 40 images x 8 levels x 4 questions; accuracy falls with visibility.
    rng = np.random.default_rng(9)
    n_img, n_q = 40, 4
    p = 0.25 + 0.7 / (1.0 + (8.0 / LEVELS) ** 2)  # true accuracy curve, floor 0.25
    img = np.repeat(np.arange(n_img), 8 * n_q)
    lvl = np.tile(np.repeat(np.arange(8), n_q), n_img)
    correct = rng.uniform(size=img.size) < p[lvl]
    acc = cluster_sums(correct, img, columns=lvl)

    def stat(W):
        curve = (W @ acc.sums) / (W @ acc.counts)  # (rows, 8)
        cr = crossing_visibility_batch(LEVELS, curve, clean=0.95, floor=0.25)
        return np.column_stack([curve, np.log10(cr.visibility_m)])

    res = cluster_bootstrap(stat, acc.clusters.size, n_boot=1000, seed=1)
    full_curve = acc.sums.sum(0) / acc.counts.sum(0)
    np.testing.assert_allclose(res.estimate[:8], full_curve)
    c = crossing_visibility(LEVELS, full_curve, clean=0.95, floor=0.25)
    assert res.estimate[8] == pytest.approx(math.log10(c.visibility_m))
    assert (res.low <= res.estimate).all()
    assert (res.estimate <= res.high).all()
    true_cross = crossing_visibility(LEVELS, p, clean=0.95, floor=0.25).visibility_m
    assert res.low[8] < math.log10(true_cross) < res.high[8]
    # same seed, same resampled images: a second call is paired row by row
    again = cluster_bootstrap(lambda W: (W @ acc.sums) / (W @ acc.counts), 40, 1000, seed=1)
    np.testing.assert_allclose(again.replicates, res.replicates[:, :8])


def test_two_stage_with_one_benchmark_equals_item_bootstrap():
    values = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.5])
    two = two_stage_bootstrap(values, ["mmmu"] * 8, n_boot=3000, seed=4)
    one = cluster_bootstrap_mean(values, np.arange(8), n_boot=3000, seed=4)
    assert two.estimate == pytest.approx(one.estimate)
    assert two.low == pytest.approx(one.low, abs=1e-12)
    assert two.high == pytest.approx(one.high, abs=1e-12)


@pytest.mark.exact_floats("0/1 values; the last line calls the same function twice with one seed")
def test_two_stage_hand_case_benchmarks_weigh_equally():
    # benchmark a: ten 0s, b: two 1s. Estimate = mean of means = 0.5 (not 2/12).
    # Items within a benchmark are constant, so a replicate is (copies of b) / 2:
    # 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4 -> 95 % interval (0, 1).
    values = [0.0] * 10 + [1.0] * 2
    bench = ["a"] * 10 + ["b"] * 2
    res = two_stage_bootstrap(values, bench, n_boot=2000, seed=0)
    assert res.estimate == 0.5
    assert (res.low, res.high) == (0.0, 1.0)
    assert res == two_stage_bootstrap(values, bench, n_boot=2000, seed=0)


def _two_stage_slow(values, bench, n_boot, level, seed):
    """Reference: explicit loops over draws and copies, same random stream order."""
    rng = np.random.default_rng(seed)
    names = np.unique(bench)
    groups = [values[bench == n] for n in names]
    k = len(groups)
    counts = rng.multinomial(k, np.full(k, 1.0 / k), size=n_boot)
    totals = np.zeros(n_boot)
    for j, items in enumerate(groups):
        m = items.size
        for b in range(n_boot):
            for _ in range(counts[b, j]):
                w = rng.multinomial(m, np.full(m, 1.0 / m))
                totals[b] += np.repeat(items, w).mean()
    reps = totals / k
    return np.percentile(reps, [50 * (1 - level), 50 * (1 + level)])


def test_two_stage_equals_slow_loop_and_chunking_changes_nothing(monkeypatch):
    rng = np.random.default_rng(12)
    sizes = [3, 7, 12, 5]
    values = rng.normal(size=sum(sizes)) + np.repeat([0.0, 1.0, -0.5, 2.0], sizes)
    bench = np.repeat(["d", "c", "b", "a"], sizes)
    res = two_stage_bootstrap(values, bench, n_boot=400, level=0.9, seed=6)
    low, high = _two_stage_slow(values, bench, 400, 0.9, 6)
    assert (res.low, res.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    means = [values[bench == n].mean() for n in "abcd"]
    assert res.estimate == pytest.approx(np.mean(means))
    monkeypatch.setattr(bootstrap_module, "_CHUNK_ELEMENTS", 20)  # one chunk per few copies
    chunked = two_stage_bootstrap(values, bench, n_boot=400, level=0.9, seed=6)
    assert chunked.low == pytest.approx(res.low, abs=1e-12)  # only the summation order differs
    assert chunked.high == pytest.approx(res.high, abs=1e-12)


# ---------------------------------------------------------------- Wilcoxon


def _wilcoxon_brute_force(d):
    """Exact two-sided p by enumerating all 2**n sign patterns (no ties, no zeros)."""
    ranks = np.argsort(np.argsort(np.abs(d))) + 1
    t_plus = ranks[d > 0].sum()
    signs = np.array(list(itertools.product([0, 1], repeat=d.size)))
    null = signs @ ranks
    p = 2 * min((null <= t_plus).mean(), (null >= t_plus).mean())
    return min(t_plus, ranks.sum() - t_plus), min(p, 1.0)


def test_wilcoxon_known_examples():
    # all six differences positive: T = 0, p = 2 / 2**6
    assert wilcoxon_exact([1, 2, 3, 4, 5, 6], [0] * 6) == (0.0, 0.03125)
    rng = np.random.default_rng(1)
    x = rng.normal(0.3, 1, 11)
    y = rng.normal(0.0, 1, 11)
    stat, p = wilcoxon_exact(x, y)
    ref = wilcoxon(x, y, method="exact")
    assert (stat, p) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))
    b_stat, b_p = _wilcoxon_brute_force(x - y)
    assert stat == b_stat
    assert p == pytest.approx(b_p, abs=1e-12)


def test_wilcoxon_drops_zero_differences():
    x = np.array([0.61, 0.52, 0.70, 0.44, 0.58, 0.66, 0.50])
    y = np.array([0.55, 0.52, 0.61, 0.47, 0.58, 0.49, 0.41])  # two zero differences
    nz = x != y
    assert wilcoxon_exact(x, y) == wilcoxon_exact(x[nz], y[nz])
    assert wilcoxon_exact([1.0, 2.0], [1.0, 2.0]) == (0.0, 1.0)
    with pytest.raises(InputError, match="same length"):
        wilcoxon_exact([1.0, 2.0], [1.0])
    with pytest.raises(InputError, match="NaN"):
        wilcoxon_exact([1.0, np.nan], [1.0, 2.0])


def _tied_brute_force(d: list[Fraction]) -> tuple[Fraction, Fraction]:
    """(T, p) by enumerating all 2**n sign patterns of the mid-ranks, in exact rationals."""
    mags = sorted(abs(v) for v in d)
    rank = {}
    for m in set(mags):
        first = mags.index(m) + 1
        rank[m] = Fraction(2 * first + mags.count(m) - 1, 2)  # mid-rank of the tie group
    ranks = [rank[abs(v)] for v in d]
    t_plus = sum(r for r, v in zip(ranks, d, strict=True) if v > 0)
    null = [
        sum(r for r, e in zip(ranks, signs, strict=True) if e)
        for signs in itertools.product((0, 1), repeat=len(d))
    ]
    below = Fraction(sum(s <= t_plus for s in null), len(null))
    above = Fraction(sum(s >= t_plus for s in null), len(null))
    return min(t_plus, sum(ranks) - t_plus), min(Fraction(1), 2 * min(below, above))


def test_wilcoxon_is_exact_with_ties():
    d = [Fraction(k, 8) for k in (1, 1, -1, 2, 3, 3, 4, -4, 5, 6)]
    stat, p = wilcoxon_exact([float(v) for v in d], [0.0] * len(d))
    want_t, want_p = _tied_brute_force(d)
    assert (stat, p) == (float(want_t), float(want_p))  # dyadic: exact in float64
    assert p == 0.078125  # the example; scipy's no-ties table gives 0.0840
    assert wilcoxon(np.array(d, dtype=float), method="exact").pvalue == pytest.approx(0.083984375)
    rng = np.random.default_rng(4)
    for n in (1, 2, 5, 9, 12):
        for _ in range(5):
            ints = rng.integers(-4, 5, n)  # many ties, some zeros (dropped)
            if not ints.any():
                continue
            stat, p = wilcoxon_exact(ints / 4, np.zeros(n))
            want_t, want_p = _tied_brute_force([Fraction(int(v), 4) for v in ints if v])
            assert (stat, p) == (float(want_t), float(want_p)), ints


def test_wilcoxon_large_n_stays_a_probability():
    rng = np.random.default_rng(5)
    x = rng.normal(0.1, 1, 80).round(1)  # n > 53: floating point, with ties
    stat, p = wilcoxon_exact(x, np.zeros(80))
    assert 0.0 < p <= 1.0
    # symmetric null: swapping the sides gives the same test
    assert wilcoxon_exact(np.zeros(80), x) == pytest.approx((stat, p), rel=1e-12)


# ---------------------------------------------------------------- Jensen–Shannon


def test_jsd_hand_cases():
    assert jsd_bits([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]) == 0.0
    assert jsd_bits([1, 0, 0], [0, 0.5, 0.5]) == 1.0
    # m = (0.75, 0.25): KL(p||m) = log2(4/3), KL(q||m) = log2(4/3)/2 -> JSD = 0.75 log2(4/3)
    assert jsd_bits([1, 0], [0.5, 0.5]) == pytest.approx(0.75 * math.log2(4 / 3), rel=1e-14)
    assert jsd_bits([2, 0], [3, 3]) == pytest.approx(0.75 * math.log2(4 / 3), rel=1e-14)


def test_jsd_matches_scipy_squared_distance():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(11, 0.5), 200)
    q = rng.dirichlet(np.full(11, 0.5), 200)
    p[:20, :5] = 0.0  # zeros in the support
    ref = jensenshannon(p, q, base=2, axis=1) ** 2
    np.testing.assert_allclose(jsd_bits_batch(p, q), ref, atol=1e-12)
    np.testing.assert_allclose(jsd_bits_batch(q, p), ref, atol=1e-12)  # symmetric
    assert jsd_bits(p[0], q[0]) == pytest.approx(ref[0], abs=1e-12)
    assert ((ref >= 0) & (ref <= 1)).all()


@pytest.mark.parametrize(
    ("p", "q", "match"),
    [
        ([0.5, -0.1, 0.6], [0.3, 0.3, 0.4], "negative"),
        ([0, 0, 0], [0.3, 0.3, 0.4], "all-zero"),
        ([0.5, 0.5], [0.3, 0.3, 0.4], "same length"),
        ([0.5, np.nan], [0.5, 0.5], "NaN"),
        ([], [], "empty"),
    ],
)
def test_jsd_rejects_bad_input(p, q, match):
    with pytest.raises(InputError, match=match):
        jsd_bits(p, q)


# --------------------------------------------------------------------------------------------
# An interval contains its own estimate: constant statistics and rounding-only gaps


def test_a_constant_statistic_has_the_interval_of_its_estimate_exactly():
    # 0.7 is not a binary fraction: per-cluster sums of 0.7s, reweighted, round differently
    # in each replicate and in the estimate, so before contain_estimate the bounds missed the
    # estimate by ~1e-16 (the 50-scene report crash).
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 50, 2000)
    values = np.full(2000, 0.7)
    mean = cluster_bootstrap_mean(values, labels, n_boot=400, seed=1)
    assert mean.low == mean.estimate == mean.high
    cs = cluster_sums(values, labels)
    res = cluster_bootstrap(lambda W: (W @ cs.sums) / (W @ cs.counts), labels, 400, seed=1)
    assert res.low == res.estimate == res.high
    assert np.ptp(res.replicates) > 0  # the replicates themselves do differ by rounding
    two = two_stage_bootstrap(values, labels % 5, n_boot=300, seed=2)
    assert two.low == two.estimate == two.high


@pytest.mark.exact_floats(
    "contain_estimate returns its inputs or the estimate itself, no arithmetic"
)
def test_contain_estimate_moves_only_rounding_gaps():
    est = np.array([0.5, 0.5, 0.5, 0.0, 0.5, np.nan])
    low = np.array([0.5 + 1e-16, 0.4, 0.5 - 1e-16, -1e-17, 0.51, 0.1])
    high = np.array([0.5 + 2e-16, 0.5 - 1e-16, 0.5 + 1e-16, 1e-17, 0.6, 0.2])
    lo, hi = bootstrap_module.contain_estimate(est, low, high)
    # a constant statistic collapses onto its estimate; a bound beyond it by rounding is
    # moved onto it; a real gap (0.01, a biased statistic) and NaN estimates stay as they were
    np.testing.assert_array_equal(lo, [0.5, 0.4, 0.5, 0.0, 0.51, 0.1])
    np.testing.assert_array_equal(hi, [0.5, 0.5, 0.5, 0.0, 0.6, 0.2])
    assert math.copysign(1.0, lo[3]) == 1.0  # the estimate itself, not -0.0


@pytest.mark.exact_floats("both sides are the same subtractions of the same binary64 values")
def test_error_bars_are_never_negative():
    from clearsight.pages.plots import error_bars

    bars = error_bars([0.5, 0.5, 0.5], [0.5 + 1e-16, 0.4, np.nan], [0.6, 0.5 - 1e-16, 0.7])
    np.testing.assert_array_equal(bars, [[0.0, 0.5 - 0.4, 0.0], [0.6 - 0.5, 0.0, 0.7 - 0.5]])
