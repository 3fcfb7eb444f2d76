"""Selective prediction: risk-coverage curves and AURC (Geifman & El-Yaniv, 2017).

A confidence signal that gates answers is judged by the error rate among the answers it lets
through at each coverage; abstention is the visibility sweep's subject, and this is the field's
standard summary of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import digamma

from clearsight.metrics._checks import (
    FloatArray,
    as_binary,
    as_float_array,
    check_finite,
    check_same_length,
)
from clearsight.metrics.bootstrap import cluster_sums
from clearsight.validate import InputError

__all__ = ["RiskCoverage", "aurc_statistic", "risk_coverage"]


@dataclass(frozen=True)
class RiskCoverage:
    """A risk-coverage curve: one point per distinct confidence, highest first.

    ``thresholds``: the distinct confidences in decreasing order; ``coverage[k]``: the share of
    items with confidence >= ``thresholds[k]``; ``risk[k]``: the share of those that are wrong.
    ``aurc``: area under the curve; ``e_aurc``: its excess over the best possible ordering.
    """

    thresholds: npt.NDArray[np.float64]
    coverage: npt.NDArray[np.float64]
    risk: npt.NDArray[np.float64]
    aurc: float
    e_aurc: float


def risk_coverage(confidence: npt.ArrayLike, correct: npt.ArrayLike) -> RiskCoverage:
    r"""The risk-coverage curve of a confidence signal, with AURC and E-AURC.

    Thresholds :math:`t_1 > t_2 > \dots > t_K` are the distinct confidence values; at
    :math:`t_k` every item with confidence :math:`\ge t_k` is accepted (tied items enter
    together). With :math:`n` items,

    .. math::

        c_k = \frac{|\{i : s_i \ge t_k\}|}{n}, \qquad
        r_k = \frac{|\{i : s_i \ge t_k,\ \text{wrong}_i\}|}{n c_k}, \qquad
        \mathrm{AURC} = \sum_{k=1}^{K} (c_k - c_{k-1})\, r_k \quad (c_0 = 0).

    Without ties this is :math:`\frac{1}{n}\sum_{i=1}^{n} \mathrm{errors}(\text{top } i)/i`.
    E-AURC is AURC minus that of the best strict ordering (every correct item above every wrong
    one): :math:`\mathrm{AURC}^* = \frac{1}{n}\sum_{i > n_c} (i - n_c)/i` with :math:`n_c`
    correct items. All correct gives 0 and 0; all wrong gives 1 and 0.
    """
    s = check_finite(as_float_array(confidence, "confidence"), "confidence")
    wrong = 1.0 - as_binary(correct, "correct")
    check_same_length(s, wrong, "confidence", "correct")
    n = s.size
    order = np.argsort(-s, kind="stable")
    s_sorted, wrong_sorted = s[order], wrong[order]
    # the last item of each run of equal confidences closes a threshold
    last = np.flatnonzero(np.r_[s_sorted[1:] != s_sorted[:-1], True])
    accepted = (last + 1).astype(np.float64)
    errors = np.cumsum(wrong_sorted)[last]
    coverage = accepted / n
    risk = errors / accepted
    aurc = float(np.sum(np.diff(coverage, prepend=0.0) * risk))
    n_correct = n - int(wrong.sum())
    top = np.arange(n_correct + 1, n + 1, dtype=np.float64)
    best = float(np.sum((top - n_correct) / top) / n)
    return RiskCoverage(s_sorted[last], coverage, risk, aurc, aurc - best)


def aurc_statistic(
    confidence: npt.ArrayLike, correct: npt.ArrayLike, clusters: npt.ArrayLike
) -> Callable[[FloatArray], FloatArray]:
    r"""AURC and E-AURC as a statistic of cluster weights, for
    :func:`~clearsight.metrics.cluster_bootstrap` (scene-bootstrap intervals).

    Returns ``stat(W)``: for a ``(rows, C)`` matrix of cluster weights (cluster c in the sorted
    order of the distinct ``clusters`` labels) the ``(rows, 2)`` values (AURC, E-AURC) of
    :func:`risk_coverage` on the sample in which every item of cluster c appears ``W[r, c]``
    times. Over the distinct confidences in decreasing order, with :math:`N_k` and
    :math:`E_k` the weighted counts of items and errors at or above the k-th, AURC =
    :math:`\sum_k (N_k - N_{k-1}) E_k / (N N_k)`; the best ordering of a sample with :math:`N`
    items, :math:`a` of them correct, has
    :math:`\mathrm{AURC}^* = \big((N - a) - a (H_N - H_a)\big) / N` (:math:`H` the harmonic
    numbers, via the digamma function), the closed form of :func:`risk_coverage`'s sum.
    ``W`` = all ones gives :func:`risk_coverage`'s ``aurc`` and ``e_aurc``.
    """
    s = check_finite(as_float_array(confidence, "confidence"), "confidence")
    wrong = 1.0 - as_binary(correct, "correct")
    check_same_length(s, wrong, "confidence", "correct")
    labels = np.asarray(clusters)
    if labels.shape != s.shape:
        raise InputError(f"clusters must have one label per item, got shape {labels.shape}")
    by_level = cluster_sums(wrong, labels, columns=-s)  # column 0: the highest confidence
    items, errors = by_level.counts, by_level.sums

    def stat(weights: FloatArray) -> FloatArray:
        accepted = np.cumsum(weights @ items, axis=1)
        errs = np.cumsum(weights @ errors, axis=1)
        total = accepted[:, -1]
        step = np.diff(accepted, axis=1, prepend=0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            risk = np.where(accepted > 0, errs / accepted, 0.0)
        aurc = (step * risk).sum(axis=1) / total
        right = total - errs[:, -1]
        harmonic = digamma(total + 1) - digamma(right + 1)  # H_N - H_a
        best = ((total - right) - right * harmonic) / total
        return np.column_stack([aurc, aurc - best])

    return stat
