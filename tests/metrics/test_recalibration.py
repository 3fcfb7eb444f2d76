"""The recalibration maps and the conformal threshold: hand-computed cases, scikit-learn's
logistic and isotonic regressions, and conformal risk control's guarantee on exchangeable
synthetic data."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from clearsight.metrics import recalibration as rc
from clearsight.validate import InputError


def test_temperature_by_hand() -> None:
    """Every answer says (0.2, 0.8); the second letter is right in 2 of 3. The likelihood is
    largest where sigma(log 4 / T) = 2/3, i.e. log 4 / T = log 2: T = 2."""
    logprobs = np.log([[0.2, 0.8]] * 3)
    t = rc.fit_temperature(logprobs, [1, 1, 0])
    assert t == pytest.approx(2.0, rel=1e-7)
    probs = rc.apply_temperature(logprobs, t)
    assert probs[0, 1] == pytest.approx(2 / 3, rel=1e-7)
    np.testing.assert_allclose(rc.apply_temperature(logprobs, 1.0), [[0.2, 0.8]] * 3, rtol=1e-12)


def test_temperature_of_calibrated_answers_is_near_one_and_keeps_the_argmax() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 2, (20000, 4))
    probs = rc.apply_temperature(logits, 1.0)
    labels = (rng.uniform(size=(20000, 1)) > probs.cumsum(axis=1)).sum(axis=1)
    assert rc.fit_temperature(np.log(probs), labels) == pytest.approx(1.0, abs=0.05)
    hot = rc.apply_temperature(logits, 3.0)
    np.testing.assert_array_equal(hot.argmax(axis=1), probs.argmax(axis=1))
    overconfident = rc.fit_temperature(2 * np.log(probs), labels)  # sharpened twice: T ~ 2
    assert overconfident == pytest.approx(2.0, rel=0.05)


def test_temperature_refuses_bad_input() -> None:
    with pytest.raises(InputError, match="letter indices"):
        rc.fit_temperature(np.log([[0.5, 0.5]]), [2])
    with pytest.raises(InputError, match="finite"):
        rc.fit_temperature([[0.0, -np.inf]], [0])
    with pytest.raises(InputError, match="positive"):
        rc.apply_temperature([[0.0, 0.0]], 0.0)


@pytest.mark.parametrize(
    ("logprobs", "labels", "weights"),
    [
        (np.log([[0.9, 0.1], [0.2, 0.8]]), [0, 1], None),  # each right letter on top
        (np.log([[0.5, 0.5], [0.6, 0.4]]), [1, 0], None),  # a tie at the top counts as on top
        (np.log([[0.9, 0.1], [0.9, 0.1]]), [0, 1], [1, 0]),  # the one below is weighted 0
        (np.log([[1.0 - 1e-12, 1e-12]] * 3), [0, 0, 0], None),  # the observer's: floored
    ],
)
def test_temperature_refuses_answers_whose_right_letters_are_all_on_top(
    logprobs: npt.NDArray[np.float64], labels: list[int], weights: list[int] | None
) -> None:
    """The loss only falls as T falls to 0: no temperature is best (a search stopped wherever
    the loss stopped changing: T = 0.0077 on the observer's clean answers)."""
    with pytest.raises(InputError, match="on top"):
        rc.fit_temperature(logprobs, labels, weights=weights)
    below = np.vstack([logprobs, np.log([[0.3, 0.7]])])  # one right letter below: a minimum
    t = rc.fit_temperature(below, [*labels, 0], weights=None if weights is None else [*weights, 1])
    assert 1e-4 <= t <= 1e4


def test_platt_by_hand() -> None:
    """Two confidences, 0.5 (logit 0) right once in 4 and 0.8 (logit log 4) right 3 times in
    4: the fit passes through both rates, sigma(b) = 1/4 and sigma(a log 4 + b) = 3/4, so
    b = -log 3 and a = 2 log 3 / log 4 = log 3 / log 2."""
    conf = [0.5] * 4 + [0.8] * 4
    correct = [1, 0, 0, 0, 1, 1, 1, 0]
    fitted = rc.fit_platt(conf, correct)
    assert fitted.a == pytest.approx(math.log(3) / math.log(2), rel=1e-9)
    assert fitted.b == pytest.approx(-math.log(3), rel=1e-9)
    np.testing.assert_allclose(rc.apply_platt(fitted, [0.5, 0.8]), [0.25, 0.75], rtol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_platt_matches_scikit_learns_logistic_regression(seed: int) -> None:
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.05, 0.99, 500)
    correct = rng.uniform(size=500) < conf**2  # overconfident
    fitted = rc.fit_platt(conf, correct)
    s = np.log(conf / (1 - conf))[:, None]
    reference = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10000).fit(s, correct)
    assert fitted.a == pytest.approx(reference.coef_[0, 0], rel=1e-6)
    assert fitted.b == pytest.approx(reference.intercept_[0], rel=1e-6, abs=1e-8)
    np.testing.assert_allclose(
        rc.apply_platt(fitted, conf), reference.predict_proba(s)[:, 1], rtol=1e-6
    )


