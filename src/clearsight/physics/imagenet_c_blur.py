"""ImageNet-C's blurs (defocus, glass, motion, zoom, Gaussian) and the two resamplings that snow
shares with them (the clipped zoom and the motion streak), bit-identical to the reference.

The slow parts of the reference run as compiled loops here
(:mod:`clearsight.physics.imagenet_c_loops`): glass blur's per-pixel shuffle (a Python loop of
``H W`` iterations there), the motion streak's shifted sum, and zoom blur's order-1 spline zoom,
which scipy evaluates with all eight taps of an RGB image's three axes although the channel
axis contributes weight 1 and 0; the loops take the four that count, in scipy's order.
"""

from __future__ import annotations

import math
from typing import Final

import cv2
import numpy as np
import numpy.typing as npt
from scipy import ndimage

from clearsight.physics.imagenet_c_noise import to_uint8

#: Gaussian blur's sigma (px), severities 1..5.
GAUSSIAN_SIGMA: Final = (1, 2, 3, 4, 6)
#: Glass blur's (sigma px, largest shift px, iterations).
GLASS: Final = ((0.7, 1, 2), (0.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2))
#: Defocus blur's (disk radius px, anti-alias sigma px).
DEFOCUS: Final = ((3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5))
#: Motion blur's (streak radius px, sigma px).
MOTION: Final = ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15))
#: Zoom blur's (start, stop, step) of ``np.arange``: the zoom factors averaged.
ZOOM: Final = ((1, 1.11, 0.01), (1, 1.16, 0.01), (1, 1.21, 0.02), (1, 1.26, 0.02), (1, 1.31, 0.03))


def blur_rgb(x: npt.NDArray[np.float64], sigma: float) -> npt.NDArray[np.float64]:
    """scikit-image's ``gaussian(x, sigma, channel_axis=-1)``: each channel on its own, edges
    repeated, the kernel cut at 4 sigma."""
    return ndimage.gaussian_filter(x, (sigma, sigma, 0), mode="nearest", truncate=4.0)


