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

from clearsight.physics.srgb import CODE_SHIFT, KEY_SHIFT, LOW_MASK


@numba.njit(parallel=True, cache=True, nogil=True)
def attenuate_encode(  # pragma: no cover - compiled; checked against the textbook formula
    image: npt.NDArray[np.uint8],
    depth: npt.NDArray[np.float32],
    neg_beta: npt.NDArray[np.float64],
    squarings: npt.NDArray[np.int64],
    grey: bool,
    veil: npt.NDArray[np.float32],
    decode: npt.NDArray[np.float32],
    first_key: int,
    table: npt.NDArray[np.int32],
    out: npt.NDArray[np.uint8],
) -> None:
    """``out[l] = encode(A + (decode(J) - A) t_l)`` for every level ``l``, a row at a time.

    ``image`` is (H, 3W) (the channels interleaved along the row), ``out`` (L, H, 3W), the
    other arguments as :func:`clearsight.physics.kernel.attenuate_encode` prepares them;
    ``grey``: every level has one coefficient for R, G and B, so one ``exp`` serves a pixel.
    The encode is :func:`clearsight.physics.srgb.encode_srgb8`'s, on the values' bits. Each
    row keeps its decoded values and transmissions in small buffers and runs, per level, short
    loops over them that the compiler vectorises (squaring, attenuation, table keys, codes);
    only the table look-up itself stays scalar.
    """
    levels = neg_beta.shape[0]
    height, n = image.shape
    m = n // 3 if grey else n  # transmissions per row: one a pixel, or one a value
    last = table.shape[0] - 1
    low_bits = (1 << KEY_SHIFT) - 1
    for y in numba.prange(height):
        a = np.empty(n, np.float32)
        d = np.empty(n, np.float32)
        t = np.empty(m, np.float64)
        t32 = np.empty(n, np.float32)
        v = np.empty(n, np.float32)
        bits = v.view(np.int32)
        cell = np.empty(n, np.int32)
        entry = np.empty(n, np.int32)
        for i in range(n):
            a[i] = veil[i % 3]
            d[i] = decode[image[y, i]] - a[i]
        for lvl in range(levels):
            _transmissions(t, t32, neg_beta[lvl], squarings[lvl], depth[y], grey)
            for i in range(n):
                v[i] = a[i] + d[i] * t32[i]
            _encode_row(bits, first_key, last, low_bits, table, cell, entry, out[lvl, y])


@numba.njit(cache=True, nogil=True, inline="always")
def _encode_row(  # pragma: no cover - compiled; part of attenuate_encode
    bits: npt.NDArray[np.int32],
    first_key: int,
    last: int,
    low_bits: int,
    table: npt.NDArray[np.int32],
    cell: npt.NDArray[np.int32],
    entry: npt.NDArray[np.int32],
    row: npt.NDArray[np.uint8],
) -> None:
    """One row's sRGB codes into ``row`` from its linear values' float32 ``bits``
    (:func:`clearsight.physics.srgb.encode_srgb8`'s table encode): each value's table cell
    from its key bits (clipped to the table's ``last`` cell), the cell's entry, and the code,
    bumped by one where the value's ``low_bits`` reach the entry's threshold. Three short loops,
    so the first and last vectorise; ``cell`` and ``entry`` are the row's scratch buffers."""
    n = bits.shape[0]
    for i in range(n):
        cell[i] = min(max((bits[i] >> KEY_SHIFT) - first_key, 0), last)
    for i in range(n):
        entry[i] = table[cell[i]]
    for i in range(n):
        bump = (bits[i] & low_bits) >= (entry[i] & LOW_MASK)
        row[i] = np.uint8((entry[i] >> CODE_SHIFT) + bump)


@numba.njit(cache=True, nogil=True, inline="always")
def _transmissions(  # pragma: no cover - compiled; part of attenuate_encode
    t: npt.NDArray[np.float64],
    t32: npt.NDArray[np.float32],
    neg_beta: npt.NDArray[np.float64],
    k: int,
    depth: npt.NDArray[np.float32],
    grey: bool,
) -> None:
    """One row's transmissions at one level into ``t32`` (one a value): ``exp(-beta d)`` when
    ``k < 0``, else the previous level's ``t`` (kept in ``t``) squared ``k`` times."""
    m = t.shape[0]
    if k < 0:
        for j in range(m):  # j: the pixel (grey), else the value
            x, c = (j, 0) if grey else (j // 3, j % 3)
            t[j] = np.exp(neg_beta[c] * np.float64(depth[x]))
    for _ in range(max(k, 0)):
        for j in range(m):
            t[j] *= t[j]
    if grey:
        for x in range(m):
            t32[3 * x] = t32[3 * x + 1] = t32[3 * x + 2] = np.float32(t[x])
    else:
        for i in range(m):
            t32[i] = np.float32(t[i])


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
