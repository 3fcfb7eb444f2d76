"""Calibration and discrimination of a confidence signal (docs/methods.md §4).

All functions take ``confidence`` (floats in [0, 1]) and ``correct`` (boolean or 0/1) of
equal length and return plain floats. They refuse NaN confidences (an unparseable verbalized
confidence must be dropped by the caller, who then knows how many were dropped) and empty input.

Bin convention. ``n_bins`` equal-width bins with edges ``k / n_bins`` (computed as the
correctly rounded quotient, so the edge 0.3 is the same float as the literal ``0.3``). Bins are
right-closed, ``(lo, hi]``, and 0 goes into the first bin: bin ``b`` (0-based) holds
``b/n < c <= (b+1)/n``, plus ``c = 0`` in bin 0. So 0.3 lies in (0.2, 0.3] and 1.0 in (0.9, 1.0].

Other libraries differ only for confidences exactly on an edge:

- torchmetrics (``binary_calibration_error``) bins with ``torch.bucketize(right=True) - 1``:
  left-closed ``[lo, hi)``, and 1.0 gets an extra (n+1)-th bin of its own. Its edges come
  from ``torch.linspace``, whose float edges are not always the decimal literals (for 10 bins
  the fourth is 0.30000000000000004, so 0.3 lands in [0.2, 0.3) there).
- netcal uses left-closed ``[lo, hi)`` bins.

Away from the edges all three agree; the tests compare with torchmetrics on such data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.stats import rankdata

from clearsight.metrics._checks import (
    FloatArray,
    as_binary,
    as_float_array,
    check_positive_int,
    check_same_length,
)
from clearsight.metrics.bootstrap import cluster_sums
from clearsight.validate import InputError

__all__ = [
    "CALIBRATION_STATS",
    "ReliabilityBins",
    "auroc",
    "bin_edges",
    "brier",
    "calibration_statistic",
    "ece",
    "mce",
    "reliability_bins",
]


def _check_pair(confidence: npt.ArrayLike, correct: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    conf = as_float_array(confidence, "confidence")
    n_nan = int(np.isnan(conf).sum())
    if n_nan:
        raise InputError(
            f"confidence has {n_nan} NaN value(s) of {conf.size}; drop unparsed rows first "
            "(and report how many were dropped)"
        )
    outside = (conf < 0.0) | (conf > 1.0)
    if outside.any():
        raise InputError(
            f"confidence must lie in [0, 1]; {int(outside.sum())} value(s) outside "
            f"(min {float(conf.min()):.6g}, max {float(conf.max()):.6g})"
        )
    corr = as_binary(correct, "correct")
    check_same_length(conf, corr, "confidence", "correct")
    return conf, corr


def bin_edges(n_bins: int = 10) -> FloatArray:
    """The ``n_bins + 1`` equal-width edges ``k / n_bins``, k = 0..n_bins.

    Computed as ``arange(n+1) / n`` (one correctly rounded division per edge) rather than
    ``linspace``-style ``k * (1/n)``, so that an edge equals the decimal literal a user would
    type (``3/10 == 0.3`` whereas ``3 * 0.1 == 0.30000000000000004``).
    """
    n = check_positive_int(n_bins, "n_bins")
    return np.arange(n + 1, dtype=np.float64) / n


def _bin_index(conf: FloatArray, n_bins: int) -> npt.NDArray[np.intp]:
    """Bin of each confidence: ``(lo, hi]`` bins, with 0 in the first bin."""
    edges = bin_edges(n_bins)
    # searchsorted(side="left") returns i with edges[i-1] < c <= edges[i]: right-closed bins.
    idx = np.searchsorted(edges, conf, side="left") - 1
    return np.clip(idx, 0, n_bins - 1).astype(np.intp)


def _bin_sums(
    confidence: npt.ArrayLike, correct: npt.ArrayLike, n_bins: int
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per-bin count, sum of confidence and sum of correct."""
    conf, corr = _check_pair(confidence, correct)
    n = check_positive_int(n_bins, "n_bins")
    idx = _bin_index(conf, n)
    count = np.bincount(idx, minlength=n).astype(np.float64)
    sum_conf = np.bincount(idx, weights=conf, minlength=n).astype(np.float64)
    sum_corr = np.bincount(idx, weights=corr, minlength=n).astype(np.float64)
    return count, sum_conf, sum_corr


