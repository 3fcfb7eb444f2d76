"""Input checks shared by physics, scenes and tasks.

Every public entry point that takes pixels, depth or a visibility checks them here, so a user
gets an error naming the problem (dtype, shape, NaN, sign) instead of a broadcasting failure
deep inside numpy.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt


class InputError(ValueError):
    """Bad input given to clearsight: the message names the problem and the offending value."""


def check_image(image: object, name: str = "image") -> npt.NDArray[np.uint8]:
    """Return ``image`` if it is a uint8 array of shape HxWx3 (RGB), else raise InputError."""
    if not isinstance(image, np.ndarray):
        raise InputError(f"{name} must be a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise InputError(f"{name} must have dtype uint8 (8-bit sRGB), got {image.dtype}")
    if image.ndim != 3 or image.shape[2] != 3:
        raise InputError(f"{name} must have shape HxWx3 (RGB), got {image.shape}")
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise InputError(f"{name} is empty: shape {image.shape}")
    return image


def check_depth(depth_m: object, shape: tuple[int, ...]) -> npt.NDArray[np.floating]:
    """Return ``depth_m`` if it is a finite, non-negative float HxW map matching ``shape[:2]``."""
    if not isinstance(depth_m, np.ndarray):
        raise InputError(f"depth_m must be a numpy array, got {type(depth_m).__name__}")
    if not np.issubdtype(depth_m.dtype, np.floating):
        raise InputError(f"depth_m must be a float array in metres, got dtype {depth_m.dtype}")
    if depth_m.shape != tuple(shape[:2]):
        raise InputError(
            f"depth_m shape {depth_m.shape} does not match the image's height x width "
            f"{tuple(shape[:2])}"
        )
    if not np.isfinite(depth_m).all():
        bad = int((~np.isfinite(depth_m)).sum())
        raise InputError(f"depth_m has {bad} NaN or infinite values; fill them first")
    if (depth_m < 0).any():
        raise InputError(f"depth_m has negative values (min {float(depth_m.min()):.4g} m)")
    return depth_m


def check_visibility(visibility_m: float) -> float:
    """Return the visibility as a float if it is finite and > 0 metres."""
    v = float(visibility_m)
    if not math.isfinite(v) or v <= 0:
        raise InputError(f"visibility must be a finite number of metres > 0, got {visibility_m!r}")
    return v
