"""ImageNet-C (Hendrycks & Dietterich 2019): its fog here, and :func:`corrupt`, every one of its
19 corruptions by name, each bit-identical to the reference code.

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

:func:`corrupt` holds the others by the names the ``imagecorruptions`` package gives them, the
15 common corruptions of the benchmark and its 4 validation ones, with the same promise: after
``np.random.seed(s)`` the package's ``corrupt(image, severity, name)`` and ``corrupt(image,
name, severity, RandomState(s))`` here give the same bytes (the noises:
:mod:`~clearsight.physics.imagenet_c_noise`; the blurs: :mod:`~clearsight.physics.imagenet_c_blur`;
snow, frost, spatter: :mod:`~clearsight.physics.imagenet_c_weather`; the rest:
:mod:`~clearsight.physics.imagenet_c_digital`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

import numpy as np
import numpy.typing as npt

from clearsight.physics import (
    imagenet_c_blur,
    imagenet_c_digital,
    imagenet_c_noise,
    imagenet_c_weather,
)
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
    _check_arguments(image, severity, rng, "imagenet_c_fog")
    return _fog(image, severity, rng)


def _check_arguments(image: object, severity: object, rng: object, caller: str) -> None:
    """The checks every corruption shares: a uint8 RGB image, a severity 1..5 and a
    ``RandomState``."""
    check_image(image)
    if not isinstance(severity, int | np.integer) or not 1 <= severity <= 5:
        raise InputError(f"ImageNet-C severity must be an integer 1..5, got {severity!r}")
    if not isinstance(rng, np.random.RandomState):
        raise InputError(
            f"{caller} needs a numpy.random.RandomState (the original algorithm's "
            f"generator), got {type(rng).__name__}"
        )


def _fog(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """The fog itself, arguments checked."""
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


Corruption = Callable[[npt.NDArray[np.uint8], int, np.random.RandomState], npt.NDArray[np.uint8]]

#: The 15 corruptions of ImageNet-C's benchmark, in the reference's order.
COMMON_CORRUPTIONS: Final[dict[str, Corruption]] = {
    "gaussian_noise": imagenet_c_noise.gaussian_noise,
    "shot_noise": imagenet_c_noise.shot_noise,
    "impulse_noise": imagenet_c_noise.impulse_noise,
    "defocus_blur": imagenet_c_blur.defocus_blur,
    "glass_blur": imagenet_c_blur.glass_blur,
    "motion_blur": imagenet_c_blur.motion_blur,
    "zoom_blur": imagenet_c_blur.zoom_blur,
    "snow": imagenet_c_weather.snow,
    "frost": imagenet_c_weather.frost,
    "fog": _fog,
    "brightness": imagenet_c_digital.brightness,
    "contrast": imagenet_c_digital.contrast,
    "elastic_transform": imagenet_c_digital.elastic_transform,
    "pixelate": imagenet_c_digital.pixelate,
    "jpeg_compression": imagenet_c_digital.jpeg_compression,
}
#: Its 4 validation corruptions (held out of the benchmark for model selection).
VALIDATION_CORRUPTIONS: Final[dict[str, Corruption]] = {
    "speckle_noise": imagenet_c_noise.speckle_noise,
    "gaussian_blur": imagenet_c_blur.gaussian_blur,
    "spatter": imagenet_c_weather.spatter,
    "saturate": imagenet_c_digital.saturate,
}
CORRUPTIONS: Final[dict[str, Corruption]] = COMMON_CORRUPTIONS | VALIDATION_CORRUPTIONS
#: Names that stand for several corruptions.
CORRUPTION_GROUPS: Final[dict[str, tuple[str, ...]]] = {
    "common": tuple(COMMON_CORRUPTIONS),
    "validation": tuple(VALIDATION_CORRUPTIONS),
    "all": tuple(CORRUPTIONS),
}


def corruption_names(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` with each group (``common``, ``validation``, ``all``) expanded, in the order
    given, each corruption once; InputError naming the first that is neither."""
    out: dict[str, None] = {}
    for name in names:
        if name in CORRUPTION_GROUPS:
            out.update(dict.fromkeys(CORRUPTION_GROUPS[name]))
        elif name in CORRUPTIONS:
            out[name] = None
        else:
            raise InputError(
                f"unknown ImageNet-C corruption {name!r}: expected one of "
                f"{', '.join([*CORRUPTION_GROUPS, *CORRUPTIONS])}"
            )
    return tuple(out)


def imagenet_c_image(
    image: npt.NDArray[np.uint8], name: str, severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """:func:`corrupt`, but fog through :func:`imagenet_c_fog` (which has no minimum size): the
    sweep's renderer, so its fog items render as they always did."""
    if name == "fog":
        return imagenet_c_fog(image, severity, rng)
    return corrupt(image, name, severity, rng)


def corrupt(
    image: npt.NDArray[np.uint8], name: str, severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """ImageNet-C corruption ``name`` at ``severity`` 1..5 of a uint8 HxWx3 image (at least
    32x32 px), its randomness drawn from ``rng``: the reference's output after
    ``np.random.seed`` of the seed ``rng`` was made with."""
    if name not in CORRUPTIONS:
        corruption_names([name])
    _check_arguments(image, severity, rng, "corrupt")
    if min(image.shape[:2]) < 32:  # the reference's minimum (frost's crop needs room)
        raise InputError(f"ImageNet-C needs an image of at least 32x32 px, got {image.shape}")
    return CORRUPTIONS[name](image, int(severity), rng)
