"""Input checks shared by the metric functions (private).

Each check turns an array-like into a float64 numpy array or raises
:class:`clearsight.validate.InputError` with a message that names the argument and the problem,
so that a caller sees "confidence has 3 NaN values" instead of a silent NaN metric.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from clearsight.validate import InputError

FloatArray = npt.NDArray[np.float64]


def as_float_array(x: npt.ArrayLike, name: str, ndim: int | None = 1) -> FloatArray:
    """``x`` as a float64 array of ``ndim`` dimensions (any if None); non-empty."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric, could not convert it: {exc}") from exc
    if ndim is not None and arr.ndim != ndim:
        raise InputError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    if arr.size == 0:
        raise InputError(f"{name} is empty")
    return arr


def check_finite(arr: FloatArray, name: str, hint: str = "") -> FloatArray:
    """Return ``arr`` if it has no NaN or infinite values; the error counts them."""
    n_nan = int(np.isnan(arr).sum())
    if n_nan:
        raise InputError(f"{name} has {n_nan} NaN value(s) of {arr.size}{hint}")
    n_inf = int(np.isinf(arr).sum())
    if n_inf:
        raise InputError(f"{name} has {n_inf} infinite value(s) of {arr.size}")
    return arr


def check_same_length(a: FloatArray, b: FloatArray, name_a: str, name_b: str) -> None:
    """Raise unless ``a`` and ``b`` have the same number of rows."""
    if a.shape[0] != b.shape[0]:
        raise InputError(
            f"{name_a} and {name_b} must have the same length, got {a.shape[0]} and {b.shape[0]}"
        )


def as_binary(x: npt.ArrayLike, name: str) -> FloatArray:
    """A 1-D boolean or 0/1 array as float64 0.0/1.0."""
    arr = check_finite(as_float_array(x, name), name)
    bad = ~((arr == 0.0) | (arr == 1.0))
    if bad.any():
        first = arr[bad][0]
        raise InputError(
            f"{name} must be boolean or 0/1, got {int(bad.sum())} other value(s), e.g. {first!r}"
        )
    return arr


def as_labels(x: npt.ArrayLike, name: str) -> npt.NDArray[np.intp]:
    """Integer codes 0..C-1 of the distinct labels of a 1-D array, in ``np.unique`` order."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise InputError(f"{name} must be 1-D (one label per item), got shape {arr.shape}")
    if arr.size == 0:
        raise InputError(f"{name} is empty")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise InputError(f"{name} has {int(np.isnan(arr).sum())} NaN label(s)")
    try:
        _, codes = np.unique(arr, return_inverse=True)
    except TypeError as exc:
        raise InputError(f"{name} must be sortable labels of one kind: {exc}") from exc
    return codes.reshape(-1).astype(np.intp)


def check_level(level: float) -> float:
    """A confidence level strictly between 0 and 1."""
    lv = float(level)
    if not (math.isfinite(lv) and 0.0 < lv < 1.0):
        raise InputError(f"level must be strictly between 0 and 1, got {level!r}")
    return lv


def check_positive_int(n: int, name: str) -> int:
    """An integer >= 1 (bools are refused)."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise InputError(f"{name} must be an integer >= 1, got {n!r}")
    return int(n)
