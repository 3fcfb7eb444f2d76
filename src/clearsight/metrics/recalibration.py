r"""Post-hoc recalibration maps and a conformal abstention threshold, as pure functions: fitted
on one set of answers (say the clean condition's), applied to any other (each fog level's), so
that whether a calibration made on clear images survives the weather can be measured.

Three maps of a confidence, each fitted by maximum likelihood or least squares on ``(confidence,
correct)`` pairs, and a threshold:

- :func:`fit_temperature` / :func:`apply_temperature`: temperature scaling of the letter
  log-probabilities (one parameter; the argmax never moves), :func:`temperature_confidence`
  the top letter's probability alone;
- :func:`fit_platt` / :func:`apply_platt`: Platt's logistic map of the confidence's logit;
- :func:`fit_isotonic` / :func:`apply_isotonic`: the non-decreasing step map (pool adjacent
  violators), interpolated between its points as scikit-learn's ``IsotonicRegression`` does;
- :func:`conformal_threshold`: the split-conformal risk-control threshold (Angelopoulos et al.,
  "Conformal risk control", ICLR 2024) below which a model abstains, so that the expected share
  of answers that are given *and* wrong stays at most a target ``alpha`` on exchangeable data.

Every fit takes optional ``weights``, one non-negative number per answer: the fit of the sample in
which answer i appears ``weights[i]`` times (a bootstrap draw that weights each photo's answers
by how often it was drawn, without repeating them). Answers of weight 0 are left out.

A monotone map cannot move a crossing of accuracy, only of confidence; the threshold's
guarantee holds only where the new answers are exchangeable with the calibration ones, which a
change of visibility breaks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

from clearsight.metrics._checks import (
    FloatArray,
    as_float_array,
    check_finite,
    check_same_length,
)
from clearsight.metrics.calibration import _check_pair as check_pair
from clearsight.validate import InputError

__all__ = [
    "IsotonicMap",
    "PlattMap",
    "apply_isotonic",
    "apply_platt",
    "apply_temperature",
    "conformal_threshold",
    "fit_isotonic",
    "fit_platt",
    "fit_temperature",
    "temperature_confidence",
]

#: Confidences are kept this far from 0 and 1 before their logit is taken.
LOGIT_EPS = 1e-12


def _check_weights(weights: npt.ArrayLike | None, n: int) -> FloatArray:
    """``n`` finite non-negative weights (None: every answer once)."""
    if weights is None:
        return np.ones(n)
    w = check_finite(as_float_array(weights, "weights"), "weights")
    if w.size != n:
        raise InputError(f"weights has {w.size} values for {n} answers")
    if (w < 0).any():
        raise InputError("weights must be non-negative (how often each answer counts)")
    return w


def _weighted_pair(
    confidence: npt.ArrayLike, correct: npt.ArrayLike, weights: npt.ArrayLike | None
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The checked pairs of positive weight and their weights (those of weight 0 left out: they
    are not in the sample)."""
    conf, y = check_pair(confidence, correct)
    w = _check_weights(weights, conf.size)
    keep = w > 0
    return conf[keep], y[keep], w[keep]


def _check_letters(
    logprobs: npt.ArrayLike, labels: npt.ArrayLike
) -> tuple[FloatArray, npt.NDArray[np.intp]]:
    """(N, K) finite log-probabilities and N correct-letter indices 0..K-1."""
    z = as_float_array(logprobs, "logprobs", ndim=2)
    if not np.isfinite(z).all():
        raise InputError("logprobs must be finite (a letter the model never gives: drop it)")
    y = as_float_array(labels, "labels")
    check_same_length(z, y, "logprobs", "labels")
    if not np.all((y == np.round(y)) & (y >= 0) & (y < z.shape[1])):
        raise InputError(f"labels must be letter indices 0..{z.shape[1] - 1}")
    return z, y.astype(np.intp)


def apply_temperature(logprobs: npt.ArrayLike, temperature: float) -> FloatArray:
    r"""The letters' probabilities at temperature :math:`T`:

    .. math::

        p_{ik}(T) = \frac{\exp(z_{ik} / T)}{\sum_j \exp(z_{ij} / T)}

    with :math:`z_{ik}` the log-probability of letter :math:`k` for answer :math:`i` (any
    constant per row cancels, so log-probabilities and logits give the same map)."""
    return special.softmax(_scaled(logprobs, temperature), axis=1)


def _scaled(logprobs: npt.ArrayLike, temperature: float) -> FloatArray:
    """:math:`z / T` of checked log-probabilities and temperature."""
    z = as_float_array(logprobs, "logprobs", ndim=2)
    if not temperature > 0 or not np.isfinite(temperature):
        raise InputError(f"temperature must be positive and finite, got {temperature!r}")
    return z / temperature


