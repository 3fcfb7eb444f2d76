"""Gain-matched equivalent visibility: where a nominal corruption sits on the physical fog axis.

For a corrupted image and its clean original (METHODS.md §2): luma ``Y = 0.2126 R + 0.7152 G +
0.0722 B`` of the encoded [0, 1] values; high-pass detail ``D(Y) = Y - GaussianBlur(Y, sigma=2,
mode='reflect')``; retained gain ``g = <D(Y_corrupt), D(Y_clean)> / <D(Y_clean), D(Y_clean)>``.
``V_eq`` is the largest V whose Koschmieder fog of the clean image (with the scene's depth, before
quantisation) has a gain ``<= g``: bracketed by a binary search over a grid of one point per
octave, then refined in log V by Brent's method (bisection safeguarded with inverse-quadratic
steps; the same answer as plain bisection to the tolerance, in about a third of the fog
evaluations). The gain of fog rises monotonically with V, so the answer is unique.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
from scipy.ndimage import gaussian_filter
from scipy.optimize import brentq

from clearsight.physics.imagenet_c import imagenet_c_fog
from clearsight.physics.medium import DEFAULT_AIRLIGHT, DEPTH_CLIP_M, VISIBILITY_CONSTANT
from clearsight.physics.srgb import srgb_to_linear
from clearsight.validate import InputError, check_depth, check_image

#: Search range of V_eq in metres. Outside it the answer is reported as 0 or infinity.
V_EQ_RANGE_M: Final[tuple[float, float]] = (2.0**-6, 2.0**14)
#: Gains below this count as no retained detail (float round-off of a flat image is ~1e-16;
#: one 8-bit code step of detail is a gain of order 1e-2).
MIN_GAIN: Final = 1e-6
_LUMA: Final = np.array([0.2126, 0.7152, 0.0722])


def _detail(srgb01: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    y = np.asarray(srgb01) @ _LUMA.astype(srgb01.dtype)
    return (y - gaussian_filter(y, sigma=2.0, mode="reflect")).astype(np.float64)


def retained_gain(
    corrupted: npt.NDArray[np.floating], clean_detail: npt.NDArray[np.float64]
) -> float:
    """``<D(Y_corrupt), D(Y_clean)> / <D(Y_clean), D(Y_clean)>`` for encoded [0, 1] images."""
    d = _detail(corrupted)
    return float(
        np.einsum("ij,ij->", d, clean_detail) / np.einsum("ij,ij->", clean_detail, clean_detail)
    )


def _as_unit(image: npt.NDArray[np.generic], name: str) -> npt.NDArray[np.float64]:
    if image.dtype == np.uint8:
        return check_image(image, name) / 255.0
    if np.issubdtype(image.dtype, np.floating) and image.ndim == 3 and image.shape[2] == 3:
        return np.asarray(image, dtype=np.float64)
    raise InputError(f"{name} must be uint8 HxWx3 or float HxWx3 in [0, 1], got {image.dtype}")


def equivalent_visibility(
    corrupted: npt.NDArray[np.generic],
    clean: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.floating],
    airlight: float = DEFAULT_AIRLIGHT,
    rtol: float = 1e-5,
) -> float:
    """Gain-matched equivalent fog visibility of ``corrupted`` in metres.

    ``corrupted`` is uint8 sRGB or float sRGB in [0, 1] (e.g. fog before quantisation).
    Returns ``inf`` when it keeps at least the detail of fog at the top of
    :data:`V_EQ_RANGE_M`, and ``0.0`` when it keeps less than fog at the bottom, or no
    positively correlated detail at all (``g <`` :data:`MIN_GAIN`: every fog with V > 0 keeps
    some).
    """
    clean01 = _as_unit(clean, "clean")
    corrupt01 = _as_unit(corrupted, "corrupted")
    if corrupt01.shape != clean01.shape:
        raise InputError(f"corrupted {corrupt01.shape} and clean {clean01.shape} differ in shape")
    check_depth(depth_m, clean01.shape)
    clean_detail = _detail(clean01)
    if not np.einsum("ij,ij->", clean_detail, clean_detail) > 0:
        raise InputError("the clean image has no detail (it is flat); V_eq is undefined")
    target = retained_gain(corrupt01, clean_detail)
    # The candidate fogs are evaluated in float32 (gains agree with float64 to ~1e-7).
    veil = np.float32(airlight)
    diff = srgb_to_linear(clean01).astype(np.float32) - veil
    neg_z = -np.clip(depth_m, *DEPTH_CLIP_M).astype(np.float32)

    def gain(log2_v: float) -> float:
        t = np.exp(neg_z * np.float32(VISIBILITY_CONSTANT / 2.0**log2_v))
        fogged = diff * t[..., None]
        fogged += veil
        np.clip(fogged, 0.0, 1.0, out=fogged)
        encoded = np.where(
            fogged <= 0.0031308,
            np.float32(12.92) * fogged,
            np.float32(1.055) * np.power(fogged, np.float32(1 / 2.4)) - np.float32(0.055),
        )
        return retained_gain(encoded, clean_detail)

    lo, hi = (math.log2(v) for v in V_EQ_RANGE_M)
    if target < MIN_GAIN:
        return 0.0
    if gain(hi) <= target:
        return math.inf
    if gain(lo) > target:
        return 0.0
    # Binary search over the one-per-octave grid, then Brent inside the bracketing octave.
    grid = np.arange(lo, hi + 1.0)
    i, j = 0, len(grid) - 1  # gain(grid[i]) <= target < gain(grid[j])
    while j - i > 1:
        k = (i + j) // 2
        i, j = (k, j) if gain(float(grid[k])) <= target else (i, k)
    root = brentq(
        lambda x: gain(x) - target, float(grid[i]), float(grid[j]), xtol=math.log2(1.0 + rtol)
    )
    return 2.0 ** float(root)


def imagenet_c_equivalents(
    image: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.floating],
    seed: int,
    severities: Sequence[int] = (1, 2, 3, 4, 5),
) -> list[float]:
    """V_eq of ImageNet-C fog at each severity, the plasma drawn from ``RandomState(seed)``."""
    return [
        equivalent_visibility(imagenet_c_fog(image, s, np.random.RandomState(seed)), image, depth_m)
        for s in severities
    ]
