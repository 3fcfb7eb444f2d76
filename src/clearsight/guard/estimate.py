"""How much a model can still see, estimated from the degraded image alone (and its depth map).

**Transmission** by the dark channel prior (He, Sun & Tang, "Single image haze removal using
dark channel prior", CVPR 2009 / IEEE TPAMI 33(12), 2011). In a haze-free outdoor photo most
patches have some pixel with a near-zero colour channel (shadows, saturated colours, dark
objects), so in a hazy image ``I = J t + A (1 - t)`` (docs/methods.md §1, on linear light) the dark
channel ``min_c min_patch I_c / A`` is about ``1 - t``, and

    t(x) = 1 - w * min_c min_{y in patch(x)} I_c(y) / A_c

with the airlight ``A`` estimated as the mean colour of the brightest 0.1 % dark-channel pixels
(He et al. §4.4), or given when the veil is known. Estimating A needs some region that is
all veil (sky, dense haze): on a scene of one depth without one, the brightest dark-channel
pixels are object colours seen through fog and A is off by up to ~0.15 at small images.
He et al. keep ``w = 0.95`` to leave a little haze in a dehazed photo; here
the transmission is a measurement, so ``w = 1`` by default. The image is decoded to linear
light first, because the fog is linear there (:func:`~clearsight.physics.decode_srgb8`).

**Depth-free statistic**: the median of t(x) over the image — the share of scene radiance that
still reaches the camera, with no depth needed.

**Visibility in metres** where the depth map ``z`` is known: Koschmieder's
``t = exp(-3.912 z / V)`` per pixel gives ``V = -3.912 z / ln t``, and

    V_hat = median over usable pixels of -3.912 z(x) / ln t(x)

Usable pixels: ``t`` inside :data:`USABLE_T` (away from 1, where ``ln t`` is ~0 and 8-bit
quantisation dominates; away from 0, where the pixel is all veil and says only that V is
small) and depth below the far clip bound (80 m: sky and infinity in a metric depth map, where
the dark channel prior does not hold and the clipped depth is not the true one). Pixels at the
near bound are kept: the fog was made with the clipped depth too. With no usable pixel the
estimate is ``inf`` when the image is clearer than the usable range (every t above it) and
``0`` otherwise (every pixel veiled).

**Where it fails**: bright, white or grey objects and sky (no dark pixel in the patch: t is
underestimated, so V_hat is biased low — the guard abstains too early), and underwater colour
casts (the dark channel follows the most attenuated channel, red, while the sweep's water
visibility is defined by the least attenuated one, blue, so V_hat is biased low in water; a
grey-veil assumption of one A for every channel is also wrong there, though A is estimated per
channel). A clean photo with a bright dark channel likewise reads as hazy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
from scipy.ndimage import minimum_filter

from clearsight.physics import DEPTH_CLIP_M, VISIBILITY_CONSTANT, decode_srgb8
from clearsight.validate import InputError, check_depth, check_image

#: Transmissions a pixel must lie in (open interval) to enter the visibility estimate.
USABLE_T: Final[tuple[float, float]] = (0.02, 0.98)
#: Share of pixels, brightest in the dark channel, whose mean colour is the airlight.
AIRLIGHT_SHARE: Final = 0.001
#: He et al.'s patch side (15 px at about 600 px image width).
DEFAULT_PATCH_PX: Final = 15


@dataclass(frozen=True)
class VisibilityEstimate:
    """What the guard measured on one image.

    ``transmission``: the depth-free statistic, median dark-channel transmission in [0, 1].
    ``visibility_m``: V_hat in metres (None without a depth map; ``inf``/``0`` as in the module
    docstring). ``usable_share``: the share of pixels V_hat was computed from (None without
    depth). ``airlight``: the estimated linear RGB airlight.
    """

    transmission: float
    visibility_m: float | None
    usable_share: float | None
    airlight: tuple[float, float, float]


def airlight(
    linear: npt.NDArray[np.float32], dark: npt.NDArray[np.float32]
) -> npt.NDArray[np.float64]:
    """The airlight per channel: the mean linear colour of the :data:`AIRLIGHT_SHARE`
    brightest pixels of the dark channel ``dark`` (He et al. 2011 §4.4), at least 1e-3."""
    flat = dark.reshape(-1)
    n = max(1, round(flat.size * AIRLIGHT_SHARE))
    top = np.argpartition(flat, flat.size - n)[flat.size - n :]
    colour = linear.reshape(-1, 3)[top].astype(np.float64).mean(axis=0)
    return np.maximum(colour, 1e-3)


def dark_channel_transmission(
    image: npt.NDArray[np.uint8],
    patch_px: int = DEFAULT_PATCH_PX,
    omega: float = 1.0,
    known_airlight: float | None = None,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float64]]:
    """``(t, A)``: the per-pixel transmission ``1 - omega * min_c min_patch I_c / A_c`` in
    [0, 1] of a uint8 sRGB image (on linear light) and the airlight it used: ``known_airlight``
    (a linear grey veil) when given, else estimated (:func:`airlight`)."""
    check_image(image)
    if patch_px < 1:
        raise InputError(f"patch_px must be >= 1, got {patch_px}")
    if not 0.0 < omega <= 1.0:
        raise InputError(f"omega must be in (0, 1], got {omega}")
    if known_airlight is not None and not 0.0 < known_airlight <= 1.0:
        raise InputError(f"known_airlight must be a linear value in (0, 1], got {known_airlight}")
    linear = decode_srgb8(image)
    if known_airlight is None:
        dark = minimum_filter(_channel_min(linear), size=patch_px, mode="nearest")
        a = airlight(linear, dark)
    else:
        a = np.full(3, float(known_airlight))
    normalised = _channel_min(linear, (1.0 / a).astype(np.float32))
    t = 1.0 - np.float32(omega) * minimum_filter(normalised, size=patch_px, mode="nearest")
    return np.clip(t, 0.0, 1.0, out=t), a


def _channel_min(
    linear: npt.NDArray[np.float32], scale: npt.NDArray[np.float32] | None = None
) -> npt.NDArray[np.float32]:
    """``min_c linear_c * scale_c`` per pixel, channel by channel (several times faster than
    a reduction over the interleaved last axis)."""
    s = np.ones(3, np.float32) if scale is None else scale
    out = linear[..., 0] * s[0]
    np.minimum(out, linear[..., 1] * s[1], out=out)
    np.minimum(out, linear[..., 2] * s[2], out=out)
    return out


def visibility_from_transmission(
    t: npt.NDArray[np.floating], depth_m: npt.NDArray[np.floating]
) -> tuple[float, float]:
    """``(V_hat, usable share)``: the median of ``-3.912 z / ln t`` over the usable pixels
    (see the module docstring; ``inf`` or ``0`` when none is usable)."""
    z = np.maximum(np.asarray(depth_m, dtype=np.float64), DEPTH_CLIP_M[0])
    tt = np.asarray(t, dtype=np.float64)
    low, high = USABLE_T
    usable = (tt > low) & (tt < high) & (z < DEPTH_CLIP_M[1])
    share = float(usable.mean())
    if not usable.any():
        near = tt[z < DEPTH_CLIP_M[1]]
        clear = near.size > 0 and float(np.median(near)) >= high
        return (float("inf") if clear else 0.0), share
    per_pixel = -VISIBILITY_CONSTANT * z[usable] / np.log(tt[usable])
    return float(np.median(per_pixel)), share


def estimate_visibility(
    image: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.floating] | None = None,
    patch_px: int = DEFAULT_PATCH_PX,
    omega: float = 1.0,
    known_airlight: float | None = None,
) -> VisibilityEstimate:
    """The guard's estimate of one image: the median dark-channel transmission and, with a
    depth map of the image's shape, the visibility in metres (module docstring);
    ``known_airlight`` as in :func:`dark_channel_transmission`."""
    t, a = dark_channel_transmission(image, patch_px, omega, known_airlight)
    v_hat: float | None = None
    share: float | None = None
    if depth_m is not None:
        check_depth(depth_m, image.shape)
        v_hat, share = visibility_from_transmission(t, depth_m)
    return VisibilityEstimate(float(np.median(t)), v_hat, share, (a[0], a[1], a[2]))