def test_platt_of_answers_at_one_confidence_maps_it_to_their_share_right() -> None:
    """3 of 4 right at 0.7: every (a, b) with a logit(0.7) + b = logit(3/4) = log 3 is a
    maximum; a = 0 is returned (weights: 3 of 4 counted as 3 right of 4 too)."""
    fitted = rc.fit_platt([0.7] * 4, [1, 1, 1, 0])
    assert fitted.a == 0.0
    assert fitted.b == pytest.approx(math.log(3), rel=1e-12)
    weighted = rc.fit_platt([0.7, 0.7], [1, 0], weights=[3, 1])
    assert weighted.b == pytest.approx(math.log(3), rel=1e-12)
    np.testing.assert_allclose(rc.apply_platt(fitted, [0.2, 0.7]), [0.75, 0.75], rtol=1e-12)


def test_platt_refuses_what_has_no_maximum() -> None:
    with pytest.raises(InputError, match="no maximum"):
        rc.fit_platt([0.2, 0.4, 0.6, 0.8], [0, 0, 1, 1])  # separated
    with pytest.raises(InputError, match="no maximum"):  # separated but for ties at 0.5
        rc.fit_platt([0.4, 0.5, 0.5, 0.5], [0, 0, 1, 1])
    with pytest.raises(InputError, match="no maximum"):  # Newton stopped at a = 91 here
        rc.fit_platt([0.3, *[0.5] * 7], [0, 0, *[1] * 6])
    with pytest.raises(InputError, match="no maximum"):  # the reverse
        rc.fit_platt([0.3, 0.5, 0.5, 0.9], [1, 1, 0, 0])
    with pytest.raises(InputError, match="no maximum"):
        rc.fit_platt([0.2, 0.4, 0.6], [1, 1, 1])
    assert rc.apply_platt(rc.PlattMap(1.0, 0.0), [0.3])[0] == pytest.approx(0.3)


def test_isotonic_by_hand() -> None:
    """(0.1, 1), (0.2, 0) violate the order and pool to 0.5 each; 0.3 and 0.4 stay at 1."""
    fitted = rc.fit_isotonic([0.4, 0.1, 0.3, 0.2], [1, 1, 1, 0])
    np.testing.assert_allclose(fitted.x, [0.1, 0.2, 0.3, 0.4], rtol=0)
    np.testing.assert_allclose(fitted.y, [0.5, 0.5, 1.0, 1.0], rtol=1e-15)
    np.testing.assert_allclose(rc.apply_isotonic(fitted, [0.0, 0.25, 0.35, 1.0]), [0.5, 0.75, 1, 1])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_isotonic_matches_scikit_learn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    conf = np.round(rng.uniform(0.2, 0.95, 400), 2)  # ties, as verbal confidences have
    correct = (rng.uniform(size=400) < conf**1.5).astype(float)
    fitted = rc.fit_isotonic(conf, correct)
    reference = IsotonicRegression(out_of_bounds="clip").fit(conf, correct)
    query = np.linspace(0.0, 1.0, 1001)
    np.testing.assert_allclose(
        rc.apply_isotonic(fitted, query), reference.predict(query), atol=1e-12
    )
    assert np.all(np.diff(fitted.y) >= 0)