def temperature_confidence(logprobs: npt.ArrayLike, temperature: float) -> FloatArray:
    r"""The most probable letter's probability at temperature :math:`T`, the confidence of a
    temperature-scaled answer:

    .. math::

        \max_k p_{ik}(T) = 1 \Big/ \sum_j \exp\bigl(z_{ij} / T - \max_k z_{ik} / T\bigr),

    the row maxima of :func:`apply_temperature` (its top letter's :math:`\exp(0) = 1` over the
    same sum, to within rounding) without forming every letter's probability. Each row is
    shifted by its top letter before it is scaled and its terms are summed smallest first, so
    two answers whose letters differ only in order (or, where the subtraction is exact, by a
    constant) get the same bits at every temperature: a tie, which AURC takes together, is
    not made or broken by the temperature's last bits."""
    z = _scaled(logprobs, 1.0)
    shifted = _scaled(z - z.max(axis=1, keepdims=True), temperature)
    return 1.0 / np.sort(np.exp(shifted), axis=1).sum(axis=1)


def fit_temperature(
    logprobs: npt.ArrayLike, labels: npt.ArrayLike, *, weights: npt.ArrayLike | None = None
) -> float:
    r"""The temperature that minimises the letters' negative log-likelihood, each answer
    weighted by :math:`w_i` (all 1 without ``weights``):

    .. math::

        \hat T = \arg\min_{T > 0} -\frac{1}{\sum_i w_i} \sum_i w_i \log p_{i y_i}(T),

    found over :math:`\beta = 1/T` (the loss is convex in :math:`\beta`: a log-sum-exp of
    :math:`\beta z_i` less a linear term), bounded to :math:`10^{-4} \le \beta \le 10^4`.
    ``labels`` are the correct letters' indices. InputError where no temperature is best:
    every answer counted has its correct letter on top (ties included), so the loss only
    falls as :math:`T` falls towards 0 (Platt's refusal of separated answers, for the
    letters: a search would stop wherever the loss stops changing in floating point)."""
    z, y = _check_letters(logprobs, labels)
    w = _check_weights(weights, y.size)
    total = w.sum()
    true = z[np.arange(len(y)), y]

    top = z.max(axis=1)
    shifted, gap = z - top[:, None], true - top  # the log-sum-exp's shift, once: beta >= 0
    if np.all(gap[w > 0] >= 0):
        raise InputError(
            "no temperature minimises the letters' negative log-likelihood: every answer's "
            "correct letter is on top, so it only falls as the temperature falls to 0"
        )

    def nll(log_beta: float) -> float:
        beta = np.exp(log_beta)
        # a sum of w * loss, not a dot product: without weights, np.mean's own pairwise sum
        losses = np.log(np.exp(beta * shifted).sum(axis=1)) - beta * gap
        return float(np.sum(w * losses) / total)

    found = optimize.minimize_scalar(
        nll, bounds=(-4 * np.log(10), 4 * np.log(10)), method="bounded", options={"xatol": 1e-10}
    )
    return float(np.exp(-found.x))


@dataclass(frozen=True)
class PlattMap:
    r"""Platt's map :math:`p(c) = \sigma(a \operatorname{logit}(c) + b)`."""

    a: float
    b: float


def _logit(confidence: FloatArray) -> FloatArray:
    return special.logit(np.clip(confidence, LOGIT_EPS, 1 - LOGIT_EPS))


def fit_platt(
    confidence: npt.ArrayLike,
    correct: npt.ArrayLike,
    max_iter: int = 100,
    *,
    weights: npt.ArrayLike | None = None,
) -> PlattMap:
    r"""The logistic regression of ``correct`` on the confidence's logit :math:`s_i`, by maximum
    likelihood without a penalty or Platt's smoothed targets, each answer weighted by
    :math:`w_i`:

    .. math::

        (\hat a, \hat b) = \arg\max_{a, b} \sum_i w_i \bigl[y_i \log \sigma(a s_i + b)
            + (1 - y_i) \log(1 - \sigma(a s_i + b))\bigr],

    by Newton's method (the log-likelihood is concave). Refused where it has no maximum: all
    answers right or all wrong, or the right ones separated from the wrong by the confidence,
    ties at the border included (every right answer's logit at or above some value and every
    wrong one's at or below it, or the reverse: the likelihood rises without end as
    :math:`|a|` grows, and Newton's steps would stop at an arbitrary large :math:`a`). Answers
    all at one confidence, some right and some wrong, have a maximum wherever
    :math:`a s + b = \operatorname{logit}(\bar y)` (:math:`\bar y` their weighted share
    right): the one with :math:`a = 0`, the map to that share, is returned."""
    conf, y, w = _weighted_pair(confidence, correct, weights)
    s = _logit(conf)
    if y.size and y.min() < y.max() and s.min() == s.max():
        return PlattMap(0.0, float(special.logit(np.sum(w * y) / np.sum(w))))
    if _separated(s, y):
        max_iter = 0
    x = np.stack([s, np.ones_like(s)], axis=1)
    theta = np.zeros(2)
    for _ in range(max_iter):
        p = special.expit(x @ theta)
        gradient = x.T @ (w * (y - p))
        hessian = (x * (w * p * (1 - p))[:, None]).T @ x
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            break
        theta = theta + step
        if np.max(np.abs(step)) < 1e-12 * (1 + np.max(np.abs(theta))):
            return PlattMap(float(theta[0]), float(theta[1]))
    raise InputError(
        "Platt's fit has no maximum on these answers: all right, all wrong, or the right ones "
        "separated from the wrong by their confidence"
    )


