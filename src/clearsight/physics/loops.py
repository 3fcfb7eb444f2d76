"""The compiled loops behind :mod:`clearsight.physics.kernel` (imported on first use: numba
takes a while to import).

They live at module level so that numba's on-disk cache (``cache=True``) finds them again in a
new process. Defined inside a function, a kernel is a closure over its helper dispatcher, which
pickles differently in every process: the cache key never matched, so every process (a CLI run,
each pool worker, each Ray actor) compiled the kernel again, about 1.5 s, and left one more
entry in ``__pycache__``.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt


@numba.njit(inline="always", cache=True)
def _encode(
    linear: np.float32,
    scale: np.float32,
    code_at_cell: npt.NDArray[np.uint8],
    boundary: npt.NDArray[np.float32],
) -> np.uint8:  # pragma: no cover - compiled
    """Exact 8-bit sRGB code of one linear value (see :mod:`clearsight.physics.srgb`)."""
    s = min(max(linear * scale, np.float32(0.0)), scale)
    cell = int(s)
    return code_at_cell[cell] + np.uint8(s >= boundary[cell])


@numba.njit(parallel=True, cache=True, nogil=True)
def attenuate_encode(  # pragma: no cover - compiled; checked against the textbook formula
    image: npt.NDArray[np.uint8],
    depth: npt.NDArray[np.float32],
    neg_beta: npt.NDArray[np.float64],
    squarings: npt.NDArray[np.int64],
    veil: npt.NDArray[np.float32],
    decode: npt.NDArray[np.float32],
    scale: np.float32,
    code_at_cell: npt.NDArray[np.uint8],
    boundary: npt.NDArray[np.float32],
    out: npt.NDArray[np.uint8],
) -> None:
    """``out[l] = encode(A + (decode(J) - A) t_l)`` for every level ``l``, one pass over pixels
    (the arguments as :func:`clearsight.physics.kernel.attenuate_encode` prepares them)."""
    levels = neg_beta.shape[0]
    height, width = depth.shape
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
                out[lvl, y, x, 0] = _encode(a0 + d0 * np.float32(t0), scale, code_at_cell, boundary)
                out[lvl, y, x, 1] = _encode(a1 + d1 * np.float32(t1), scale, code_at_cell, boundary)
                out[lvl, y, x, 2] = _encode(a2 + d2 * np.float32(t2), scale, code_at_cell, boundary)


@numba.njit(parallel=True, cache=True, nogil=True)
def fog_luma(  # pragma: no cover - compiled; checked against the numpy formula in tests
    diff: npt.NDArray[np.float32],
    neg_z: npt.NDArray[np.float32],
    beta: np.float32,
    veil: np.float32,
    weights: npt.NDArray[np.float32],
    out: npt.NDArray[np.float32],
) -> None:
    """Luma of fog before quantisation (see :func:`clearsight.physics.kernel.fog_luma`)."""
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