@pytest.mark.exact_floats("the threshold is one of the confidences given, returned as is")
def test_conformal_threshold_by_hand() -> None:
    """Nine answers at 0.1..0.9, wrong at 0.1, 0.2, 0.4 and 0.7; alpha 0.3 allows
    (wrong answered + 1) / 10 <= 0.3, two wrong answers: from 0.3 up (0.4 and 0.7)."""
    conf = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    correct = [0, 0, 1, 0, 1, 1, 0, 1, 1]
    assert rc.conformal_threshold(conf, correct, 0.3) == 0.3
    assert rc.conformal_threshold(conf, correct, 0.2) == 0.5  # one wrong: 0.7
    assert rc.conformal_threshold(conf, correct, 0.5) == 0.1  # four wrong answered: 5/10
    assert rc.conformal_threshold(conf, correct, 0.05) == math.inf  # alpha < 1 / (n + 1)
    # tied confidences are answered together: 0.4 three times, one of them wrong
    tied = rc.conformal_threshold([0.2, 0.4, 0.4, 0.4, 0.9], [0, 1, 0, 1, 1], 2 / 6)
    assert tied == 0.4
    with pytest.raises(InputError, match="alpha"):
        rc.conformal_threshold(conf, correct, 1.0)


def test_conformal_risk_is_at_most_alpha_on_exchangeable_data() -> None:
    """Calibration and test answers drawn alike (confidence uniform, right with that
    probability): over 400 seeds the share of test answers given and wrong averages at most
    alpha, and not far below it (conformal risk control is tight to 2 / (n + 1))."""
    alpha, n = 0.1, 200
    risks = []
    for seed in range(400):
        rng = np.random.default_rng(seed)
        conf = rng.uniform(size=n + 4000)
        correct = rng.uniform(size=conf.size) < conf
        tau = rc.conformal_threshold(conf[:n], correct[:n], alpha)
        risks.append(np.mean((conf[n:] >= tau) & ~correct[n:]))
    assert np.mean(risks) <= alpha
    assert np.mean(risks) >= alpha - 2 / (n + 1)


# --- weighted fits: answer i counted weights[i] times (a bootstrap draw without repeating) -----

_SAMPLE = st.lists(
    st.tuples(
        st.integers(1, 9).map(lambda k: k / 10),  # confidences on a grid: ties
        st.booleans(),
        st.integers(0, 3),  # weight: 0 leaves the answer out
    ),
    min_size=1,
    max_size=40,
)


def _repeated(sample: list[tuple[float, bool, int]]) -> tuple[np.ndarray, ...]:
    """The sample as weighted arrays and as the arrays with each answer repeated."""
    conf, correct, w = (np.array(column, dtype=float) for column in zip(*sample, strict=True))
    times = w.astype(int)
    return conf, correct, w, np.repeat(conf, times), np.repeat(correct, times)


@pytest.mark.exact_floats("integer weights: the same sums of 0/1 counts and the same PAV steps")
@given(_SAMPLE)
def test_weighted_isotonic_and_threshold_equal_the_repeated_answers(
    sample: list[tuple[float, bool, int]],
) -> None:
    conf, correct, w, conf_rep, correct_rep = _repeated(sample)
    if conf_rep.size == 0:
        return
    weighted = rc.fit_isotonic(conf, correct, weights=w)
    repeated = rc.fit_isotonic(conf_rep, correct_rep)
    np.testing.assert_array_equal(weighted.x, repeated.x)
    np.testing.assert_array_equal(weighted.y, repeated.y)
    for alpha in (0.05, 0.2, 0.5):
        assert rc.conformal_threshold(conf, correct, alpha, weights=w) == (
            rc.conformal_threshold(conf_rep, correct_rep, alpha)
        )


@given(_SAMPLE)
def test_weighted_platt_equals_the_repeated_answers(sample: list[tuple[float, bool, int]]) -> None:
    """Newton's steps on weighted and on repeated sums: the same maximum within 1e-9 (the
    sums differ in their rounding), or no maximum on either."""
    conf, correct, w, conf_rep, correct_rep = _repeated(sample)
    try:
        repeated = rc.fit_platt(conf_rep, correct_rep)
    except InputError:
        with pytest.raises(InputError, match="no maximum"):
            rc.fit_platt(conf, correct, weights=w)
        return
    weighted = rc.fit_platt(conf, correct, weights=w)
    assert weighted.a == pytest.approx(repeated.a, rel=1e-9, abs=1e-9)
    assert weighted.b == pytest.approx(repeated.b, rel=1e-9, abs=1e-9)


