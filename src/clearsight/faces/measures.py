"""How far two answers to the same items moved: pure array functions over paired read-outs.

Each takes the read-out of the run's record (``a``) and of its re-ask or of the other run
(``b``) for the same n items. The 11-way confidence distributions are compared by the
Jensen–Shannon divergence of :func:`clearsight.metrics.jsd_bits_batch`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from clearsight.validate import InputError

__all__ = ["DeltaSummary", "agreement", "delta_summary", "letter_deltas", "same_answer"]


def agreement(a: Sequence[object], b: Sequence[object]) -> float:
    r"""Share of items whose two answers are equal:
    :math:`\frac{1}{n}\sum_i [a_i = b_i]` (:func:`same_answer`: no answer both times
    agrees); NaN for no items."""
    if len(a) != len(b):
        raise InputError(f"agreement needs paired answers, got {len(a)} and {len(b)}")
    if not a:
        return float("nan")
    return sum(same_answer(x, y) for x, y in zip(a, b, strict=True)) / len(a)


def same_answer(a: object, b: object) -> bool:
    """Whether two answers are equal; a missing answer (None, or NaN as a frame holds it)
    equals only a missing one."""
    missing_a, missing_b = _missing(a), _missing(b)
    if missing_a or missing_b:
        return missing_a and missing_b
    return bool(a == b)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


class DeltaSummary(NamedTuple):
    """The absolute differences of one read-out over the items where both values exist."""

    n: int
    max: float
    median: float


def delta_summary(a: npt.ArrayLike, b: npt.ArrayLike) -> DeltaSummary:
    r""":math:`|\Delta_i| = |a_i - b_i|` over the items where both are finite: their number,
    :math:`\max_i |\Delta_i|` and :math:`\mathrm{median}_i |\Delta_i|` (NaN for none). An item
    where exactly one value is missing is not a difference of size but of kind: count it with
    the answers (a parsed and an unparsed confidence), not here."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise InputError(f"paired read-outs need the same shape, got {x.shape} and {y.shape}")
    both = np.isfinite(x) & np.isfinite(y)
    d = np.abs(x[both] - y[both])
    if d.size == 0:
        return DeltaSummary(0, float("nan"), float("nan"))
    return DeltaSummary(int(d.size), float(d.max()), float(np.median(d)))


def letter_deltas(
    a: Sequence[dict[str, float] | None], b: Sequence[dict[str, float] | None]
) -> npt.NDArray[np.float64]:
    r"""Per item, the largest change of an option probability:
    :math:`\max_\ell |p^a_{i\ell} - p^b_{i\ell}|` over the letters either offers (a letter one
    lacks counts as probability 0); NaN where either item has no option probabilities."""
    if len(a) != len(b):
        raise InputError(f"paired option probabilities, got {len(a)} and {len(b)}")
    out = np.full(len(a), np.nan)
    for i, (p, q) in enumerate(zip(a, b, strict=True)):
        if p is None or q is None:
            continue
        letters = set(p) | set(q)
        out[i] = max((abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in letters), default=0.0)
    return out
