"""calibration_statistic: the weighted ECE/MCE/Brier/AUROC used by the scene bootstrap,
against the plain functions on the resampled data written out item by item."""

from __future__ import annotations

import numpy as np
import pytest

from clearsight.metrics import (
    CALIBRATION_STATS,
    auroc,
    bootstrap_weights,
    brier,
    calibration_statistic,
    cluster_bootstrap,
    ece,
    mce,
)
from clearsight.validate import InputError


def _data(seed: int = 0, n: int = 60):
    rng = np.random.default_rng(seed)
    conf = rng.integers(0, 21, n) / 20  # ties and bin edges on purpose
    correct = rng.random(n) < conf * 0.8 + 0.1
    scenes = rng.choice(["s3", "s1", "s7", "s2", "s9", "s4"], n)
    return conf, correct, scenes


def _plain(conf, correct):
    return [ece(conf, correct), mce(conf, correct), brier(conf, correct), auroc(conf, correct)]


def test_all_ones_gives_the_plain_metrics():
    conf, correct, scenes = _data()
    stat = calibration_statistic(conf, correct, scenes)
    got = stat(np.ones((1, 6)))[0]
    assert list(CALIBRATION_STATS) == ["ece", "mce", "brier", "auroc"]
    np.testing.assert_allclose(got, _plain(conf, correct), rtol=1e-12, atol=1e-15)


def test_weights_equal_the_resample_written_out():
    conf, correct, scenes = _data(1)
    labels = np.unique(scenes)  # column c is the c-th label in sorted order
    weights = bootstrap_weights(labels.size, 25, seed=3).astype(float)
    stat = calibration_statistic(conf, correct, scenes)
    got = stat(weights)
    for row, w in zip(got, weights, strict=True):
        times = w[np.searchsorted(labels, scenes)].astype(int)
        c, y = np.repeat(conf, times), np.repeat(correct, times)
        want = _plain(c, y)
        np.testing.assert_allclose(row, want, rtol=1e-12, atol=1e-15, equal_nan=True)


def test_a_resample_without_wrong_answers_has_no_auroc():
    conf = np.array([0.9, 0.8, 0.4, 0.3])
    correct = np.array([1, 1, 0, 0])
    stat = calibration_statistic(conf, correct, ["a", "a", "b", "b"])
    only_a = stat(np.array([[2.0, 0.0]]))[0]
    assert np.isnan(only_a[3])
    assert only_a[2] == pytest.approx((0.1**2 + 0.2**2) / 2)


def test_scene_bootstrap_intervals_cover_the_estimate():
    conf, correct, scenes = _data(2, 200)
    res = cluster_bootstrap(calibration_statistic(conf, correct, scenes), scenes, n_boot=300)
    assert res.estimate.shape == (4,)
    assert np.all(res.low <= res.estimate + 1e-12)
    assert np.all(res.estimate <= res.high + 1e-12)


def test_one_label_per_item():
    with pytest.raises(InputError, match="one label per item"):
        calibration_statistic([0.5, 0.6], [1, 0], ["a"])
