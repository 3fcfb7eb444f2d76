"""The sample's PNGs (clearsight.faces.sample.png_bytes, OpenCV's encoder): any RGB image reads
back, through PIL as every tracker and the export read it, as the same pixels in the same
channel order, and the file holds no chunk but the image's own (no metadata)."""

from __future__ import annotations

import io
import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

from clearsight.faces.sample import png_bytes

IMAGES = st.tuples(st.integers(1, 40), st.integers(1, 40)).flatmap(
    lambda hw: arrays(np.uint8, (*hw, 3))
)


def _chunks(png: bytes) -> list[bytes]:
    """The chunk types of a PNG, in order."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, types = 8, []
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        types.append(png[at + 4 : at + 8])
        at += 12 + length
    return types


@settings(max_examples=60, deadline=None)
@given(IMAGES)
def test_a_png_reads_back_as_its_pixels(pixels: np.ndarray) -> None:
    png = png_bytes(pixels)
    with Image.open(io.BytesIO(png)) as image:
        assert image.mode == "RGB"
        assert np.array_equal(np.asarray(image), pixels)
    types = _chunks(png)
    assert types[0] == b"IHDR"
    assert types[-1] == b"IEND"
    assert set(types[1:-1]) == {b"IDAT"}


def test_a_read_only_view_is_encoded_as_its_pixels() -> None:
    """A kept image is the request's own array, read-only and maybe a strided view."""
    base = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)
    view = base[::2, 1::2]
    view.flags.writeable = False
    with Image.open(io.BytesIO(png_bytes(view))) as image:
        assert np.array_equal(np.asarray(image), view)
