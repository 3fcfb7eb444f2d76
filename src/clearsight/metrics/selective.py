"""Selective prediction: risk-coverage curves and AURC (Geifman & El-Yaniv, 2017).

A confidence signal that gates answers is judged by the error rate among the answers it lets
through at each coverage; abstention is the visibility sweep's subject, and this is the field's
standard summary of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from clearsight.metrics._checks import as_binary, as_float_array, check_finite, check_same_length

__all__ = ["RiskCoverage", "risk_coverage"]


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
