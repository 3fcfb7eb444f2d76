"""ImageNet-C fog (Hendrycks & Dietterich 2019), bit-identical to the reference code.

The nominal control of the sweep: ``x = img/255; m = max(x); x += c0 * P; out = clip(x m /
(m + c0), 0, 1) * 255`` truncated to uint8, with P a diamond-square plasma fractal normalised to
[0, 1] over a square map whose side is the next power of two of the image's largest dimension
(channels included, as the original computes it). ``(c0, wibble decay)`` per severity 1..5:
(1.5, 2), (2.0, 2), (2.5, 1.7), (2.5, 1.5), (3.0, 1.4).

The randomness comes from an explicit ``numpy.random.RandomState``; with ``RandomState(s)`` the
output equals the original (``imagecorruptions.corrupt(img, 'fog', severity)``) after
``np.random.seed(s)``, bit for bit: the same draws in the same order with the same float64
operations. The speed-up over the original comes from shifting with slices instead of
``np.roll`` copies and from updating the image in place.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from clearsight.validate import InputError, check_image

#: (c0, wibble decay) for severities 1..5.
FOG_SEVERITY_PARAMS: Final[tuple[tuple[float, float], ...]] = (
    (1.5, 2.0),
    (2.0, 2.0),
    (2.5, 1.7),
    (2.5, 1.5),
    (3.0, 1.4),
)


def _shift_up(a: npt.NDArray[np.float64], axis: int) -> npt.NDArray[np.float64]:
    """``np.roll(a, -1, axis)``: element i takes element i + 1 (cyclically)."""
    return np.concatenate([a[1:], a[:1]] if axis == 0 else [a[:, 1:], a[:, :1]], axis=axis)


def _shift_down(a: npt.NDArray[np.float64], axis: int) -> npt.NDArray[np.float64]:
    """``np.roll(a, 1, axis)``: element i takes element i - 1 (cyclically)."""
    return np.concatenate([a[-1:], a[:-1]] if axis == 0 else [a[:, -1:], a[:, :-1]], axis=axis)


def plasma_fractal(
    mapsize: int, wibbledecay: float, rng: np.random.RandomState
) -> npt.NDArray[np.float64]:
    """Diamond-square height map of side ``mapsize`` (a power of two), normalised to [0, 1].

    Each step sets the centres of the current squares, then the edge midpoints (diamonds), to
    the mean of their four neighbours plus noise ``wibble * U(-wibble, wibble)``; wibble starts
    at 100 and is divided by ``wibbledecay`` after each halving of the step.
    """
    if mapsize < 1 or mapsize & (mapsize - 1):
        raise InputError(f"plasma map size must be a power of two, got {mapsize}")
    m = np.empty((mapsize, mapsize), dtype=np.float64)
    m[0, 0] = 0.0
    step = mapsize
    wibble = 100.0
    while step >= 2:
        half = step // 2
        corners = m[0:mapsize:step, 0:mapsize:step]
        acc = corners + _shift_up(corners, 0)
        acc = acc + _shift_up(acc, 1)
        m[half:mapsize:step, half:mapsize:step] = acc / 4 + wibble * rng.uniform(
            -wibble, wibble, acc.shape
        )
        centres = m[half:mapsize:step, half:mapsize:step]
        corners = m[0:mapsize:step, 0:mapsize:step]
        left = (centres + _shift_down(centres, 0)) + (corners + _shift_up(corners, 1))
        m[0:mapsize:step, half:mapsize:step] = left / 4 + wibble * rng.uniform(
            -wibble, wibble, left.shape
        )
        top = (centres + _shift_down(centres, 1)) + (corners + _shift_up(corners, 0))
        m[half:mapsize:step, 0:mapsize:step] = top / 4 + wibble * rng.uniform(
            -wibble, wibble, top.shape
        )
        step //= 2
        wibble /= wibbledecay
    m -= m.min()
    m /= m.max()
    return m


def _next_power_of_two(n: int) -> int:
    return 1 if n == 0 else 1 << (n - 1).bit_length()


def imagenet_c_fog(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """ImageNet-C fog at ``severity`` 1..5 with the plasma drawn from ``rng``: uint8 HxWx3."""
    check_image(image)
    if not isinstance(severity, int | np.integer) or not 1 <= severity <= 5:
        raise InputError(f"ImageNet-C severity must be an integer 1..5, got {severity!r}")
    if not isinstance(rng, np.random.RandomState):
        raise InputError(
            "imagenet_c_fog needs a numpy.random.RandomState (the original algorithm's "
            f"generator), got {type(rng).__name__}"
        )
    c0, decay = FOG_SEVERITY_PARAMS[severity - 1]
    h, w = image.shape[:2]
    plasma = plasma_fractal(_next_power_of_two(max(image.shape)), decay, rng)
    x = image / 255.0
    peak = x.max()
    x += c0 * plasma[:h, :w, None]
    x *= peak
    x /= peak + c0
    np.clip(x, 0.0, 1.0, out=x)
    x *= 255.0
    return x.astype(np.uint8)
