"""The compiled loops behind the slow ImageNet-C corruptions (glass, zoom and motion blur, snow,
brightness and saturation), each doing the reference's float operations in its order.

Imported on first use (numba takes a while to import); at module level so that numba's on-disk
cache finds them again in a new process (see :mod:`clearsight.physics.loops`). Numba does not
fuse a multiply and an add unless asked (no ``fastmath``), so a sum taken here in the
reference's order has the reference's bits.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt


@numba.njit(cache=True, nogil=True)
def glass_shuffle(  # pragma: no cover - compiled; checked against the reference
    x: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64], delta: int, iterations: int
) -> None:
    """The glass blur's local shuffle, in place: for each pixel from the bottom right inwards,
    ``iterations`` times, ``x[h, w] = x[h + dy, w + dx]`` with ``(dx, dy)`` the next row of
    ``offsets``. The reference means a swap but its tuple assignment of numpy views copies one
    way only; what counts is what it computes, so this copies one way too."""
    height, width, channels = x.shape
    k = 0
    for _ in range(iterations):
        for h in range(height - delta, delta, -1):
            for w in range(width - delta, delta, -1):
                hp = h + offsets[k, 1]
                wp = w + offsets[k, 0]
                k += 1
                for c in range(channels):
                    x[h, w, c] = x[hp, wp, c]


@numba.njit(cache=True, nogil=True)
def _add_shifted_row(  # pragma: no cover - compiled
    acc: npt.NDArray[np.float64], src: npt.NDArray[np.float64], weight: float, dx: int
) -> None:
    """``acc[c] += weight * src[clip(c - dx)]`` along a row of (W, C) pixels."""
    width, channels = src.shape
    for c in range(width):
        s = min(max(c - dx, 0), width - 1)
        for ch in range(channels):
            acc[c, ch] = acc[c, ch] + weight * src[s, ch]


@numba.njit(cache=True, nogil=True)
def motion_sum(  # pragma: no cover - compiled; checked against the reference
    x: npt.NDArray[np.float64],
    dys: npt.NDArray[np.int64],
    dxs: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    out: npt.NDArray[np.float64],
) -> None:
    """``out = sum_i weights[i] * x`` shifted by ``(dys[i], dxs[i])`` with the edge pixels
    repeated, summed in ``i`` order from 0.0: the reference's motion blur, a row at a time."""
    height = x.shape[0]
    for r in range(height):
        acc = out[r]
        acc[:] = 0.0
        for i in range(weights.shape[0]):
            src = x[min(max(r - dys[i], 0), height - 1)]
            _add_shifted_row(acc, src, weights[i], dxs[i])


@numba.njit(cache=True, nogil=True)
def bilinear(  # pragma: no cover - compiled; checked against scipy.ndimage.zoom
    src: npt.NDArray[np.floating],
    rows: npt.NDArray[np.int64],
    row_w: npt.NDArray[np.float64],
    cols: npt.NDArray[np.int64],
    col_w: npt.NDArray[np.float64],
    out: npt.NDArray[np.floating],
) -> None:
    """Order-1 spline zoom of ``src`` (h, w, C) into ``out`` (H, W, C) from per-axis tables:
    ``rows[k]`` the two taps of output row k (-1: outside, the output is 0), ``row_w[k]`` their
    weights (the same for columns); ``t = sum (v * w_row) * w_col`` over the four taps in
    row-major order, as scipy's ``zoom(order=1)`` sums them."""
    height, width, channels = out.shape
    for r in range(height):
        r0 = rows[r, 0]
        r1 = rows[r, 1]
        wr0 = row_w[r, 0]
        wr1 = row_w[r, 1]
        for c in range(width):
            c0 = cols[c, 0]
            c1 = cols[c, 1]
            if r0 < 0 or c0 < 0:
                for ch in range(channels):
                    out[r, c, ch] = 0.0
                continue
            wc0 = col_w[c, 0]
            wc1 = col_w[c, 1]
            for ch in range(channels):
                t = 0.0
                t += np.float64(src[r0, c0, ch]) * wr0 * wc0
                t += np.float64(src[r0, c1, ch]) * wr0 * wc1
                t += np.float64(src[r1, c0, ch]) * wr1 * wc0
                t += np.float64(src[r1, c1, ch]) * wr1 * wc1
                out[r, c, ch] = t


@numba.njit(cache=True, nogil=True)
def _rgb_to_hsv(r: float, g: float, b: float) -> tuple[float, float, float]:  # pragma: no cover
    """scikit-image's ``rgb2hsv`` of one pixel, its operations in its order (blue wins a tie
    for the maximum over green, green over red; grey has hue and saturation 0)."""
    v = max(r, g, b)
    delta = v - min(r, g, b)
    if delta == 0.0:
        return 0.0, 0.0, v
    if b == v:
        h = 4.0 + (r - g) / delta
    elif g == v:
        h = 2.0 + (b - r) / delta
    else:
        h = (g - b) / delta
    return (h / 6.0) % 1.0, delta / v, v


@numba.njit(cache=True, nogil=True)
def _hsv_to_rgb(h: float, s: float, v: float) -> tuple[float, float, float]:  # pragma: no cover
    """scikit-image's ``hsv2rgb`` of one pixel."""
    hi = np.floor(h * 6)
    f = h * 6 - hi
    p = v * (1 - s)
    q = v * (1 - f * s)
    t = v * (1 - (1 - f) * s)
    sector = np.uint8(hi) % 6
    if sector == 0:
        return v, t, p
    if sector == 1:
        return q, v, p
    if sector == 2:
        return p, v, t
    if sector == 3:
        return p, q, v
    if sector == 4:
        return t, p, v
    return v, p, q


@numba.njit(cache=True, nogil=True)
def hsv_adjust(  # pragma: no cover - compiled; checked against the reference
    image: npt.NDArray[np.uint8], channel: int, scale: float, offset: float
) -> npt.NDArray[np.uint8]:
    """``x = image / 255``, to HSV, ``channel`` (1: saturation, 2: value) set to
    ``clip(c * scale + offset, 0, 1)``, back to RGB, ``clip(0, 1) * 255`` truncated to uint8."""
    height, width, _ = image.shape
    out = np.empty_like(image)
    for i in range(height):
        for j in range(width):
            hsv = _rgb_to_hsv(
                image[i, j, 0] / 255.0, image[i, j, 1] / 255.0, image[i, j, 2] / 255.0
            )
            h, s, v = hsv
            if channel == 1:
                s = min(max(s * scale + offset, 0.0), 1.0)
            else:
                v = min(max(v * scale + offset, 0.0), 1.0)
            rgb = _hsv_to_rgb(h, s, v)
            for c in range(3):
                out[i, j, c] = np.uint8(min(max(rgb[c], 0.0), 1.0) * 255.0)
    return out
