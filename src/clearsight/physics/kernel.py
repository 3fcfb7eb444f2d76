"""The one compiled loop of the physics: attenuate, add veiling light and encode, fused.

Every degradation in clearsight is ``I_c = A_c + (J_c - A_c) exp(-beta_c z)`` per pixel and
channel in linear light, followed by the exact 8-bit sRGB encode of :mod:`.srgb`. Written as
numpy array expressions that is about ten full passes over an (levels x H x W x 3) array; fused
into one parallel pass it runs within a small factor of a plain memory copy of the same floats
(``benchmarks/physics.py``). The kernel touches only arrays prepared by :mod:`.medium`; the
arithmetic is float32 with the transmission computed once per pixel and level when all channels
share one extinction coefficient (fog).
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

    @numba.njit(parallel=True, cache=True, nogil=True)
    def attenuate_encode(  # pragma: no cover - compiled; checked against the numpy reference
        diff: npt.NDArray[np.float32],
        depth: npt.NDArray[np.float32],
        neg_beta: npt.NDArray[np.float32],
        veil: npt.NDArray[np.float32],
        grey: bool,
        code_at_cell: npt.NDArray[np.uint8],
        boundary: npt.NDArray[np.float32],
        out: npt.NDArray[np.uint8],
    ) -> None:
        levels = neg_beta.shape[0]
        height, width = depth.shape
        for job in numba.prange(levels * height):
            lvl = job // height
            y = job % height
            for x in range(width):
                t0 = np.float32(np.exp(neg_beta[lvl, 0] * depth[y, x]))
                for c in range(3):
                    t = t0 if grey else np.float32(np.exp(neg_beta[lvl, c] * depth[y, x]))
                    s = veil[c] + diff[y, x, c] * t
                    s = min(max(s, np.float32(0.0)), np.float32(cells))
                    cell = int(s)
                    v = code_at_cell[cell]
                    if s >= boundary[cell]:
                        v += 1
                    out[lvl, y, x, c] = v

    return attenuate_encode


def attenuate_encode(
    linear: npt.NDArray[np.float32],
    depth_m: npt.NDArray[np.float32],
    beta: npt.NDArray[np.float64],
    veil: npt.NDArray[np.float64],
) -> npt.NDArray[np.uint8]:
    """Degrade one decoded image at several strengths and encode each to 8-bit sRGB.

    ``linear`` is HxWx3 float32 linear light, ``depth_m`` HxW float32 (already clipped),
    ``beta`` an (L, 3) array of extinction coefficients in 1/m, ``veil`` the (3,) veiling light.
    Returns an (L, H, W, 3) uint8 array: ``encode(A + (J - A) exp(-beta z))`` for each level.
    """
    global _kernel
    if _kernel is None:
        _kernel = _compile()
    scale = np.float32(srgb.CELLS)
    veil32 = np.asarray(veil, dtype=np.float32)
    # Scaled by the (power-of-two) cell count, so the kernel's arithmetic is exactly the scaled
    # float32 arithmetic of A + (J - A) t and needs no rescaling before the table look-up.
    diff = (linear - veil32) * scale
    beta32 = np.ascontiguousarray(beta, dtype=np.float32)
    grey = bool((beta32 == beta32[:, :1]).all())
    out = np.empty((beta32.shape[0], *linear.shape), dtype=np.uint8)
    _kernel(
        np.ascontiguousarray(diff, dtype=np.float32),
        np.ascontiguousarray(depth_m, dtype=np.float32),
        -beta32,
        veil32 * scale,
        grey,
        srgb.CODE_AT_CELL,
        srgb.SCALED_BOUNDARY,
        out,
    )
    return out
