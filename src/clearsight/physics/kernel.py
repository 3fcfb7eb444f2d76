"""The one compiled loop of the physics: decode, attenuate, add veiling light and encode, fused.

Every degradation in clearsight is ``I_c = A_c + (J_c - A_c) t_c`` with ``t_c = exp(-beta_c z)``
per pixel and channel in linear light, followed by the exact 8-bit sRGB encode of :mod:`.srgb`.
Written as numpy array expressions that is about ten full passes over an (levels x H x W x 3)
array; fused into one parallel pass over the rows it runs within a small factor of a plain
memory copy of the same floats (``benchmarks/physics.py``). Each row is worked in short buffers
that stay in the L1 cache, a level at a time, in loops the compiler vectorises; the one scalar
step is the encode table's look-up (1,793 entries, also in L1: :mod:`.srgb`). Going pixel by
pixel through all levels instead, as this loop did first, vectorised nothing and ran 1.8 times
slower on one thread. Fog (one coefficient for R, G and B) takes one ``exp`` per pixel.

Transmission is computed in float64 and rounded to float32 once. The sweep's levels halve V from
one level to the next, so ``beta`` doubles and ``t`` squares: when a level's coefficients are
exactly ``2**k`` times the previous level's, the kernel squares the previous transmission k times
instead of calling ``exp`` again (relative error ~``2**k`` float64 ulps, far below float32
resolution); any other level gets a fresh ``exp``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from clearsight.physics import srgb


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
    from clearsight.physics import loops

    beta64 = np.ascontiguousarray(beta, dtype=np.float64)
    height, width = depth_m.shape
    out = np.empty((beta64.shape[0], height, width, 3), dtype=np.uint8)
    loops.attenuate_encode(
        np.ascontiguousarray(image).reshape(height, 3 * width),
        np.ascontiguousarray(depth_m, dtype=np.float32),
        -beta64,
        _squarings(beta64),
        bool(np.all(beta64 == beta64[:, :1])),
        np.asarray(veil, dtype=np.float32),
        srgb.DECODE_LUT,
        srgb.ENCODE_FIRST_KEY,
        srgb.ENCODE_TABLE,
        out.reshape(beta64.shape[0], height, 3 * width),
    )
    return out


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
    from clearsight.physics import loops

    out = np.empty(neg_z.shape, dtype=np.float32)
    loops.fog_luma(diff, neg_z, np.float32(beta), np.float32(veil), weights, out)
    return out