@dataclass(frozen=True)
class ReliabilityBins:
    """Per-bin summary for a reliability diagram (arrays of length ``n_bins``).

    ``mean_confidence`` and ``accuracy`` are NaN in empty bins (``count == 0``).
    """

    lo: FloatArray
    hi: FloatArray
    count: npt.NDArray[np.int64]
    mean_confidence: FloatArray
    accuracy: FloatArray


def reliability_bins(
    confidence: npt.ArrayLike, correct: npt.ArrayLike, n_bins: int = 10
) -> ReliabilityBins:
    """Per-bin (lo, hi, count, mean confidence, accuracy) for reliability diagrams.

    Bins are the equal-width, right-closed ``(lo, hi]`` bins of this module (0 in the first).
    ``conf_b = mean(confidence in b)``, ``acc_b = mean(correct in b)``; NaN where ``n_b = 0``
    (an empty bin has no accuracy; plotting code should skip it rather than draw a 0).
    """
    count, sum_conf, sum_corr = _bin_sums(confidence, correct, n_bins)
    edges = bin_edges(n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.where(count > 0, sum_conf / count, np.nan)
        acc = np.where(count > 0, sum_corr / count, np.nan)
    return ReliabilityBins(
        lo=edges[:-1],
        hi=edges[1:],
        count=count.astype(np.int64),
        mean_confidence=mean_conf,
        accuracy=acc,
    )


def ece(confidence: npt.ArrayLike, correct: npt.ArrayLike, n_bins: int = 10) -> float:
    """Expected calibration error ``ECE = sum_b (n_b / N) |acc_b - conf_b|``.

    ``acc_b`` and ``conf_b`` are the accuracy and mean confidence of the items in bin b
    (equal-width, right-closed ``(lo, hi]``, 0 in the first bin; docs/methods.md §4). Empty bins
    contribute 0. Computed as ``sum_b |sum_{i in b} correct_i - sum_{i in b} conf_i| / N``,
    which is the same quantity without dividing by empty counts. Range [0, 1]; 0 for a
    perfectly calibrated binned model.
    """
    count, sum_conf, sum_corr = _bin_sums(confidence, correct, n_bins)
    return float(np.abs(sum_corr - sum_conf).sum() / count.sum())


def mce(confidence: npt.ArrayLike, correct: npt.ArrayLike, n_bins: int = 10) -> float:
    """Maximum calibration error ``MCE = max_{b: n_b > 0} |acc_b - conf_b|``.

    Same bins as :func:`ece`; only non-empty bins count (an empty bin has no gap). MCE is
    dominated by sparsely filled bins, so read it next to the bin counts.
    """
    count, sum_conf, sum_corr = _bin_sums(confidence, correct, n_bins)
    full = count > 0
    return float(np.max(np.abs(sum_corr[full] - sum_conf[full]) / count[full]))


def brier(confidence: npt.ArrayLike, correct: npt.ArrayLike) -> float:
    """Brier score of the confidence as a probability of being correct.

    ``Brier = mean_i (conf_i - correct_i)^2``; 0 is perfect, 0.25 is a constant 0.5.
    It mixes calibration and discrimination (unlike ECE, it cannot be gamed by binning).
    """
    conf, corr = _check_pair(confidence, correct)
    return float(np.mean((conf - corr) ** 2))


def auroc(confidence: npt.ArrayLike, correct: npt.ArrayLike) -> float:
    """Area under the ROC curve of ``confidence`` separating correct from wrong answers.

    Mann–Whitney form with ties counted half:
    ``AUROC = P(c+ > c-) + P(c+ = c-) / 2`` over pairs of a correct (+) and a wrong (-) item,
    computed from mid-ranks: ``(R+ - n+(n+ + 1)/2) / (n+ n-)`` with ``R+`` the sum of the
    average ranks of the correct items. Equal to ``sklearn.metrics.roc_auc_score(correct,
    confidence)``. 0.5 is no discrimination.

    Undefined when all answers are correct or all are wrong (no pairs): returns ``nan``
    rather than raising, because this happens legitimately at extreme sweep levels and in
    bootstrap resamples; callers report it as "n/a".
    """
    conf, corr = _check_pair(confidence, correct)
    pos = corr == 1.0
    n_pos = int(pos.sum())
    n_neg = conf.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(conf, method="average")
    u = float(ranks[pos].sum()) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


#: The statistics of :func:`calibration_statistic`, in its column order.
CALIBRATION_STATS = ("ece", "mce", "brier", "auroc")


@dataclass(frozen=True)
class _CalibrationSums:
    """The per-cluster sums :func:`calibration_statistic` needs (clusters in rows): per
    confidence bin the items and the gaps ``y - c``, the squared errors, and per confidence
    level the correct and wrong items; called with cluster weights it gives ECE, MCE, Brier and
    AUROC per weight row, by matrix products only (no loop over draws)."""

    n_b: FloatArray
    gap_b: FloatArray
    sq: FloatArray
    pos_g: FloatArray
    neg_g: FloatArray

    def __call__(self, weights: FloatArray) -> FloatArray:
        """The ``(rows, 4)`` statistics of :data:`CALIBRATION_STATS` for ``weights``."""
        counts, gaps = weights @ self.n_b, weights @ self.gap_b
        total = counts.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ece_ = np.abs(gaps).sum(axis=1) / total
            mce_ = np.where(counts > 0, np.abs(gaps) / counts, -np.inf).max(axis=1)
            pos, neg = weights @ self.pos_g, weights @ self.neg_g
            below = np.cumsum(neg, axis=1) - neg
            pairs = pos.sum(axis=1) * neg.sum(axis=1)
            auroc_ = np.where(pairs > 0, (pos * (below + neg / 2)).sum(axis=1) / pairs, np.nan)
        return np.column_stack([ece_, mce_, (weights @ self.sq) / total, auroc_])


def calibration_statistic(
    confidence: npt.ArrayLike,
    correct: npt.ArrayLike,
    clusters: npt.ArrayLike,
    n_bins: int = 10,
) -> Callable[[FloatArray], FloatArray]:
    r"""ECE, MCE, Brier and AUROC as one statistic of cluster weights, for
    :func:`~clearsight.metrics.cluster_bootstrap` (the scene bootstrap of every calibration
    number).

    Returns ``stat(W)``: for a ``(rows, C)`` matrix of cluster weights (cluster c in the sorted
    order of the distinct ``clusters`` labels) the ``(rows, 4)`` values of
    :data:`CALIBRATION_STATS` on the sample in which every item of cluster c appears
    ``W[r, c]`` times. With item weights :math:`w_i` and the bins of :func:`ece`,

    .. math::

        \mathrm{ECE} = \frac{\sum_b |\sum_{i \in b} w_i y_i - \sum_{i \in b} w_i c_i|}
                            {\sum_i w_i}, \qquad
        \mathrm{MCE} = \max_{b:\, W_b > 0} \frac{|\sum_{i \in b} w_i (y_i - c_i)|}{W_b},

    :math:`\mathrm{Brier} = \sum_i w_i (c_i - y_i)^2 / \sum_i w_i`, and AUROC the weighted
    Mann–Whitney form :math:`\sum_{i+, j-} w_i w_j ([c_i > c_j] + [c_i = c_j]/2) / (W_+ W_-)`
    (NaN where a sample has no correct or no wrong item). ``W`` = all ones gives exactly the
    quantities of :func:`ece`, :func:`mce`, :func:`brier` and :func:`auroc`.
    """
    conf, corr = _check_pair(confidence, correct)
    labels = np.asarray(clusters)
    if labels.shape != conf.shape:
        raise InputError(f"clusters must have one label per item, got shape {labels.shape}")
    bins = _bin_index(conf, check_positive_int(n_bins, "n_bins"))
    by_bin = cluster_sums(corr - conf, labels, columns=bins)  # the filled bins only
    by_level = cluster_sums(corr, labels, columns=conf)  # AUROC: ascending confidence groups
    return _CalibrationSums(
        n_b=by_bin.counts,
        gap_b=by_bin.sums,
        sq=cluster_sums((conf - corr) ** 2, labels).sums,
        pos_g=by_level.sums,
        neg_g=by_level.counts - by_level.sums,
    )
