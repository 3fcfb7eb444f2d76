"""ImageNet-C's four noises (Gaussian, shot, impulse, speckle): the reference's draws from
``rng`` in its order and its float64 arithmetic, truncated to uint8 as the reference is.

Each takes a uint8 HxWx3 image, a severity 1..5 and a ``numpy.random.RandomState``; the image
is read as ``x = image / 255``.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

#: Standard deviation of the added noise, severities 1..5.
GAUSSIAN_SCALE: Final = (0.08, 0.12, 0.18, 0.26, 0.38)
#: Photons per unit intensity of the Poisson draw.
SHOT_PHOTONS: Final = (60, 25, 12, 5, 3)
#: Share of values set to 0 or 1.
IMPULSE_AMOUNT: Final = (0.03, 0.06, 0.09, 0.17, 0.27)
#: Standard deviation of the multiplicative noise.
SPECKLE_SCALE: Final = (0.15, 0.2, 0.35, 0.45, 0.6)


def to_uint8(unit: npt.NDArray[np.floating]) -> npt.NDArray[np.uint8]:
    """``clip(unit, 0, 1) * 255`` truncated to uint8: how the reference ends most corruptions.
    Computed in place: ``unit`` (always a temporary of the caller's) is overwritten."""
    np.clip(unit, 0, 1, out=unit)
    unit *= 255
    return unit.astype(np.uint8)


def gaussian_noise(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """``x + N(0, s^2)`` per value."""
    noise = rng.normal(0.0, GAUSSIAN_SCALE[severity - 1], image.shape)
    noise += image / 255.0  # x + noise (addition commutes exactly)
    return to_uint8(noise)


def shot_noise(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """``Poisson(x c) / c`` per value: photon noise at c photons per unit intensity."""
    photons = SHOT_PHOTONS[severity - 1]
    x = image / 255.0
    x *= photons
    return to_uint8(rng.poisson(x) / float(photons))


def impulse_noise(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """Salt and pepper: a share ``a`` of the values (``u1 <= a``) set to 1 or, for half of them
    (``u2 <= 1/2`` salt, else pepper), 0: scikit-image's ``random_noise(mode='s&p')``, whose
    two uniform fields are drawn here from ``rng`` in the same order."""
    x = image / 255.0
    flipped = rng.random_sample(x.shape) <= IMPULSE_AMOUNT[severity - 1]
    salted = rng.random_sample(x.shape) <= 0.5
    x[flipped & salted] = 1.0
    x[flipped & ~salted] = 0.0
    return to_uint8(x)


def speckle_noise(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """``x + x N(0, s^2)`` per value: noise proportional to the intensity."""
    x = image / 255.0
    noise = rng.normal(0.0, SPECKLE_SCALE[severity - 1], x.shape)
    noise *= x
    noise += x  # x + x noise, the products and sums commuted exactly
    return to_uint8(noise)
