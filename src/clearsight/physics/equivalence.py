"""Gain-matched equivalent visibility: where a nominal corruption sits on the physical fog axis.

For a corrupted image and its clean original (docs/methods.md §2): luma ``Y = 0.2126 R + 0.7152 G +
0.0722 B`` of the encoded [0, 1] values; high-pass detail ``D(Y) = Y - GaussianBlur(Y, sigma=2,
mode='reflect')``; retained gain ``g = <D(Y_corrupt), D(Y_clean)> / <D(Y_clean), D(Y_clean)>``.
``V_eq`` is the largest V whose Koschmieder fog of the clean image (with the scene's depth, before
quantisation) has a gain ``<= g``: bracketed by a binary search over a grid of one point per
octave, then refined in log V by Brent's method (bisection safeguarded with inverse-quadratic
steps; the same answer as plain bisection to the tolerance, in about a third of the fog
evaluations). The gain of fog rises monotonically with V, so the answer is unique.

A gain alone cannot tell lost detail from detail the corruption *added*: noise keeps the clean
detail (g near 1) and adds its own. The matching's residual says which: the *added detail*
``a = ||D(Y_corrupt) - g D(Y_clean)||^2 / ||D(Y_clean)||^2``, the detail energy of the corrupted
image that no scaled copy of the clean detail explains, in units of the clean detail's energy.
A corruption that only attenuates detail — ``D(Y_corrupt) = A D(Y_clean)`` with ``A`` a
symmetric operator whose eigenvalues lie in [0, 1]: a transmission map varying slowly over
the image, as fog's, or a blur whose transfer function lies in [0, 1] — has
``a = Var(lambda) <= 1/4`` (the variance of the eigenvalues ``lambda`` weighted by the clean
detail's energy along them, Popoviciu's inequality for a quantity in [0, 1]). So ``a >``
:data:`ATTENUATION_MAX_ADDED` means the corruption does not act like lost contrast, and its V_eq
is a gain matched, not a place on the fog axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt
from scipy.ndimage import gaussian_filter
from scipy.optimize import brentq

from clearsight.physics.imagenet_c import imagenet_c_image
from clearsight.physics.kernel import fog_luma
from clearsight.physics.medium import DEFAULT_AIRLIGHT, DEPTH_CLIP_M, VISIBILITY_CONSTANT
from clearsight.physics.srgb import srgb_to_linear
from clearsight.validate import InputError, check_depth, check_image

#: Search range of V_eq in metres. Outside it the answer is reported as 0 or infinity.
V_EQ_RANGE_M: Final[tuple[float, float]] = (2.0**-6, 2.0**14)
#: Gains below this count as no retained detail (float round-off of a flat image is ~1e-16;
#: one 8-bit code step of detail is a gain of order 1e-2).
MIN_GAIN: Final = 1e-6
#: The most added detail ``a`` an attenuation of detail can have (module docstring): above it a
#: corruption adds detail of its own (noise, displaced or blocked edges) rather than losing
#: contrast.
ATTENUATION_MAX_ADDED: Final = 0.25
_LUMA: Final = np.array([0.2126, 0.7152, 0.0722])
_LUMA32: Final = _LUMA.astype(np.float32)


def _highpass(y: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """``D(Y) = Y - GaussianBlur(Y, sigma=2 px, mode='reflect')``."""
    return (y - gaussian_filter(y, sigma=2.0, mode="reflect")).astype(np.float64)


def _detail(srgb01: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    return _highpass(np.asarray(srgb01) @ _LUMA.astype(srgb01.dtype))


def _gain(d: npt.NDArray[np.float64], clean_detail: npt.NDArray[np.float64]) -> float:
    return float(
        np.einsum("ij,ij->", d, clean_detail) / np.einsum("ij,ij->", clean_detail, clean_detail)
    )


def retained_gain(
    corrupted: npt.NDArray[np.floating], clean_detail: npt.NDArray[np.float64]
) -> float:
    """``<D(Y_corrupt), D(Y_clean)> / <D(Y_clean), D(Y_clean)>`` for encoded [0, 1] images."""
    return _gain(_detail(corrupted), clean_detail)


def _as_unit(image: npt.NDArray[np.generic], name: str) -> npt.NDArray[np.float64]:
    if image.dtype == np.uint8:
        return check_image(image, name) / 255.0
    if np.issubdtype(image.dtype, np.floating) and image.ndim == 3 and image.shape[2] == 3:
        return np.asarray(image, dtype=np.float64)
    raise InputError(f"{name} must be uint8 HxWx3 or float HxWx3 in [0, 1], got {image.dtype}")


class FogGainCurve:
    """The retained gain of Koschmieder fog of one clean image as a function of V (memoised).

    Built once per scene, it serves every corrupted version of that scene: the severities of
    one scene share their grid evaluations, which are the bulk of the work.
    """

    def __init__(
        self,
        clean: npt.NDArray[np.uint8],
        depth_m: npt.NDArray[np.floating],
        airlight: float = DEFAULT_AIRLIGHT,
    ) -> None:
        clean01 = _as_unit(clean, "clean")
        check_depth(depth_m, clean01.shape)
        self.shape = clean01.shape
        self.clean_detail = _detail(clean01)
        if not np.einsum("ij,ij->", self.clean_detail, self.clean_detail) > 0:
            raise InputError("the clean image has no detail (it is flat); V_eq is undefined")
        # candidate fogs are evaluated in float32 (gains agree with float64 to ~1e-7)
        self._veil = np.float32(airlight)
        self._diff = srgb_to_linear(clean01).astype(np.float32) - self._veil
        self._neg_z = -np.clip(depth_m, *DEPTH_CLIP_M).astype(np.float32)
        self._memo: dict[float, float] = {}

    def gain_of(self, corrupted: npt.NDArray[np.generic]) -> float:
        """The retained gain ``g`` of a corrupted version of the clean image."""
        return self.match(corrupted)[0]

    def match(self, corrupted: npt.NDArray[np.generic]) -> tuple[float, float]:
        """The retained gain ``g`` of a corrupted version of the clean image and the detail it
        adds, ``a = ||D' - g D||^2 / ||D||^2`` (module docstring)."""
        corrupt01 = _as_unit(corrupted, "corrupted")
        if corrupt01.shape != self.shape:
            raise InputError(f"corrupted {corrupt01.shape} and clean {self.shape} differ in shape")
        detail = _detail(corrupt01)
        gain = _gain(detail, self.clean_detail)
        residual = detail - gain * self.clean_detail
        energy = np.einsum("ij,ij->", self.clean_detail, self.clean_detail)
        return gain, float(np.einsum("ij,ij->", residual, residual) / energy)

    def at(self, log2_v: float) -> float:
        """The gain of fog at ``V = 2**log2_v`` metres, before quantisation."""
        if log2_v not in self._memo:
            beta = VISIBILITY_CONSTANT / 2.0**log2_v
            luma = fog_luma(self._diff, self._neg_z, beta, float(self._veil), _LUMA32)
            self._memo[log2_v] = _gain(_highpass(luma), self.clean_detail)
        return self._memo[log2_v]

    def equivalent(self, target: float, rtol: float = 1e-5) -> float:
        """The largest V whose fog keeps a gain ``<= target`` (see the module docstring)."""
        lo, hi = (math.log2(v) for v in V_EQ_RANGE_M)
        if target < MIN_GAIN:
            return 0.0
        if self.at(hi) <= target:
            return math.inf
        if self.at(lo) > target:
            return 0.0
        # Binary search over the one-per-octave grid, then Brent inside the bracketing octave.
        grid = np.arange(lo, hi + 1.0)
        i, j = 0, len(grid) - 1  # at(grid[i]) <= target < at(grid[j])
        while j - i > 1:
            k = (i + j) // 2
            i, j = (k, j) if self.at(float(grid[k])) <= target else (i, k)
        root = brentq(
            lambda x: self.at(x) - target,
            float(grid[i]),
            float(grid[j]),
            xtol=math.log2(1.0 + rtol),
        )
        return 2.0 ** float(root)


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
    curve = FogGainCurve(clean, depth_m, airlight)
    return curve.equivalent(curve.gain_of(corrupted), rtol)


