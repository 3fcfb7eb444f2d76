"""The row-at-a-time physics kernel with the bit-keyed encode table against the per-pixel kernel
with the 65,536-cell tables it replaced: the same images, bit for bit.

Exact equality is the claim here, not a tolerance: the new loop performs, for every value, the
very float operations of the old one in the same order (float64 ``exp`` of ``-beta z`` or the same
squarings, one rounding to float32, ``A + d t`` and the scaling in float32 without fused
multiply-adds, and an exact encode: both tables give the float64 formula's code for every
float32, see srgb.py); only the loop order, the buffers and the table layout changed. The
old kernel is kept here, compiled once per session, as the reference.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt
import pytest

from clearsight.physics import SWEEP_LEVELS_M, fog_levels, srgb, turbid_levels, underwater_levels
from clearsight.physics.kernel import _squarings


@numba.njit(parallel=True, nogil=True)
def per_pixel_kernel(
    image, depth, neg_beta, squarings, veil, decode, scale, code_at_cell, boundary, out
):  # type: ignore[no-untyped-def]
    """The kernel before this change (``loops.attenuate_encode`` up to the row rewrite)."""
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
                for c, v in enumerate(
                    (a0 + d0 * np.float32(t0), a1 + d1 * np.float32(t1), a2 + d2 * np.float32(t2))
                ):
                    s = min(max(v * scale, np.float32(0.0)), scale)
                    cell = int(s)
                    out[lvl, y, x, c] = code_at_cell[cell] + np.uint8(s >= boundary[cell])


def old_tables() -> tuple[np.float32, npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """The old kernel's encode tables (``srgb._build_tables`` before the bit-keyed table): per
    cell of 65,536 over [0, 1], the code at its start and the boundary inside it, scaled."""
    cells = 1 << 16
    b64 = srgb.srgb_to_linear((np.arange(1, 256, dtype=np.float64) - 0.5) / 255.0)
    b32 = b64.astype(np.float32)
    b32 = np.where(b32.astype(np.float64) < b64, np.nextafter(b32, np.float32(np.inf)), b32)
    starts = np.arange(cells + 1, dtype=np.float64) / cells
    lo = np.searchsorted(b64, starts, side="right").astype(np.uint8)
    nxt = np.concatenate([b32, [np.float32(np.inf)]])[lo]
    threshold = np.where(nxt.astype(np.float64) < starts + 1.0 / cells, nxt, np.float32(np.inf))
    return np.float32(cells), lo, (threshold.astype(np.float32) * np.float32(cells))


OLD_TABLES = old_tables()


def old_path(
    image: npt.NDArray[np.uint8],
    depth: npt.NDArray[np.floating],
    beta: npt.NDArray[np.float64],
    veil: npt.NDArray[np.float64],
) -> npt.NDArray[np.uint8]:
    """The old kernel's images, the depth clipped in float64 as ``medium.clip_depth`` did."""
    out = np.empty((beta.shape[0], *image.shape), np.uint8)
    per_pixel_kernel(
        image,
        np.clip(np.asarray(depth, dtype=np.float64), 0.5, 80.0).astype(np.float32),
        -beta,
        _squarings(beta),
        veil.astype(np.float32),
        srgb.DECODE_LUT,
        *OLD_TABLES,
        out,
    )
    return out


def random_scene(seed: int) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.floating]]:
    """Random pixels (every code, odd sizes) and depths spanning the clip range and beyond,
    float32 or (odd seeds) float64."""
    rng = np.random.default_rng(seed)
    height, width = rng.integers(1, 70, 2)
    image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    depth = rng.uniform(0.1, 100.0, (height, width))
    return image, depth if seed % 2 else depth.astype(np.float32)


@pytest.mark.parametrize("seed", range(6))
def test_fog_levels_equal_the_per_pixel_kernel(seed: int) -> None:
    image, depth = random_scene(seed)
    levels = np.array(SWEEP_LEVELS_M)
    beta = np.repeat((3.912 / levels)[:, None], 3, axis=1)
    new = fog_levels(image, depth)
    np.testing.assert_array_equal(new, old_path(image, depth, beta, np.full(3, 0.8)))
    # irregular levels: every level calls exp afresh (no squaring shortcut)
    odd = (100.0, 3.0, 41.0)
    beta = np.repeat((3.912 / np.array(odd))[:, None], 3, axis=1)
    got = fog_levels(image, depth, odd, airlight=0.6)
    np.testing.assert_array_equal(got, old_path(image, depth, beta, np.full(3, 0.6)))


@pytest.mark.parametrize("seed", range(3))
def test_per_channel_arms_equal_the_per_pixel_kernel(seed: int) -> None:
    from clearsight.physics import turbid_coefficients, water_coefficients

    image, depth = random_scene(10 + seed)
    water = ((0.45, 0.12, 0.10), (0.35, 0.40, 0.45))
    beta = np.stack([turbid_coefficients(v, *water)[0] for v in SWEEP_LEVELS_M])
    veil = turbid_coefficients(SWEEP_LEVELS_M[0], *water)[1]
    got = turbid_levels(image, depth, *water)
    np.testing.assert_array_equal(got, old_path(image, depth, beta, veil))
    beta = np.stack([water_coefficients(v)[0] for v in SWEEP_LEVELS_M])
    veil = water_coefficients(SWEEP_LEVELS_M[0])[1]
    got = underwater_levels(image, depth)
    np.testing.assert_array_equal(got, old_path(image, depth, beta, veil))


def test_encode_table_is_the_formula_for_every_float32() -> None:
    """Every float32 in [0, 1], exhaustively: in full in each table cell holding a code boundary
    (255 cells of 65,536 floats), by the first and last float elsewhere (the formula is
    monotone and such a cell answers one code throughout)."""
    first, last = (np.array([2.0**-14, 1.0], np.float32).view(np.int32) >> srgb.KEY_SHIFT).tolist()
    width = 1 << srgb.KEY_SHIFT
    has_boundary = width > (srgb.ENCODE_TABLE & srgb.LOW_MASK)
    assert has_boundary.sum() == 255
    starts = np.arange(first, last + 1, dtype=np.int64) << srgb.KEY_SHIFT
    ends = np.minimum(starts + width - 1, int(np.float32(1.0).view(np.int32)))
    edges = np.concatenate([[0], starts, ends]).astype(np.int32).view(np.float32)
    want = srgb.quantize8(srgb.linear_to_srgb(edges.astype(np.float64)))
    np.testing.assert_array_equal(srgb.encode_srgb8(edges), want)
    full = starts[has_boundary]
    for chunk in np.array_split(full, 8):
        x = (chunk[:, None] + np.arange(width)).astype(np.int32).view(np.float32).ravel()
        want = srgb.quantize8(srgb.linear_to_srgb(x.astype(np.float64)))
        np.testing.assert_array_equal(srgb.encode_srgb8(x), want)
    special = np.array([-0.0, -1.0, 1e-40, 1.5, np.inf, -np.inf], np.float32)
    assert srgb.encode_srgb8(special).tolist() == [0, 0, 0, 255, 255, 0]
