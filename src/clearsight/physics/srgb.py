"""The sRGB transfer function (IEC 61966-2-1) and an exact, fast 8-bit codec.

All physics runs on linear RGB: decode 8-bit sRGB, attenuate, re-encode. The re-encode
``code = floor(255 * clip(encode(L), 0, 1) + 0.5)`` (round half up, never truncation) is the hot
path of every sweep, so :func:`encode_srgb8` computes it without a single ``pow``, from the bits
of the float32 value: the 255 code boundaries are pre-computed in float64 linear light and
rounded up to float32 (so ``x >= b32`` is the same test as ``x >= b64`` for every float32 x);
the top 16 bits of a non-negative float32 (sign, exponent, 7 mantissa bits) name a cell of
:data:`ENCODE_TABLE`, and the cells over [2**-14, 1] hold at most one boundary each (a cell is at
most 2**-7 of its value wide, narrower than the boundaries' spacing there). One 32-bit entry per
cell holds the code at the cell's start (above bit :data:`CODE_SHIFT`) and the low 16 bits of the
boundary inside it (2**16: none), so the code of x is that code plus one when x's low 16 bits
reach the boundary's (floats of one cell order as their low bits). Values below 2**-14 (code 0,
negatives included) and above 1 (code 255) fall in the first and last cells. The result equals
the float64 formula exactly for every float32 input (see ``tests/physics/test_physics.py``).
"""

from __future__ import annotations

from typing import Final, TypeVar

import numpy as np
import numpy.typing as npt

_F = TypeVar("_F", bound=np.floating)

#: Bits of a float32 below its table key (the key: sign, exponent and 7 mantissa bits).
KEY_SHIFT: Final = 16
#: Bit of an :data:`ENCODE_TABLE` entry where the code at its cell's start begins.
CODE_SHIFT: Final = 17
#: The entry's low bits: the low 16 bits of the cell's boundary, or 2**16 where it has none.
LOW_MASK: Final = (1 << CODE_SHIFT) - 1


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


def _key(x: npt.NDArray[np.float32]) -> npt.NDArray[np.int32]:
    """The table key of non-negative float32 values: their top 16 bits."""
    return x.view(np.int32) >> KEY_SHIFT


def _build_tables() -> tuple[npt.NDArray[np.float32], int, npt.NDArray[np.int32]]:
    codes = np.arange(256, dtype=np.float64) / 255.0
    decode = srgb_to_linear(codes).astype(np.float32)
    # Smallest linear value whose code is >= k, for k = 1..255, rounded *up* to float32 so that
    # `x >= boundary32` is the same test as `x >= boundary64` for every float32 x.
    b64 = srgb_to_linear((np.arange(1, 256, dtype=np.float64) - 0.5) / 255.0)
    b32 = b64.astype(np.float32)
    b32 = np.where(b32.astype(np.float64) < b64, np.nextafter(b32, np.float32(np.inf)), b32)
    first, last = _key(np.array([2.0**-14, 1.0], dtype=np.float32))
    keys = np.arange(first, last + 1, dtype=np.int32)
    starts = (keys << KEY_SHIFT).view(np.float32)
    code = np.searchsorted(b32, starts, side="right")  # boundaries at or below the cell start
    low = np.full(keys.size, 1 << KEY_SHIFT, dtype=np.int64)
    cells = _key(b32) - first
    if np.unique(cells).size != cells.size or (b32 < 2.0**-14).any():
        raise AssertionError("an sRGB code boundary shares a table cell")  # pragma: no cover
    low[cells] = b32.view(np.int32) & ((1 << KEY_SHIFT) - 1)
    return decode, int(first), ((code << CODE_SHIFT) | low).astype(np.int32)


DECODE_LUT, ENCODE_FIRST_KEY, ENCODE_TABLE = _build_tables()


def decode_srgb8(image: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """Decode 8-bit sRGB to float32 linear light with a 256-entry table of the exact formula."""
    return DECODE_LUT[image]


def encode_srgb8(linear: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
    """Encode float32 linear light to 8-bit sRGB, equal to ``quantize8(linear_to_srgb(x))``.

    Values outside [0, 1] saturate, as the clip in :func:`quantize8` requires.
    """
    bits = np.asarray(linear, dtype=np.float32).view(np.int32)
    cell = np.clip((bits >> KEY_SHIFT) - ENCODE_FIRST_KEY, 0, ENCODE_TABLE.size - 1)
    entry = ENCODE_TABLE[cell]
    code = (entry >> CODE_SHIFT) + ((bits & ((1 << KEY_SHIFT) - 1)) >= (entry & LOW_MASK))
    return code.astype(np.uint8)