class Equivalence(NamedTuple):
    """Where one corrupted image sits on the fog axis: its retained gain ``g``, the
    gain-matched ``V_eq`` (metres) of that gain and the detail the corruption added (``added``,
    the matching's residual ``a``: above :data:`ATTENUATION_MAX_ADDED` the corruption does not
    act like lost contrast)."""

    v_eq_m: float
    gain: float
    added: float


def imagenet_c_equivalents(
    image: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.floating],
    seed: int | Sequence[int],
    severities: Sequence[int] = (1, 2, 3, 4, 5),
    corruption: str = "fog",
) -> list[Equivalence]:
    """Retained gain and V_eq of ImageNet-C ``corruption`` (fog unless named) at each severity,
    its randomness drawn from a fresh ``RandomState`` per severity (as the original code seeds
    per call): ``seed`` one seed for every severity (a common draw), or one per severity in
    ``severities``' order (independent draws, as the benchmark drew each image and severity)."""
    seeds = [seed] * len(severities) if isinstance(seed, int) else list(seed)
    if len(seeds) != len(severities):
        raise InputError(f"{len(seeds)} plasma seeds for {len(severities)} severities")
    curve = FogGainCurve(image, depth_m)
    fogged = (
        imagenet_c_image(image, corruption, sev, np.random.RandomState(s))
        for sev, s in zip(severities, seeds, strict=True)
    )
    matched = [curve.match(f) for f in fogged]
    return [Equivalence(curve.equivalent(g), g, a) for g, a in matched]
