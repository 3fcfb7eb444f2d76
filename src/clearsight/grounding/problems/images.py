"""The pixels of a problem's image reference: the bundled visual problems' pictures drawn from
their ``chart:`` / ``scene:`` references (:mod:`clearsight.grounding.problems.bundled`), any other
reference read as an image file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from clearsight.validate import InputError


def _draw_chart(labels: Sequence[str], values: Sequence[int]) -> npt.NDArray[np.uint8]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3.2, 2.4), dpi=100)
    ax = fig.add_subplot()
    ax.bar(list(labels), list(values), color="#4477aa")
    ax.set_ylim(0, 10)
    ax.set_yticks(range(0, 11))
    ax.grid(axis="y", linewidth=0.5)
    ax.set_axisbelow(True)
    canvas = FigureCanvasAgg(fig)
    fig.tight_layout()
    canvas.draw()  # type: ignore[no-untyped-call]
    rgba = np.asarray(canvas.buffer_rgba())  # type: ignore[no-untyped-call]
    return np.ascontiguousarray(rgba[..., :3]).astype(np.uint8)


def _draw_boxes(scene_id: str, category: str) -> npt.NDArray[np.uint8]:
    from clearsight.physics import draw_box
    from clearsight.scenes.bundled import load_bundled_scene

    scene = load_bundled_scene(scene_id)
    image = np.array(scene.image, dtype=np.uint8, copy=True)
    for t in scene.targets:
        if t.category == category:
            image = draw_box(image, t.box.as_tuple())
    return image


def render_image(ref: str) -> npt.NDArray[np.uint8]:
    """Pixels of a ``chart:{labels, values}`` or ``scene:{scene, category}`` reference."""
    kind, _, payload = ref.partition(":")
    try:
        spec = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise InputError(f"bad image reference {ref!r}: {exc}") from exc
    if kind == "chart":
        return _draw_chart(spec["labels"], spec["values"])
    if kind == "scene":
        return _draw_boxes(spec["scene"], spec["category"])
    raise InputError(f"unknown image reference kind {kind!r}")


def load_image(ref: str) -> npt.NDArray[np.uint8]:
    """The RGB pixels an image reference names: ``chart:<json>`` and ``scene:<json>`` are
    drawn here (:func:`render_image`); anything else is a file path."""
    if ref.startswith(("chart:", "scene:")):
        return render_image(ref)
    path = Path(ref)
    if not path.is_file():
        raise InputError(f"problem image {ref} does not exist")
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"), dtype=np.uint8)
