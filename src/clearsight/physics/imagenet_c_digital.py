"""ImageNet-C's digital and colour corruptions (contrast, brightness, saturation, JPEG,
pixelation, elastic transform), bit-identical to the reference.

Brightness and saturation go through HSV as scikit-image converts it, pixel by pixel in a
compiled loop (the reference builds a dozen full-size temporaries); the elastic transform
samples each channel with scipy's ``map_coordinates`` over two coordinates instead of three
(the channel coordinate is an integer: weight 1 on its own channel, 0 on the next).
"""

from __future__ import annotations

import io
from typing import Final

import numpy as np
import numpy.typing as npt
from PIL import Image
from scipy import ndimage

from clearsight.physics.imagenet_c_noise import to_uint8

#: Contrast's factor on the deviations from each channel's mean, severities 1..5.
CONTRAST: Final = (0.4, 0.3, 0.2, 0.1, 0.05)
#: Brightness's addition to the HSV value.
BRIGHTNESS: Final = (0.1, 0.2, 0.3, 0.4, 0.5)
#: Saturation's (factor, offset) on the HSV saturation.
SATURATE: Final = ((0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (20, 0.2))
#: JPEG quality.
JPEG_QUALITY: Final = (25, 18, 15, 10, 7)
#: Pixelation's downscale factor (box filter down, nearest neighbour back up).
PIXELATE: Final = (0.6, 0.5, 0.4, 0.3, 0.25)
#: Elastic transform's alpha: the displacement field's gain.
ELASTIC_ALPHA: Final = (250 * 0.05, 250 * 0.065, 250 * 0.085, 250 * 0.1, 250 * 0.12)


def contrast(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """``(x - mean) c + mean`` with each channel's mean over the image."""
    x = image / 255.0
    means = np.mean(x, axis=(0, 1), keepdims=True)
    x -= means
    x *= CONTRAST[severity - 1]
    x += means
    return to_uint8(x)


def brightness(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """HSV value ``v + c`` (clipped to 1)."""
    from clearsight.physics import imagenet_c_loops

    return imagenet_c_loops.hsv_adjust(image, 2, 1.0, BRIGHTNESS[severity - 1])


def saturate(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """HSV saturation ``s a + b`` (clipped to [0, 1])."""
    from clearsight.physics import imagenet_c_loops

    scale, offset = SATURATE[severity - 1]
    return imagenet_c_loops.hsv_adjust(image, 1, float(scale), float(offset))


def jpeg_compression(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """Pillow's JPEG encoding at quality 25..7, decoded again."""
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, "JPEG", quality=JPEG_QUALITY[severity - 1])
    return np.array(Image.open(buffer), dtype=np.uint8)


def pixelate(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """Pillow's box-filter downscale by 0.6..0.25, nearest-neighbour upscale back."""
    factor = PIXELATE[severity - 1]
    height, width = image.shape[:2]
    small = Image.fromarray(image).resize(
        (int(width * factor), int(height * factor)), Image.Resampling.BOX
    )
    return np.array(small.resize((width, height), Image.Resampling.NEAREST), dtype=np.uint8)


def elastic_transform(
    image: npt.NDArray[np.uint8], severity: int, rng: np.random.RandomState
) -> npt.NDArray[np.uint8]:
    """Each pixel sampled (bilinear, edges reflected) at its position plus a displacement field:
    uniform noise of half-width ``0.005 H`` px per axis, blurred with sigma ``0.01 (H, W)``
    (cut at 3 sigma, reflected), times alpha; the x field drawn first."""
    x = np.asarray(image, dtype=np.float32) / 255.0
    height, width = image.shape[:2]
    sigma = np.array((height, width)) * 0.01
    alpha = ELASTIC_ALPHA[severity - 1]
    half = height * 0.005
    fields = []
    for _ in range(2):
        noise = rng.uniform(-half, half, size=(height, width))
        blurred = ndimage.gaussian_filter(noise, sigma, mode="reflect", truncate=3)
        fields.append((blurred * alpha).astype(np.float32))
    dx, dy = fields
    rows = np.arange(height)[:, None] + dy
    cols = np.arange(width)[None, :] + dx
    coordinates = np.stack([rows, cols])
    out = np.empty(x.shape, np.float32)
    for c in range(3):
        out[:, :, c] = ndimage.map_coordinates(x[:, :, c], coordinates, order=1, mode="reflect")
    return to_uint8(out)
