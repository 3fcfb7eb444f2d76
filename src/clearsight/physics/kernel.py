"""The one compiled loop of the physics: decode, attenuate, add veiling light and encode, fused.

Every degradation in clearsight is ``I_c = A_c + (J_c - A_c) t_c`` with ``t_c = exp(-beta_c z)``
per pixel and channel in linear light, followed by the exact 8-bit sRGB encode of :mod:`.srgb`.
Written as numpy array expressions that is about ten full passes over an (levels x H x W x 3)
array; fused into one parallel pass it runs within a small factor of a plain memory copy of the
same floats (``benchmarks/physics.py``).

Transmission is computed in float64 and rounded to float32 once. The sweep's levels halve V from
one level to the next, so ``beta`` doubles and ``t`` squares: when a level's coefficients are
exactly ``2**k`` times the previous level's, the kernel squares the previous transmission k times
instead of calling ``exp`` again (relative error ~``2**k`` float64 ulps, far below float32
resolution); any other level gets a fresh ``exp``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from clearsight.physics import srgb

_kernel: Any = None


def _compile() -> Any:
    import numba

    cells = srgb.CELLS

    @numba.njit(inline="always")
    def encode(
        linear: np.float32,
        scale: np.float32,
        code_at_cell: npt.NDArray[np.uint8],
        boundary: npt.NDArray[np.float32],
    ) -> np.uint8:
        s = min(max(linear * scale, np.float32(0.0)), scale)
        cell = int(s)
        return code_at_cell[cell] + np.uint8(s >= boundary[cell])

    @numba.njit(parallel=True, cache=True, nogil=True)
    def kernel(  # pragma: no cover - compiled; checked against the textbook formula in tests
        image: npt.NDArray[np.uint8],
        depth: npt.NDArray[np.float32],
        neg_beta: npt.NDArray[np.float64],
        squarings: npt.NDArray[np.int64],
        veil: npt.NDArray[np.float32],
        decode: npt.NDArray[np.float32],
        code_at_cell: npt.NDArray[np.uint8],
        boundary: npt.NDArray[np.float32],
        out: npt.NDArray[np.uint8],
    ) -> None:
        levels = neg_beta.shape[0]
        height, width = depth.shape
        scale = np.float32(cells)
        a0, a1, a2 = veil[0], veil[1], veil[2]
        for y in numba.prange(height):
            for x in range(width):
                z = np.float64(depth[y, x])
                d0 = decode[image[y, x, 0]] - a0
                d1 = decode[image[y, x, 1]] - a1
                d2 = decode[image[y, x, 2]] - a2
                t0 = t1 = t2 = 1.0
                for lvl in range(levels):
                    k = squarings[lvl]
                    if k < 0:
                        t0 = np.exp(neg_beta[lvl, 0] * z)
                        t1 = np.exp(neg_beta[lvl, 1] * z)
                        t2 = np.exp(neg_beta[lvl, 2] * z)
                    else:
                        for _ in range(k):
                            t0 *= t0
                            t1 *= t1
                            t2 *= t2
                    out[lvl, y, x, 0] = encode(
                        a0 + d0 * np.float32(t0), scale, code_at_cell, boundary
                    )
                    out[lvl, y, x, 1] = encode(
                        a1 + d1 * np.float32(t1), scale, code_at_cell, boundary
                    )
                    out[lvl, y, x, 2] = encode(
                        a2 + d2 * np.float32(t2), scale, code_at_cell, boundary
                    )

    return kernel


def _squarings(beta: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Per level: k if its coefficients are exactly 2**k (k >= 0) times the previous level's,
    else -1 (compute exp afresh). The first level is always computed afresh."""
    out = np.full(beta.shape[0], -1, dtype=np.int64)
    for i in range(1, beta.shape[0]):
        ratio = beta[i] / beta[i - 1]
        k = int(np.round(np.log2(ratio[0]))) if ratio[0] >= 1 else -1
        if k >= 0 and np.all(beta[i - 1] * 2.0**k == beta[i]):
            out[i] = k
    return out


def attenuate_encode(
    image: npt.NDArray[np.uint8],
    depth_m: npt.NDArray[np.float32],
    beta: npt.NDArray[np.float64],
    veil: npt.NDArray[np.float64],
) -> npt.NDArray[np.uint8]:
    """Degrade one 8-bit sRGB image at several strengths and encode each to 8-bit sRGB.

    ``image`` is HxWx3 uint8, ``depth_m`` HxW float32 (already clipped), ``beta`` an (L, 3)
    array of extinction coefficients in 1/m, ``veil`` the (3,) linear veiling light. Returns an
    (L, H, W, 3) uint8 array: ``encode(A + (decode(J) - A) exp(-beta z))`` for each level.
    """
    global _kernel
    if _kernel is None:
        _kernel = _compile()
    beta64 = np.ascontiguousarray(beta, dtype=np.float64)
    out = np.empty((beta64.shape[0], *image.shape), dtype=np.uint8)
    _kernel(
        np.ascontiguousarray(image),
        np.ascontiguousarray(depth_m, dtype=np.float32),
        -beta64,
        _squarings(beta64),
        np.asarray(veil, dtype=np.float32),
        srgb.DECODE_LUT,
        srgb.CODE_AT_CELL,
        srgb.SCALED_BOUNDARY,
        out,
    )
    return out


_luma_kernel: Any = None


def _compile_luma() -> Any:
    import numba

    @numba.njit(parallel=True, cache=True, nogil=True)
    def kernel(  # pragma: no cover - compiled; checked against the numpy formula in tests
        diff: npt.NDArray[np.float32],
        neg_z: npt.NDArray[np.float32],
        beta: np.float32,
        veil: np.float32,
        weights: npt.NDArray[np.float32],
        out: npt.NDArray[np.float32],
    ) -> None:
        height, width = neg_z.shape
        for y in numba.prange(height):
            for x in range(width):
                t = np.float32(np.exp(neg_z[y, x] * beta))
                acc = np.float32(0.0)
                for c in range(3):
                    v = min(max(veil + diff[y, x, c] * t, np.float32(0.0)), np.float32(1.0))
                    if v <= np.float32(0.0031308):
                        e = np.float32(12.92) * v
                    else:
                        e = np.float32(1.055) * v ** np.float32(1 / 2.4) - np.float32(0.055)
                    acc += weights[c] * e
                out[y, x] = acc

    return kernel


def fog_luma(
    diff: npt.NDArray[np.float32],
    neg_z: npt.NDArray[np.float32],
    beta: float,
    veil: float,
    weights: npt.NDArray[np.float32],
) -> npt.NDArray[np.float32]:
    """Luma of Koschmieder fog before quantisation, in one pass: ``sum_c w_c srgb(clip(A +
    (J_c - A) exp(-beta z), 0, 1))`` per pixel, with ``diff = J - A`` (linear, HxWx3) and
    ``neg_z = -z`` (HxW), all float32. The inner loop of the equivalent-visibility search."""
    global _luma_kernel
    if _luma_kernel is None:
        _luma_kernel = _compile_luma()
    out = np.empty(neg_z.shape, dtype=np.float32)
    _luma_kernel(diff, neg_z, np.float32(beta), np.float32(veil), weights, out)
    return out
