"""risk_coverage against hand-computed curves and an independent loop over orderings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clearsight.metrics import risk_coverage
from clearsight.validate import InputError


def test_hand_computed_curve_with_ties():
    # confidences 0.9 (right), 0.8 (wrong), 0.8 (right), 0.3 (wrong)
    rc = risk_coverage([0.9, 0.8, 0.8, 0.3], [1, 0, 1, 0])
    assert rc.thresholds.tolist() == [0.9, 0.8, 0.3]
    assert rc.coverage.tolist() == [0.25, 0.75, 1.0]
    assert rc.risk.tolist() == pytest.approx([0.0, 1 / 3, 0.5])
    # 0.25 * 0 + 0.5 * 1/3 + 0.25 * 0.5
    assert rc.aurc == pytest.approx(1 / 6 + 1 / 8)
    # best ordering of 2 right then 2 wrong: (0 + 0 + 1/3 + 2/4) / 4
    assert rc.e_aurc == pytest.approx(1 / 6 + 1 / 8 - (1 / 3 + 1 / 2) / 4)


def test_all_correct_all_wrong_and_one_tie_group():
    right = risk_coverage([0.2, 0.9, 0.5], [True, True, True])
    assert (right.aurc, right.e_aurc) == (0.0, 0.0)
    wrong = risk_coverage([0.2, 0.9, 0.5], [0, 0, 0])
    assert wrong.aurc == pytest.approx(1.0)
    assert wrong.e_aurc == pytest.approx(0.0)
    flat = risk_coverage([0.5] * 4, [1, 0, 0, 1])  # one threshold: everything at once
    assert flat.coverage.tolist() == [1.0]
    assert flat.aurc == pytest.approx(0.5)


def test_order_of_items_does_not_matter():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 5, 40) / 4
    c = rng.random(40) < 0.6
    perm = rng.permutation(40)
    a, b = risk_coverage(s, c), risk_coverage(s[perm], c[perm])
    assert a.aurc == pytest.approx(b.aurc, abs=1e-15)
    np.testing.assert_allclose(a.coverage, b.coverage, rtol=0, atol=1e-15)


def _aurc_no_ties(confidence: np.ndarray, correct: np.ndarray) -> float:
    """(1/n) sum_i errors(top i) / i, by a plain loop over the items sorted by confidence."""
    order = sorted(range(len(confidence)), key=lambda i: -confidence[i])
    total, errors = 0.0, 0
    for rank, i in enumerate(order, start=1):
        errors += not correct[i]
        total += errors / rank
    return total / len(confidence)


@given(
    st.lists(
        st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=30, unique_by=lambda t: t[0]
    )
)
def test_no_ties_identity(pairs: list[tuple[float, bool]]) -> None:
    s = np.array([p[0] for p in pairs])
    c = np.array([p[1] for p in pairs])
    rc = risk_coverage(s, c)
    assert rc.aurc == pytest.approx(_aurc_no_ties(s, c), abs=1e-12)
    best = _aurc_no_ties(c.astype(float), c)  # correct items first: the best strict ordering
    assert rc.e_aurc == pytest.approx(rc.aurc - best, abs=1e-12)
    assert rc.e_aurc >= -1e-12
    assert np.all(np.diff(rc.coverage) > 0)
    assert rc.coverage[-1] == 1.0


def test_bad_input_is_one_clear_error():
    with pytest.raises(InputError, match="same length"):
        risk_coverage([0.1, 0.2], [1])
    with pytest.raises(InputError, match="NaN"):
        risk_coverage([0.1, float("nan")], [1, 0])
    with pytest.raises(InputError, match="boolean or 0/1"):
        risk_coverage([0.1, 0.2], [1, 2])
    with pytest.raises(InputError, match="empty"):
        risk_coverage([], [])


def test_aurc_statistic_equals_risk_coverage_on_each_resample():
    from clearsight.metrics import aurc_statistic, bootstrap_weights

    rng = np.random.default_rng(7)
    conf = rng.integers(0, 11, 50) / 10  # ties
    correct = rng.random(50) < conf
    scenes = rng.choice(["b", "a", "d", "c"], 50)
    labels = np.unique(scenes)
    stat = aurc_statistic(conf, correct, scenes)
    plain = risk_coverage(conf, correct)
    np.testing.assert_allclose(stat(np.ones((1, 4)))[0], [plain.aurc, plain.e_aurc], rtol=1e-12)
    weights = bootstrap_weights(labels.size, 20, seed=2).astype(float)
    for row, w in zip(stat(weights), weights, strict=True):
        times = w[np.searchsorted(labels, scenes)].astype(int)
        want = risk_coverage(np.repeat(conf, times), np.repeat(correct, times))
        np.testing.assert_allclose(row, [want.aurc, want.e_aurc], rtol=1e-12, atol=1e-15)
    with pytest.raises(InputError, match="one label per item"):
        aurc_statistic([0.5, 0.6], [1, 0], ["a"])
