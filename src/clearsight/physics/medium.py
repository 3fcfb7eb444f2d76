"""Koschmieder fog, pure-water absorption and turbid water: the physical arms of the sweep.

Both follow ``I = J t + A (1 - t)`` with ``t = exp(-beta z)`` in linear RGB (docs/methods.md §1):

* **fog** — one extinction coefficient ``beta = 3.912 / V`` for R, G and B, veiling light
  ``A = 0.8``. ``3.912 = ln 50``: a black target at distance V keeps 2 % contrast
  (meteorological visibility; not the 5 % / ln 20 convention).
* **underwater** — scaled pure-water absorption, no scattering:
  ``beta_c = (3.912 / V) a(lambda_c) / min_c a(lambda_c)``, so the least-attenuated channel
  (blue for the default 650/525/450 nm) defines V. Veiling light either absorption-limited,
  ``A_c = 0.8 min(beta) / beta_c`` (the colour of deep clear water), or grey ``A = 0.8``.
* **turbid water** — absorption and scattering: per channel the beam attenuation
  ``c_k = a_k + b_k`` (the water's own coefficients, see :func:`turbid_coefficients`),
  ``beta_k = (3.912 / V) c_k / min_k c_k`` (the least-attenuated channel defines V), and the
  backscattered veil ``B_k = 0.8 w_k / max_k w_k`` with the single-scattering albedo
  ``w_k = b_k / c_k``.

Depth is clipped to [0.5, 80] m. Only ``beta z`` enters, so scaling depth and V by the same
factor gives the same image (depth-scale invariance; tested). All levels of one scene are made
from one decode in one fused pass (:mod:`.kernel`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from clearsight.physics.kernel import attenuate_encode
from clearsight.physics.water_tables import WATER_TABLES, absorption
from clearsight.validate import InputError, check_depth, check_image, check_visibility

#: The eight sweep levels in metres, clearest first: exactly 250 * 2**-k for k = 0..7.
SWEEP_LEVELS_M: Final[tuple[float, ...]] = tuple(250.0 * 2.0**-k for k in range(8))
#: ln 50 to the precision the method fixes: V = 3.912 / beta.
VISIBILITY_CONSTANT: Final = 3.912
#: Depth is clipped to this range (metres) before it enters the transmission.
DEPTH_CLIP_M: Final[tuple[float, float]] = (0.5, 80.0)
#: Default veiling light (linear) of fog and of the grey underwater option.
DEFAULT_AIRLIGHT: Final = 0.8
#: Default underwater channel wavelengths (R, G, B) in nm.
DEFAULT_WAVELENGTHS_NM: Final[tuple[float, float, float]] = (650.0, 525.0, 450.0)

Veil = Literal["absorption_limited", "grey"]


def extinction(visibility_m: float) -> float:
    """Extinction coefficient in 1/m for a meteorological visibility: ``beta = 3.912 / V``."""
    return VISIBILITY_CONSTANT / check_visibility(visibility_m)


def clip_depth(depth_m: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Depth as a new float32 array clipped to :data:`DEPTH_CLIP_M`.

    Rounded to float32 before the clip: the same values as clipping first (the bounds are
    float32 values and rounding keeps order), one float64 pass fewer.
    """
    return np.clip(np.asarray(depth_m, dtype=np.float32), *DEPTH_CLIP_M)


def _levels(visibilities_m: Sequence[float]) -> npt.NDArray[np.float64]:
    if len(visibilities_m) == 0:
        raise InputError("at least one visibility level is needed")
    return np.array([check_visibility(v) for v in visibilities_m], dtype=np.float64)


def _check_airlight(airlight: float) -> float:
    a = float(airlight)
    if not 0.0 <= a <= 1.0:
        raise InputError(f"airlight must be a linear value in [0, 1], got {airlight!r}")
    return a


def _degrade(
    image: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.floating],
    beta: npt.NDArray[np.float64],
    veil: npt.NDArray[np.float64],
) -> npt.NDArray[np.uint8]:
    check_image(image)
    check_depth(depth_m, image.shape)
    return attenuate_encode(image, clip_depth(depth_m), beta, veil)


