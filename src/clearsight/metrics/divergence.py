"""Jensen–Shannon divergence between discrete distributions, in bits (docs/methods.md §5).

Used to compare two 11-way confidence distributions (numerals 0..10) of the trajectory
grounding protocol; base 2 puts it in [0, 1] (1 = disjoint supports), so "JSD <= 0.1" reads
the same for any number of outcomes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from clearsight.metrics._checks import FloatArray, as_float_array, check_finite
from clearsight.validate import InputError

__all__ = ["jsd_bits", "jsd_bits_batch"]


def _as_distributions(x: npt.ArrayLike, name: str, ndim: int) -> FloatArray:
    arr = check_finite(as_float_array(x, name, ndim=ndim), name)
    if (arr < 0).any():
        raise InputError(f"{name} has negative entries (min {float(arr.min()):.6g})")
    total = arr.sum(axis=-1, keepdims=True)
    if (total == 0).any():
        n_zero = int((total == 0).sum())
        raise InputError(f"{name} has {n_zero} all-zero distribution(s); cannot normalise")
    return arr / total


def _kl_bits(p: FloatArray, m: FloatArray) -> FloatArray:
    """``sum_i p_i log2(p_i / m_i)`` per row, with ``0 log 0 = 0`` (m_i > 0 wherever p_i > 0)."""
    pos = p > 0
    ratio = np.divide(p, m, out=np.ones_like(p), where=pos)
    return np.sum(np.where(pos, p * np.log2(ratio), 0.0), axis=-1)


def jsd_bits_batch(p: npt.ArrayLike, q: npt.ArrayLike) -> FloatArray:
    """Row-wise :func:`jsd_bits` of two ``(n, k)`` arrays (n pairs of k-outcome distributions)."""
    P = _as_distributions(p, "p", ndim=2)
    Q = _as_distributions(q, "q", ndim=2)
    if P.shape != Q.shape:
        raise InputError(f"p and q must have the same shape, got {P.shape} and {Q.shape}")
    M = 0.5 * (P + Q)
    jsd = 0.5 * _kl_bits(P, M) + 0.5 * _kl_bits(Q, M)
    # Rounding can leave -1e-17 or 1 + 1e-16; the true value lies in [0, 1].
    return np.clip(jsd, 0.0, 1.0)


def jsd_bits(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
    """Jensen–Shannon divergence of two discrete distributions, in bits.

    ``JSD(p, q) = KL(p || m)/2 + KL(q || m)/2`` with ``m = (p + q)/2`` and
    ``KL(p || m) = sum_i p_i log2(p_i / m_i)`` (terms with ``p_i = 0`` are 0). Symmetric, in
    [0, 1], 0 iff p = q, 1 iff the supports are disjoint. ``p`` and ``q`` are non-negative
    vectors of the same length; they are normalised to sum to 1 first (so raw counts or
    unrenormalised probabilities are accepted); an all-zero vector is an error.

    Equals ``scipy.spatial.distance.jensenshannon(p, q, base=2) ** 2``: scipy returns the
    Jensen–Shannon *distance*, the square root of the divergence.
    """
    P = _as_distributions(p, "p", ndim=1)
    Q = _as_distributions(q, "q", ndim=1)
    if P.shape != Q.shape:
        raise InputError(f"p and q must have the same length, got {P.size} and {Q.size}")
    return float(jsd_bits_batch(P[None, :], Q[None, :])[0])
