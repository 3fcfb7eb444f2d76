"""Paired significance test over benchmark means (METHODS.md §4)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.stats import wilcoxon

from clearsight.metrics._checks import as_float_array, check_finite, check_same_length

__all__ = ["wilcoxon_exact"]


def wilcoxon_exact(x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[float, float]:
    """Exact two-sided Wilcoxon signed-rank test of paired values; returns ``(T, p)``.

    Differences ``d_i = x_i - y_i``; ranks ``r_i`` of ``|d_i|`` (mid-ranks for ties);
    ``T+ = sum_{d_i > 0} r_i``, ``T- = sum_{d_i < 0} r_i``; the statistic is
    ``T = min(T+, T-)`` and the p-value ``2 min(P(T+ <= t), P(T+ >= t))`` (capped at 1) under
    the exact null distribution of T+ (each sign +/- with probability 1/2 independently,
    2**n equally likely outcomes). Computed by ``scipy.stats.wilcoxon(x, y,
    zero_method="wilcox", method="exact", alternative="two-sided")``.

    Zero differences: ``zero_method="wilcox"`` drops them and runs the exact test on the
    remaining n' pairs. This is the only choice for which the exact null distribution is
    valid (under "pratt" and "zsplit" the ranks no longer follow it), and a tied pair carries
    no evidence about the sign of the difference. All differences zero gives ``(0.0, 1.0)``.

    Ties among the non-zero ``|d_i|``: the null distribution is only approximately right;
    scipy then rounds T+ away from the centre before looking it up, which keeps the test
    conservative.
    """
    a = check_finite(as_float_array(x, "x"), "x")
    b = check_finite(as_float_array(y, "y"), "y")
    check_same_length(a, b, "x", "y")
    if not np.any(a != b):
        return 0.0, 1.0
    res = wilcoxon(a, b, zero_method="wilcox", method="exact", alternative="two-sided")
    return float(res.statistic), float(res.pvalue)