def fog_levels(
    image: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.floating],
    visibilities_m: Sequence[float] = SWEEP_LEVELS_M,
    airlight: float = DEFAULT_AIRLIGHT,
) -> npt.NDArray[np.uint8]:
    """Koschmieder fog at several visibilities from one decode: an (L, H, W, 3) uint8 array.

    ``I = J t + A (1 - t)``, ``t = exp(-3.912 z / V)``, the same for R, G and B.
    """
    beta = VISIBILITY_CONSTANT / _levels(visibilities_m)
    a = _check_airlight(airlight)
    return _degrade(image, depth_m, np.repeat(beta[:, None], 3, axis=1), np.full(3, a))


def fog(
    image: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.floating],
    visibility_m: float,
    airlight: float = DEFAULT_AIRLIGHT,
) -> npt.NDArray[np.uint8]:
    """Koschmieder fog at one visibility (metres): uint8 HxWx3 sRGB, see :func:`fog_levels`."""
    return fog_levels(image, depth_m, (visibility_m,), airlight)[0]


def water_coefficients(
    visibility_m: float,
    wavelengths_nm: Sequence[float] = DEFAULT_WAVELENGTHS_NM,
    table: str = "pope_fry_1997",
    veil: Veil = "absorption_limited",
    airlight: float = DEFAULT_AIRLIGHT,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per-channel extinction (1/m) and veiling light of the underwater arm at visibility V.

    ``beta_c = (3.912 / V) a_c / min(a)``; veil ``A_c = A min(beta) / beta_c`` when
    absorption-limited, else ``A`` for every channel.
    """
    if len(wavelengths_nm) != 3:
        raise InputError(f"need three channel wavelengths (R, G, B), got {list(wavelengths_nm)}")
    if table not in WATER_TABLES:
        raise InputError(f"unknown water absorption table {table!r}; known: {WATER_TABLES}")
    if veil not in ("absorption_limited", "grey"):
        raise InputError(f"veil must be 'absorption_limited' or 'grey', got {veil!r}")
    a = absorption(wavelengths_nm, table)
    ratio = a / a.min()
    beta = extinction(visibility_m) * ratio
    a_light = _check_airlight(airlight)
    veil_light = a_light / ratio if veil == "absorption_limited" else np.full(3, a_light)
    return beta, veil_light


def underwater_levels(
    image: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.floating],
    visibilities_m: Sequence[float] = SWEEP_LEVELS_M,
    wavelengths_nm: Sequence[float] = DEFAULT_WAVELENGTHS_NM,
    table: str = "pope_fry_1997",
    veil: Veil = "absorption_limited",
) -> npt.NDArray[np.uint8]:
    """Pure-water absorption at several visibilities from one decode: (L, H, W, 3) uint8."""
    levels = _levels(visibilities_m)
    _, veil_light = water_coefficients(levels[0], wavelengths_nm, table, veil)
    beta = np.stack([water_coefficients(v, wavelengths_nm, table, veil)[0] for v in levels])
    return _degrade(image, depth_m, beta, veil_light)


def underwater(
    image: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.floating],
    visibility_m: float,
    wavelengths_nm: Sequence[float] = DEFAULT_WAVELENGTHS_NM,
    table: str = "pope_fry_1997",
    veil: Veil = "absorption_limited",
) -> npt.NDArray[np.uint8]:
    """Pure-water absorption at one visibility (metres): uint8 HxWx3 sRGB.

    See :func:`underwater_levels`; absolute metres are not comparable with fog's because the
    two arms define V on different channels.
    """
    return underwater_levels(image, depth_m, (visibility_m,), wavelengths_nm, table, veil)[0]


def turbid_coefficients(
    visibility_m: float,
    absorption_per_m: Sequence[float],
    scattering_per_m: Sequence[float],
    airlight: float = DEFAULT_AIRLIGHT,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    r"""Per-channel extinction (1/m) and backscattered veil of turbid water at visibility V.

    The water is given by its absorption :math:`a_k` and scattering :math:`b_k` coefficients
    at the R, G, B channel wavelengths (inherent optical properties, 1/m, e.g. of a Jerlov
    water type). With beam attenuation :math:`c_k = a_k + b_k` and single-scattering albedo
    :math:`w_k = b_k / c_k`, the image is :math:`I_k = J_k t_k + B_k (1 - t_k)`,
    :math:`t_k = e^{-\beta_k z}` (the underwater image formation model of Schechner & Karpel
    2005 / Akkaynak & Treibitz 2018 with one attenuation coefficient per channel), where

    .. math::

        \beta_k = \frac{3.912}{V} \frac{c_k}{\min_j c_j}, \qquad
        B_k = A \frac{w_k}{\max_j w_j}.

    So V is the visibility of the least-attenuated channel (as in the pure-water arm), the
    water's spectral shape is kept at every V (the same water, denser or thinner: only the
    ratios of the coefficients matter), and the veil — light scattered back by the water
    column, :math:`B_\infty \propto b / c` under white ambient light and a backscatter
    fraction equal across channels — is brightest, at ``airlight``, in the most scattering
    channel.
    """
    a = _channel_coefficients(absorption_per_m, "absorption")
    b = _channel_coefficients(scattering_per_m, "scattering")
    c = a + b
    if not (c > 0).all() or not (b > 0).any():
        raise InputError(
            "turbid water needs a positive attenuation a + b in every channel and some "
            "scattering (without scattering, use the pure-water arm)"
        )
    albedo = b / c
    beta = extinction(visibility_m) * c / c.min()
    return beta, _check_airlight(airlight) * albedo / albedo.max()


def _channel_coefficients(values: Sequence[float], name: str) -> npt.NDArray[np.float64]:
    """Three finite, non-negative coefficients (R, G, B) in 1/m."""
    v = np.asarray(values, dtype=np.float64)
    if v.shape != (3,) or not np.isfinite(v).all() or (v < 0).any():
        raise InputError(
            f"turbid water {name} must be three non-negative numbers in 1/m (R, G, B), "
            f"got {list(values)!r}"
        )
    return v


def turbid_levels(
    image: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.floating],
    absorption_per_m: Sequence[float],
    scattering_per_m: Sequence[float],
    visibilities_m: Sequence[float] = SWEEP_LEVELS_M,
    airlight: float = DEFAULT_AIRLIGHT,
) -> npt.NDArray[np.uint8]:
    """Turbid water (:func:`turbid_coefficients`) at several visibilities from one decode:
    (L, H, W, 3) uint8."""
    levels = _levels(visibilities_m)
    _, veil = turbid_coefficients(levels[0], absorption_per_m, scattering_per_m, airlight)
    beta = np.stack(
        [turbid_coefficients(v, absorption_per_m, scattering_per_m, airlight)[0] for v in levels]
    )
    return _degrade(image, depth_m, beta, veil)


def turbid(
    image: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.floating],
    visibility_m: float,
    absorption_per_m: Sequence[float],
    scattering_per_m: Sequence[float],
    airlight: float = DEFAULT_AIRLIGHT,
) -> npt.NDArray[np.uint8]:
    """Turbid water at one visibility (metres): uint8 HxWx3 sRGB, see :func:`turbid_levels`."""
    levels = (visibility_m,)
    return turbid_levels(image, depth_m, absorption_per_m, scattering_per_m, levels, airlight)[0]


def fog_linear(
    linear: npt.NDArray[np.floating],
    depth_m: npt.NDArray[np.floating],
    visibility_m: float,
    airlight: float = DEFAULT_AIRLIGHT,
) -> npt.NDArray[np.float64]:
    """Koschmieder fog on linear light in float64, before any encoding or quantisation."""
    t = np.exp(-extinction(visibility_m) * np.clip(depth_m, *DEPTH_CLIP_M).astype(np.float64))
    return airlight + (np.asarray(linear, dtype=np.float64) - airlight) * t[..., None]