@given(
    st.lists(
        st.tuples(
            st.lists(st.floats(-6, 0), min_size=3, max_size=3),
            st.integers(0, 2),
            st.integers(0, 3),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_weighted_temperature_equals_the_repeated_answers(
    sample: list[tuple[list[float], int, int]],
) -> None:
    """The weighted mean NLL and the repeated one differ in their rounding only: each fit's
    temperature is as good as the other's on the repeated answers, within 1e-9 of the NLL, or
    neither has one (every right letter on top)
    (where the NLL is flat, e.g. every answer's right letter far ahead, the two may stop at
    different temperatures: test_weighted_temperature_on_a_sample_of_letters compares them)."""
    z = np.array([row for row, _, _ in sample])
    labels = np.array([label for _, label, _ in sample])
    w = np.array([weight for _, _, weight in sample])
    if w.sum() == 0:
        return
    z_rep, labels_rep = np.repeat(z, w, axis=0), np.repeat(labels, w)

    def nll(t: float) -> float:
        probs = rc.apply_temperature(z_rep, t)[np.arange(labels_rep.size), labels_rep]
        return float(-np.mean(np.log(probs)))

    try:
        repeated = rc.fit_temperature(z_rep, labels_rep)
    except InputError:  # every right letter on top: on either
        with pytest.raises(InputError, match="on top"):
            rc.fit_temperature(z, labels, weights=w)
        return
    weighted = rc.fit_temperature(z, labels, weights=w)
    assert nll(weighted) == pytest.approx(nll(repeated), abs=1e-9)


def test_weighted_temperature_on_a_sample_of_letters() -> None:
    """Letters of 400 answers with weights 0..3: the same temperature as the answers written
    out, within 1e-7 relative."""
    rng = np.random.default_rng(5)
    z = np.log(rng.dirichlet(np.full(4, 0.5), size=400))
    labels = rng.integers(0, 4, 400)
    w = rng.integers(0, 4, 400)
    weighted = rc.fit_temperature(z, labels, weights=w)
    repeated = rc.fit_temperature(np.repeat(z, w, axis=0), np.repeat(labels, w))
    assert weighted == pytest.approx(repeated, rel=1e-7)


@pytest.mark.parametrize("seed", [0, 1])
def test_weighted_fits_match_scikit_learns_sample_weight(seed: int) -> None:
    rng = np.random.default_rng(seed)
    conf = np.round(rng.uniform(0.05, 0.99, 300), 2)
    correct = (rng.uniform(size=300) < conf**2).astype(float)
    w = rng.integers(0, 4, 300).astype(float)
    isotonic = rc.fit_isotonic(conf, correct, weights=w)
    reference = IsotonicRegression(out_of_bounds="clip").fit(conf, correct, sample_weight=w)
    query = np.linspace(0.0, 1.0, 1001)
    np.testing.assert_allclose(
        rc.apply_isotonic(isotonic, query), reference.predict(query), atol=1e-12
    )
    platt = rc.fit_platt(conf, correct, weights=w)
    s = np.log(conf / (1 - conf))[:, None]
    logistic = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10000)
    logistic.fit(s, correct, sample_weight=w)
    assert platt.a == pytest.approx(logistic.coef_[0, 0], rel=1e-6)
    assert platt.b == pytest.approx(logistic.intercept_[0], rel=1e-6, abs=1e-8)


def test_temperature_confidence_is_the_top_letters_probability() -> None:
    rng = np.random.default_rng(3)
    z = np.log(rng.dirichlet(np.ones(4), size=200))
    for t in (0.3, 1.0, 2.5):
        np.testing.assert_allclose(
            rc.temperature_confidence(z, t), rc.apply_temperature(z, t).max(axis=1), rtol=1e-14
        )
    with pytest.raises(InputError, match="positive"):
        rc.temperature_confidence(z, -1.0)


def test_weights_are_refused_when_negative_or_of_another_length() -> None:
    with pytest.raises(InputError, match="non-negative"):
        rc.fit_isotonic([0.2, 0.4], [0, 1], weights=[1, -1])
    with pytest.raises(InputError, match="2 answers"):
        rc.conformal_threshold([0.2, 0.4], [0, 1], 0.1, weights=[1])
    with pytest.raises(InputError, match="weights has 1 NaN"):
        rc.fit_platt([0.2, 0.4], [0, 1], weights=[1, np.nan])
