"""The sRGB transfer function (IEC 61966-2-1) and an exact, fast 8-bit codec.

All physics runs on linear RGB: decode 8-bit sRGB, attenuate, re-encode. The re-encode
``code = floor(255 * clip(encode(L), 0, 1) + 0.5)`` (round half up, never truncation) is the hot
path of every sweep, so :func:`encode_srgb8` computes it without a single ``pow``: the 255 code
boundaries are pre-computed in float64 linear light, and a 65,536-cell table narrows each value to
at most one boundary comparison. The result equals the float64 formula exactly for every float32
input (see ``tests/test_physics.py``).
"""

from __future__ import annotations

from typing import Final, TypeVar

import numpy as np
import numpy.typing as npt

_F = TypeVar("_F", bound=np.floating)

#: Number of table cells over [0, 1] in linear light. Code boundaries are at least
#: (1/255)/12.92 = 3.0e-4 apart, wider than a cell (1.5e-5), so a cell holds at most one.
CELLS: Final = 1 << 16


def srgb_to_linear(c: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Decode sRGB values in [0, 1] to linear light.

    ``L = c / 12.92`` if ``c <= 0.04045`` else ``((c + 0.055) / 1.055) ** 2.4``.
    """
    c = np.asarray(c, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(lin: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Encode linear light in [0, 1] to sRGB values.

    ``c = 12.92 L`` if ``L <= 0.0031308`` else ``1.055 L ** (1/2.4) - 0.055``;
    ``linear_to_srgb(0.18) = 0.4613561``.
    """
    lin = np.asarray(lin, dtype=np.float64)
    return np.where(
        lin <= 0.0031308, 12.92 * lin, 1.055 * np.power(np.maximum(lin, 0.0), 1 / 2.4) - 0.055
    )


def quantize8(c: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """Quantise sRGB values to 8 bits: ``floor(255 * clip(c, 0, 1) + 0.5)`` (round half up)."""
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)
    return np.floor(255.0 * c + 0.5).astype(np.uint8)


def _build_tables() -> tuple[
    npt.NDArray[np.float32], npt.NDArray[np.uint8], npt.NDArray[np.float32]
]:
    codes = np.arange(256, dtype=np.float64) / 255.0
    decode = srgb_to_linear(codes).astype(np.float32)
    # Smallest linear value whose code is >= k, for k = 1..255, rounded *up* to float32 so that
    # `x >= boundary32` is the same test as `x >= boundary64` for every float32 x.
    b64 = srgb_to_linear((np.arange(1, 256, dtype=np.float64) - 0.5) / 255.0)
    b32 = b64.astype(np.float32)
    b32 = np.where(b32.astype(np.float64) < b64, np.nextafter(b32, np.float32(np.inf)), b32)
    starts = np.arange(CELLS + 1, dtype=np.float64) / CELLS
    lo = np.searchsorted(b64, starts, side="right").astype(np.uint8)  # code at each cell start
    nxt = np.concatenate([b32, [np.float32(np.inf)]])[lo]  # the next boundary above that code
    ends = starts + 1.0 / CELLS
    threshold = np.where(nxt.astype(np.float64) < ends, nxt, np.float32(np.inf)).astype(np.float32)
    return decode, lo, threshold


DECODE_LUT, CODE_AT_CELL, BOUNDARY_IN_CELL = _build_tables()
#: The boundaries multiplied by CELLS (exact: a power of two), for callers that work scaled.
SCALED_BOUNDARY: Final = (BOUNDARY_IN_CELL * np.float32(CELLS)).astype(np.float32)


def decode_srgb8(image: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """Decode 8-bit sRGB to float32 linear light with a 256-entry table of the exact formula."""
    return DECODE_LUT[image]


def encode_srgb8(linear: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
    """Encode float32 linear light to 8-bit sRGB, equal to ``quantize8(linear_to_srgb(x))``.

    Values outside [0, 1] saturate, as the clip in :func:`quantize8` requires.
    """
    x = np.asarray(linear, dtype=np.float32)
    scaled = np.multiply(x, np.float32(CELLS))
    np.clip(scaled, 0.0, float(CELLS), out=scaled)
    cell = scaled.astype(np.intp)
    code = CODE_AT_CELL[cell]
    code += x >= BOUNDARY_IN_CELL[cell]
    return code