def _separated(s: FloatArray, y: FloatArray) -> bool:
    """Whether a threshold on ``s`` splits the right answers from the wrong, ties at it
    allowed (or one kind is missing): then the logistic fit has no finite maximum (answers
    all at one ``s`` are :func:`fit_platt`'s own case)."""
    right, wrong = s[y == 1.0], s[y == 0.0]
    if right.size == 0 or wrong.size == 0:
        return True
    return bool(wrong.max() <= right.min() or right.max() <= wrong.min())


def apply_platt(mapping: PlattMap, confidence: npt.ArrayLike) -> FloatArray:
    """``mapping`` applied to each confidence."""
    conf = as_float_array(confidence, "confidence")
    return special.expit(mapping.a * _logit(conf) + mapping.b)


@dataclass(frozen=True)
class IsotonicMap:
    """A non-decreasing map given at ``x`` (increasing) by ``y``; linear between, constant
    outside."""

    x: FloatArray
    y: FloatArray


def fit_isotonic(
    confidence: npt.ArrayLike, correct: npt.ArrayLike, *, weights: npt.ArrayLike | None = None
) -> IsotonicMap:
    r"""The non-decreasing weighted least-squares fit of ``correct`` on the confidence:

    .. math::

        \hat m = \arg\min_{m \text{ non-decreasing}} \sum_i w_i (y_i - m(c_i))^2,

    by pooling adjacent violators over the distinct confidences (ties averaged, weighted by
    their total weight): a block whose mean exceeds the next block's is merged with it until
    the means increase."""
    conf, y, w = _weighted_pair(confidence, correct, weights)
    xs, inverse = np.unique(conf, return_inverse=True)
    counts = np.bincount(inverse, weights=w)
    sums = np.bincount(inverse, weights=w * y)
    means: list[float] = []
    pooled: list[float] = []  # each block's weight
    sizes: list[int] = []
    for total, count in zip(sums, counts, strict=True):
        mean, weight, size = float(total / count), float(count), 1
        while means and means[-1] >= mean:
            previous, before = means.pop(), pooled.pop()
            mean = (previous * before + mean * weight) / (before + weight)
            weight += before
            size += sizes.pop()
        means.append(mean)
        pooled.append(weight)
        sizes.append(size)
    return IsotonicMap(xs, np.repeat(means, sizes))


def apply_isotonic(mapping: IsotonicMap, confidence: npt.ArrayLike) -> FloatArray:
    """``mapping`` at each confidence: interpolated linearly between its points, its end
    values outside them."""
    conf = as_float_array(confidence, "confidence")
    return np.interp(conf, mapping.x, mapping.y)


def conformal_threshold(
    confidence: npt.ArrayLike,
    correct: npt.ArrayLike,
    alpha: float,
    *,
    weights: npt.ArrayLike | None = None,
) -> float:
    r"""The smallest threshold :math:`\tau` (answer where :math:`c \ge \tau`, abstain below)
    whose calibration risk, inflated as conformal risk control requires, is at most
    :math:`\alpha` (with ``weights``, :math:`n` and the sum count answer i :math:`w_i` times):

    .. math::

        \hat\tau = \min \Bigl\{\tau \in \{c_1, \dots, c_n, +\infty\} :
            \frac{n}{n + 1} \hat R(\tau) + \frac{1}{n + 1} \le \alpha \Bigr\},
        \qquad \hat R(\tau) = \frac1n \sum_i \mathbb 1[c_i \ge \tau] (1 - y_i).

    The loss, answered and wrong, is bounded by 1 and does not increase with :math:`\tau`, so
    for a new answer exchangeable with the :math:`n` calibration ones
    :math:`E\bigl[\mathbb 1[c \ge \hat\tau](1 - y)\bigr] \le \alpha`. :math:`+\infty` (never
    answer) where no confidence qualifies, always where :math:`\alpha < 1 / (n + 1)`."""
    conf, y, w = _weighted_pair(confidence, correct, weights)
    if not 0 < alpha < 1:
        raise InputError(f"alpha must lie in (0, 1), got {alpha!r}")
    n = w.sum()
    order = np.argsort(conf, kind="stable")
    sorted_conf, wrong = conf[order], w[order] * (1.0 - y[order])
    # wrong answers at or above each candidate: answered ones are those from its first copy on
    above = np.cumsum(wrong[::-1])[::-1]
    first = np.searchsorted(sorted_conf, sorted_conf, side="left")
    risky = above[first]
    ok = (risky + 1) / (n + 1) <= alpha
    return float(sorted_conf[np.argmax(ok)]) if ok.any() else float("inf")
