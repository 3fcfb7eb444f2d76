"""Finding the sweep's red box by its colour, and erasing it before detection.

The box is drawn last, after degradation, as a band of pure red pixels, so it is exact; see
:func:`find_red_box` for the rule (the package docstring of :mod:`clearsight.perceiver` gives the
whole pipeline).
"""

from __future__ import annotations

import itertools
from typing import Final

import numpy as np
import numpy.typing as npt

#: The colour of the sweep's box band.
BOX_COLOUR: Final[tuple[int, int, int]] = (255, 0, 0)


Box = tuple[int, int, int, int]


def _outline(
    sub: npt.NDArray[np.bool_], x0: int, y0: int, width: int, height: int, max_band: int
) -> Box | None:
    """The box inside one red component (``sub``, placed at ``(x0, y0)``), or None when the
    component is not a box outline: the largest hole it encloses (sides lying on the image
    border count as closed, since ``draw_box`` clips its band there) must be a rectangle with
    a band of at most ``max_band`` px on every side."""
    from scipy import ndimage

    h, w = sub.shape
    # close the sides where the component meets the image border with one red row/column
    pads = ((int(y0 == 0), int(y0 + h == height)), (int(x0 == 0), int(x0 + w == width)))
    padded = np.pad(sub, pads, constant_values=True)
    holes = ndimage.binary_fill_holes(padded) & ~padded
    labels, n = ndimage.label(holes)
    if n == 0:
        return None
    sizes = ndimage.sum_labels(holes, labels, index=np.arange(1, n + 1))
    largest = int(np.argmax(sizes)) + 1
    sl = ndimage.find_objects(labels)[largest - 1]
    assert sl is not None
    hy0, hy1 = sl[0].start - pads[0][0], sl[0].stop - pads[0][0]
    hx0, hx1 = sl[1].start - pads[1][0], sl[1].stop - pads[1][0]
    if sizes[largest - 1] < 0.9 * (hy1 - hy0) * (hx1 - hx0):
        return None  # not a rectangle
    if max(hx0, hy0, w - hx1, h - hy1) > max_band:
        return None  # a band thicker than any drawn box: a red object around something
    return (x0 + hx0, y0 + hy0, x0 + hx1, y0 + hy1)


def _between_strips(strips: list[tuple[int, int]], full: int) -> list[tuple[int, int]]:
    """The spans (start, end) a box that spans the image may take between full-length strips
    (x or y extents, sorted in place): between each neighbouring pair; with a single strip, the
    larger side of it (the pixels cannot tell which side the box was on)."""
    strips.sort()
    if len(strips) >= 2:
        spans = [(a[1], b[0]) for a, b in itertools.pairwise(strips)]
    elif len(strips) == 1:
        lo, hi = strips[0]
        spans = [(0, lo) if lo >= full - hi else (hi, full)]
    else:
        spans = []
    return [(a, b) for a, b in spans if b > a]


def _spanning_boxes(
    vertical: list[tuple[int, int]], horizontal: list[tuple[int, int]], width: int, height: int
) -> list[Box]:
    """The boxes that span the image's height (between ``vertical`` strips) or width (between
    ``horizontal`` strips): ``draw_box`` leaves only such strips of their outline."""
    return [(a, 0, b, height) for a, b in _between_strips(vertical, width)] + [
        (0, a, width, b) for a, b in _between_strips(horizontal, height)
    ]


def _outlines_and_strips(
    mask: npt.NDArray[np.bool_], thickness: int
) -> tuple[list[Box], list[tuple[int, int]], list[tuple[int, int]]]:
    """Per 4-connected component of ``mask``: the box its outline encloses (bands of at most
    ``2 * thickness``), or, for a solid component as long as the image and at most
    ``thickness`` across, a full-height strip ``(x0, x1)`` or full-width strip ``(y0, y1)``
    (what is left of the outline of a box that spans the image). Other solid components
    (red objects) are no box."""
    from scipy import ndimage

    height, width = mask.shape
    labels, _ = ndimage.label(mask)
    boxes: list[Box] = []
    vertical: list[tuple[int, int]] = []  # full-height strips (x0, x1)
    horizontal: list[tuple[int, int]] = []  # full-width strips (y0, y1)
    for index, sl in enumerate(ndimage.find_objects(labels), start=1):
        if sl is None:
            continue
        sub = labels[sl] == index
        y0, x0 = sl[0].start, sl[1].start
        h, w = sub.shape
        if sub.all():  # solid: a strip of a box that spans the image, or a red object
            if h == height and w <= thickness:
                vertical.append((x0, x0 + w))
            elif w == width and h <= thickness:
                horizontal.append((y0, y0 + h))
            continue
        box = _outline(sub, x0, y0, width, height, 2 * thickness)
        if box is not None:
            boxes.append(box)
    return boxes, vertical, horizontal


def find_red_box(
    image: npt.NDArray[np.uint8],
    thickness: int = 8,
    colour: tuple[int, int, int] = BOX_COLOUR,
) -> Box | None:
    """The box ``(x0, y0, x1, y1)`` (x1, y1 exclusive) inside the largest pure-``colour``
    axis-aligned rectangle outline of ``image`` (uint8 HxWx3), or None when there is none.

    Inverts :func:`clearsight.physics.draw_box` exactly: the box of a 4-connected component of
    pure ``colour`` pixels is the largest rectangular hole it encloses, with bands of at most
    ``2 * thickness`` px around it; where the component meets the image border its open side
    counts as closed (``draw_box`` clips the band away there). A box that spans the image's
    height (width) leaves only vertical (horizontal) strips, each at most ``thickness`` px
    across and as long as the image: two strips enclose the box; a single strip leaves two
    candidates, one on each side, and the larger is taken (the pixels cannot tell which).
    Among all valid outlines the largest box wins.
    """
    rgb = np.asarray(image)
    mask = np.all(rgb == np.asarray(colour, np.uint8), axis=-1)
    if not mask.any():
        return None
    height, width = mask.shape
    boxes, vertical, horizontal = _outlines_and_strips(mask, thickness)
    boxes += _spanning_boxes(vertical, horizontal, width, height)
    if not boxes:
        return None
    return max(boxes, key=lambda b: (b[2] - b[0]) * (b[3] - b[1]))


def band_mask(shape: tuple[int, int], box: Box, thickness: int) -> npt.NDArray[np.bool_]:
    """The pixels :func:`~clearsight.physics.draw_box` paints for ``box`` (band of ``thickness``
    around it, clipped to the image)."""
    height, width = shape
    x0, y0, x1, y1 = box
    mask = np.zeros((height, width), bool)
    mask[
        max(y0 - thickness, 0) : min(y1 + thickness, height),
        max(x0 - thickness, 0) : min(x1 + thickness, width),
    ] = True
    mask[y0:y1, x0:x1] = False
    return mask


def erase_band(
    image: npt.NDArray[np.uint8],
    box: Box,
    thickness: int,
    colour: tuple[int, int, int] = BOX_COLOUR,
) -> npt.NDArray[np.uint8]:
    """A copy of ``image`` whose red band pixels around ``box`` take the colour of their nearest
    pixel outside the band (the seam runs along the band's middle)."""
    from scipy import ndimage

    red = np.all(image == np.asarray(colour, np.uint8), axis=-1)
    mask = band_mask(image.shape[:2], box, 2 * thickness) & red
    if not mask.any() or mask.all():
        return image.copy()
    _, (iy, ix) = ndimage.distance_transform_edt(mask, return_indices=True)
    out = image.copy()
    out[mask] = image[iy[mask], ix[mask]]
    return out
