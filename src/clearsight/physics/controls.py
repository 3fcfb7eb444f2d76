"""Image controls of the sweep and the red box that marks the target (docs/methods.md §1).

The box is drawn *after* degradation, so it is never fogged: red (255, 0, 0), 8 px thick by
default, as a band just outside the target's bounding box (the object's own pixels stay
visible), clipped to the image. Blank: a mid-grey image of the same size with the box kept.
Shuffled: each question is paired with another scene's clean pixels and that scene's box, by a
seeded derangement (no scene keeps its own image).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from clearsight.validate import InputError

BOX_COLOUR: Final[tuple[int, int, int]] = (255, 0, 0)
BOX_THICKNESS_PX: Final = 8
#: The blank control's grey: sRGB 128, the middle of the 8-bit code range.
BLANK_GREY: Final = 128


def draw_box(
    images: npt.NDArray[np.uint8],
    box: tuple[int, int, int, int],
    thickness: int = BOX_THICKNESS_PX,
    colour: tuple[int, int, int] = BOX_COLOUR,
) -> npt.NDArray[np.uint8]:
    """Draw a box band around ``box`` (x0, y0, x1, y1; x1, y1 exclusive) in place and return it.

    ``images`` is HxWx3 or any stack (..., H, W, 3) such as all levels of a sweep at once.
    """
    if images.dtype != np.uint8 or images.ndim < 3 or images.shape[-1] != 3:
        raise InputError(f"images must be uint8 (..., H, W, 3), got {images.dtype} {images.shape}")
    if thickness < 1:
        raise InputError(f"box thickness must be >= 1 px, got {thickness}")
    h, w = images.shape[-3:-1]
    x0, y0, x1, y1 = (int(v) for v in box)
    if not (0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h):
        raise InputError(f"box {box} lies outside the {w}x{h} image or is empty (x0, y0, x1, y1)")
    ox0, oy0 = max(x0 - thickness, 0), max(y0 - thickness, 0)
    ox1, oy1 = min(x1 + thickness, w), min(y1 + thickness, h)
    c = np.asarray(colour, dtype=np.uint8)
    images[..., oy0:y0, ox0:ox1, :] = c
    images[..., y1:oy1, ox0:ox1, :] = c
    images[..., oy0:oy1, ox0:x0, :] = c
    images[..., oy0:oy1, x1:ox1, :] = c
    return images


def blank_like(image: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """The blank control: a mid-grey image of the same size (the caller draws the box)."""
    return np.full_like(image, BLANK_GREY)


def derangement(n: int, seed: int) -> npt.NDArray[np.intp]:
    """A seeded permutation of ``range(n)`` with no fixed point (Sattolo's single cycle).

    ``perm[i]`` is the scene whose clean pixels and box the shuffled control shows for scene i.
    """
    if n < 2:
        raise InputError(f"a shuffled control needs at least 2 scenes, got {n}")
    rng = np.random.default_rng(seed)
    perm = np.arange(n)
    for i in range(n - 1, 0, -1):
        j = int(rng.integers(0, i))
        perm[i], perm[j] = perm[j], perm[i]
    return perm
