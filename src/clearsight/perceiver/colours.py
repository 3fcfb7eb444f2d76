"""Naming colours: pixels matched to named colours in CIELAB, with the xkcd colour survey's names.

The names and their sRGB values are matplotlib's ``XKCD_COLORS`` (the colours most people gave
each name in the xkcd colour survey), so a phrase such as "dark navy blue", "red brown" or
"yellow brown" in a question's options has a colour without a table of clearsight's own. A
pixel takes the name whose colour is nearest in CIELAB (CIE76 ΔE, Euclidean in L*a*b*, which is
close to perceptual for the large differences between candidate names), not in RGB, where
distances say little about how different two colours look. A free-form answer names one of
the eleven basic colour terms (:data:`BASIC_COLOURS`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

#: The basic colour terms (Berlin and Kay) a free-form answer chooses from.
BASIC_COLOURS: Final = (
    "black",
    "white",
    "grey",
    "red",
    "orange",
    "yellow",
    "green",
    "blue",
    "purple",
    "pink",
    "brown",
)
#: Pixels used at most per region (an even subsample beyond): enough for shares to 1 %.
MAX_PIXELS: Final = 4096


@functools.cache
def _xkcd() -> dict[str, str]:
    """xkcd colour name (lower case, single spaces) to its ``#rrggbb``."""
    from matplotlib.colors import XKCD_COLORS

    return {name.removeprefix("xkcd:"): str(value) for name, value in XKCD_COLORS.items()}


def load_tables() -> None:
    """Import the colour conversion and read the names now (about a second on a busy machine),
    so that the first question a loaded backend answers does not wait for them."""
    _xkcd()
    lab(np.zeros((1, 3), np.uint8))


def _words(text: str) -> list[str]:
    text = text.lower().replace("gray", "grey")
    return re.sub(r"[^a-z ]", " ", text).split()


def named_colours(text: str) -> tuple[str, ...]:
    """The colour names in ``text``, longest phrases first, left to right: "dry yellow-brown" is
    ``("yellow brown",)``, "spotted black and white" ``("black", "white")``, "in colour"
    ``()``. Words are read as xkcd names (hyphens as spaces, "gray" as "grey")."""
    table = _xkcd()
    words = _words(text)
    found: list[str] = []
    i = 0
    while i < len(words):
        for n in range(min(3, len(words) - i), 0, -1):
            phrase = " ".join(words[i : i + n])
            if phrase in table and phrase not in found:
                found.append(phrase)
                i += n
                break
        else:
            i += 1
    return tuple(found)


def lab(rgb: npt.NDArray[np.uint8]) -> npt.NDArray[np.float64]:
    """CIELAB (D65) of sRGB ``rgb`` (... x 3 uint8), same leading shape."""
    from skimage.color import rgb2lab

    flat = np.asarray(rgb, np.uint8).reshape(-1, 1, 3)
    return np.asarray(rgb2lab(flat), np.float64).reshape(*np.shape(rgb)[:-1], 3)


def _prototypes(names: Sequence[str]) -> npt.NDArray[np.float64]:
    hexes = [_xkcd()[n].lstrip("#") for n in names]
    rgb = np.array([[int(h[i : i + 2], 16) for i in (0, 2, 4)] for h in hexes], np.uint8)
    return lab(rgb)


def colour_shares(pixels: npt.NDArray[np.uint8], names: Sequence[str]) -> dict[str, float]:
    """Per name, the share of ``pixels`` (N x 3 uint8 sRGB, any leading shape) whose nearest
    named colour in CIELAB it is; the shares sum to 1 (all 0 with no pixels). Beyond
    :data:`MAX_PIXELS` pixels an evenly spaced subsample is used."""
    flat = np.asarray(pixels, np.uint8).reshape(-1, 3)
    shares = dict.fromkeys(names, 0.0)
    if flat.shape[0] == 0 or not names:
        return shares
    if flat.shape[0] > MAX_PIXELS:
        flat = flat[np.linspace(0, flat.shape[0] - 1, MAX_PIXELS).astype(np.int64)]
    points = lab(flat)
    protos = _prototypes(names)
    dist = np.linalg.norm(points[:, None, :] - protos[None, :, :], axis=-1)
    counts = np.bincount(np.argmin(dist, axis=1), minlength=len(names))
    for name, c in zip(names, counts, strict=True):
        shares[name] += float(c) / flat.shape[0]
    return shares


def colour_name(pixels: npt.NDArray[np.uint8]) -> str:
    """The basic colour term most of ``pixels`` are nearest to in CIELAB; ``unknown`` with no
    pixels."""
    if np.asarray(pixels).size == 0:
        return "unknown"
    shares = colour_shares(pixels, BASIC_COLOURS)
    return max(BASIC_COLOURS, key=shares.__getitem__)