def gaussian_blur(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """A Gaussian of sigma 1..6 px (no draw)."""
    return to_uint8(blur_rgb(image / 255.0, GAUSSIAN_SIGMA[severity - 1]))


def glass_blur(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """Blur, truncate to uint8, copy each interior pixel from a neighbour up to ``d`` px away
    (``randint(-d, d)`` per axis, drawn in one call: the same stream as the reference's one
    call per pixel), and blur again."""
    from clearsight.physics import imagenet_c_loops

    sigma, delta, iterations = GLASS[severity - 1]
    x = (blur_rgb(image / 255.0, sigma) * 255).astype(np.uint8)
    height, width = image.shape[:2]
    count = iterations * max(height - 2 * delta, 0) * max(width - 2 * delta, 0)
    offsets = rng.randint(-delta, delta, size=(count, 2)).astype(np.int64)
    imagenet_c_loops.glass_shuffle(x, offsets, delta, iterations)
    return to_uint8(blur_rgb(x / 255.0, sigma))


def _disk(radius: int, alias_blur: float) -> npt.NDArray[np.float32]:
    """The defocus kernel: a disk of ``radius`` px on a grid of at least 17 px, normalised, then
    anti-aliased with a small Gaussian (3x3, or 5x5 past radius 8)."""
    half, ksize = (8, (3, 3)) if radius <= 8 else (radius, (5, 5))
    grid = np.arange(-half, half + 1)
    xs, ys = np.meshgrid(grid, grid)
    disk = np.array((xs**2 + ys**2) <= radius**2, dtype=np.float32)
    disk /= np.sum(disk)
    return cv2.GaussianBlur(disk, ksize=ksize, sigmaX=alias_blur).astype(np.float32, copy=False)


def defocus_blur(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """Each channel correlated with an anti-aliased disk (OpenCV, edges reflected); one call
    on the three channels, which OpenCV filters one by one as the reference's three calls do."""
    kernel = _disk(*DEFOCUS[severity - 1])
    blurred = cv2.filter2D(image / 255.0, -1, kernel)  # float64 in, float64 out
    return to_uint8(blurred.astype(np.float64, copy=False))


def motion_streak(
    x: npt.NDArray[np.float64], radius: int, sigma: float, angle: float
) -> npt.NDArray[np.float64]:
    """The sum of ``x`` shifted i = 0..2r px along ``angle`` (degrees; each shift rounded to
    whole pixels, edge pixels repeated) with weights ``exp(-i^2 / 2 sigma^2)`` normalised; the
    streak stops at the first shift as large as the image. ``x`` is (H, W, C)."""
    from clearsight.physics import imagenet_c_loops

    width = radius * 2 + 1
    taps = np.arange(width)
    kernel = np.exp(-(taps**2) / (2 * (sigma**2))) / (np.sqrt(2 * np.pi) * sigma)
    kernel = kernel / np.sum(kernel)
    rad = np.deg2rad(angle)
    point = (width * np.sin(rad), width * np.cos(rad))
    hypot = math.hypot(point[0], point[1])
    dys: list[int] = []
    dxs: list[int] = []
    for i in range(width):
        dy = -math.ceil(((i * point[0]) / hypot) - 0.5)
        dx = -math.ceil(((i * point[1]) / hypot) - 0.5)
        if abs(dy) >= x.shape[0] or abs(dx) >= x.shape[1]:
            break
        dys.append(dy)
        dxs.append(dx)
    out = np.empty(x.shape, np.float64)
    n = len(dys)
    imagenet_c_loops.motion_sum(
        x, np.array(dys, np.int64), np.array(dxs, np.int64), kernel[:n].copy(), out
    )
    return out


def motion_blur(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """A streak along an angle drawn uniformly in [-45, 45) degrees."""
    radius, sigma = MOTION[severity - 1]
    angle = rng.uniform(-45, 45)
    blurred = motion_streak(image.astype(np.float64), radius, sigma, angle)
    return np.clip(blurred, 0, 255).astype(np.uint8)


def _zoom_axis(
    n_in: int, n_out: int, n_keep: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The first ``n_keep`` of ``n_out`` output positions of scipy's order-1 zoom along an axis
    of ``n_in`` (``mode='constant'``): their two taps (the second mirrored at the far edge; -1:
    past the edge, the value is 0) and weights ``(1 - f, 1 - (1 - f))``."""
    ratio = (n_in - 1) / (n_out - 1) if n_out > 1 else 1.0
    cc = np.arange(n_keep, dtype=np.float64) * ratio
    start = np.floor(cc)
    w0 = 1.0 - (cc - start)
    weights = np.stack([w0, 1.0 - w0], axis=1)
    first = start.astype(np.int64)
    second = first + 1
    if n_in <= 1:
        second[:] = 0
    else:
        period = 2 * n_in - 2
        second -= period * (second // period)
        second = np.where(second >= n_in, period - second, second)
    taps = np.stack([first, second], axis=1)
    taps[cc > n_in - 1] = -1
    return taps, weights


def clipped_zoom(
    x: npt.NDArray[np.floating], factor: float, keep: tuple[int, int] | None = None
) -> npt.NDArray[np.floating]:
    """The centre ``ceil(n / factor)`` of each spatial axis of ``x`` (H, W, C) zoomed by
    ``factor`` (order-1 spline, as ``scipy.ndimage.zoom(.., (f, f, 1), order=1)``), the first
    ``keep`` rows and columns of it (all of them: None), in ``x``'s dtype."""
    from clearsight.physics import imagenet_c_loops

    crop_h = int(np.ceil(x.shape[0] / float(factor)))
    crop_w = int(np.ceil(x.shape[1] / float(factor)))
    top = (x.shape[0] - crop_h) // 2
    left = (x.shape[1] - crop_w) // 2
    crop = np.ascontiguousarray(x[top : top + crop_h, left : left + crop_w])
    # scipy's own expression for the output shape (round() of a NumPy float may stay a float)
    out_h, out_w = int(round(crop_h * factor)), int(round(crop_w * factor))  # noqa: RUF046
    keep_h, keep_w = (out_h, out_w) if keep is None else (min(keep[0], out_h), min(keep[1], out_w))
    rows, row_w = _zoom_axis(crop_h, out_h, keep_h)
    cols, col_w = _zoom_axis(crop_w, out_w, keep_w)
    out = np.empty((keep_h, keep_w, x.shape[2]), x.dtype)
    imagenet_c_loops.bilinear(crop, rows, row_w, cols, col_w, out)
    return out


def zoom_blur(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """The mean of the image and its centre zoomed by each factor of the severity (float32)."""
    factors = np.arange(*ZOOM[severity - 1])
    x = (image / 255.0).astype(np.float32)
    out = np.zeros_like(x)
    keep = image.shape[:2]
    for factor in factors:
        out += clipped_zoom(x, factor, keep)
    return to_uint8((x + out) / (len(factors) + 1))
