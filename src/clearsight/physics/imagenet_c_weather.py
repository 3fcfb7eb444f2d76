"""ImageNet-C's snow, frost and spatter (fog is :mod:`clearsight.physics.imagenet_c`),
bit-identical to the reference under the same random stream.

Frost overlays a crop of one of five photographs of frost on glass, shipped in
``physics/data/frost/`` (their provenance: ``physics/data/frost/README.md``).
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Final

import cv2
import numpy as np
import numpy.typing as npt
from scipy import ndimage

from clearsight.physics.imagenet_c_blur import clipped_zoom, motion_streak
from clearsight.physics.imagenet_c_noise import to_uint8

#: Snow's (mean, sd of the flake field, its zoom, threshold, streak radius px, streak sigma px,
#: share of the image kept), severities 1..5.
SNOW: Final = (
    (0.1, 0.3, 3, 0.5, 10, 4, 0.8),
    (0.2, 0.3, 2, 0.5, 12, 4, 0.7),
    (0.55, 0.3, 4, 0.9, 12, 8, 0.7),
    (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65),
    (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55),
)
#: Frost's (weight of the image, weight of the frost).
FROST: Final = ((1, 0.4), (0.8, 0.6), (0.7, 0.7), (0.65, 0.7), (0.6, 0.75))
#: The frost photographs drawn from (the reference lists a sixth that its draw never picks).
FROST_FILES: Final = ("frost1.png", "frost2.png", "frost3.png", "frost4.jpg", "frost5.jpg")
#: Spatter's (mean, sd of the liquid field, its blur sigma, threshold, strength, mud?).
SPATTER: Final = (
    (0.65, 0.3, 4, 0.69, 0.6, 0),
    (0.65, 0.3, 3, 0.68, 0.6, 0),
    (0.65, 0.3, 2, 0.68, 0.5, 0),
    (0.65, 0.3, 1, 0.65, 1.5, 1),
    (0.67, 0.4, 1, 0.65, 1.5, 1),
)


def snow(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """Flakes: a normal field zoomed, thresholded, streaked along an angle in [-135, -45)
    degrees, quantised to 8 bits and added twice (once turned 180 degrees) to the image
    brightened towards ``1.5 grey + 0.5``."""
    mean, sd, zoom, threshold, radius, sigma, keep = SNOW[severity - 1]
    x = np.asarray(image, dtype=np.float32) / 255.0
    height, width = image.shape[:2]
    flakes = clipped_zoom(rng.normal(mean, sd, (height, width))[..., None], zoom)
    flakes[flakes < threshold] = 0
    flakes = np.clip(flakes, 0, 1)
    streaked = motion_streak(flakes, radius, sigma, rng.uniform(-135, -45))
    layer = (np.round(streaked * 255).astype(np.uint8) / 255.0)[:height, :width]
    grey = cv2.cvtColor(x, cv2.COLOR_RGB2GRAY).reshape(height, width, 1)
    x = keep * x + (1 - keep) * np.maximum(x, grey * 1.5 + 0.5)
    return to_uint8(x + layer + np.rot90(layer, k=2))


@functools.cache
def frost_photo(index: int) -> npt.NDArray[np.uint8]:
    """Frost photograph ``index`` (0..4) as OpenCV decodes it (BGR), read-only."""
    path = resources.files("clearsight.physics") / "data" / "frost" / FROST_FILES[index]
    with resources.as_file(path) as file:
        photo = cv2.imread(str(file))
    if photo is None:
        raise FileNotFoundError(f"the frost photograph {FROST_FILES[index]} is not installed")
    out: npt.NDArray[np.uint8] = photo.astype(np.uint8, copy=False)
    out.setflags(write=False)
    return out


def _frost_scale(frost_hw: tuple[int, ...], image_hw: tuple[int, ...]) -> float:
    """How much the frost photo is enlarged: 1.1 times what makes it cover the image."""
    scale = 1.0
    if frost_hw[0] < image_hw[0] or frost_hw[1] < image_hw[1]:
        scale = max(image_hw[0] / frost_hw[0], image_hw[1] / frost_hw[1], 1.0)
    return scale * 1.1


def frost(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """``a image + b frost``: a photo drawn among five, enlarged (bicubic) to cover the image,
    a crop at a drawn offset."""
    weight_image, weight_frost = FROST[severity - 1]
    photo = frost_photo(rng.randint(5))
    scale = _frost_scale(photo.shape, image.shape)
    size = (int(np.ceil(photo.shape[1] * scale)), int(np.ceil(photo.shape[0] * scale)))
    resized = cv2.resize(photo, dsize=size, interpolation=cv2.INTER_CUBIC)
    top = rng.randint(0, resized.shape[0] - image.shape[0])
    left = rng.randint(0, resized.shape[1] - image.shape[1])
    crop = resized[top : top + image.shape[0], left : left + image.shape[1]][..., [2, 1, 0]]
    return np.clip(weight_image * image + weight_frost * crop, 0, 255).astype(np.uint8)


def _water_drops(liquid: npt.NDArray[np.float64], strength: float) -> npt.NDArray[np.float32]:
    """Spatter's water: the liquid layer's edges (Canny), their distance transform cut at 20,
    equalised and embossed, times the layer, normalised to ``strength`` at its maximum."""
    layer = (liquid * 255).astype(np.uint8)
    dist = cv2.distanceTransform(255 - cv2.Canny(layer, 50, 150), cv2.DIST_L2, 5)
    _, dist = cv2.threshold(dist, 20, 20, cv2.THRESH_TRUNC)
    dist = cv2.equalizeHist(cv2.blur(dist, (3, 3)).astype(np.uint8))
    emboss = np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]])
    dist = cv2.blur(cv2.filter2D(dist, cv2.CV_8U, emboss), (3, 3)).astype(np.float32)
    drops = layer * dist
    drops /= np.max(drops)
    drops *= strength
    return drops


def spatter(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """Water drops (pale turquoise, severities 1-3) or mud (brown, 4-5): a normal field blurred
    and thresholded into a liquid layer, then added (water) or blended over the image (mud)."""
    mean, sd, sigma, threshold, strength, mud = SPATTER[severity - 1]
    x = np.asarray(image, dtype=np.float32) / 255.0
    liquid = rng.normal(mean, sd, image.shape[:2])
    liquid = ndimage.gaussian_filter(liquid, sigma, mode="nearest", truncate=4.0)
    liquid[liquid < threshold] = 0
    if not mud:
        drops = _water_drops(liquid, strength)[..., None]
        turquoise = np.array([175 / 255.0, 238 / 255.0, 238 / 255.0], np.float32)
        return to_uint8(x + drops * turquoise)
    cover = ndimage.gaussian_filter(
        np.where(liquid > threshold, 1, 0).astype(np.float32),
        strength,
        mode="nearest",
        truncate=4.0,
    )
    cover[cover < 0.8] = 0
    brown = np.array([63 / 255.0, 42 / 255.0, 20 / 255.0]) * cover[..., None].astype(np.float64)
    x *= 1 - cover[..., None]
    return to_uint8(x + brown)
