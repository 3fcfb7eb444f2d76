"""Bundled scenes: real photos that installed packages carry, with hand-made annotations.

The photos come from scikit-image, scikit-learn and matplotlib (inside their wheels) and from
the test photos of Debian's ``darknet`` package, which ``clearsight fetch`` (``make data``)
extracts into the data cache (:func:`clearsight.fetch.steps.fetch_photos`). Boxes, COCO categories,
crops and depth layouts live in ``data/bundled.yaml``; every box was drawn by a person looking
at the photo. Depth is measured for ``stereo_motorcycle`` (its Middlebury disparity and
calibration) and *assumed* for every other scene: a stated layout whose note travels with the
scene into every report. A stated layout sets each target box to the target's depth, so where
that differs from the layout around the box, fog shows the box's edges as a clear rectangle;
the scene's depth note says so (:func:`box_edges`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from clearsight.cache import cache_dir
from clearsight.scenes.depth import assumed_depth, motorcycle_depth
from clearsight.scenes.model import Box, DepthProvenance, Scene, Target
from clearsight.validate import InputError

#: The darknet photos' folder inside the data cache.
DARKNET_DIR = "photos/darknet"
_SOURCES = ("skimage", "sklearn", "matplotlib", "darknet")


@dataclass(frozen=True)
class BundledSpec:
    """One entry of ``bundled.yaml``: where the photo comes from and what a person marked in it."""

    id: str
    photo: str
    crop: tuple[int, int, int, int] | None
    grayscale: bool
    attribution: str
    licence: str
    depth: dict[str, Any]
    targets: tuple[Target, ...]

    @property
    def source(self) -> str:
        return self.photo.split(":", 1)[0]


def _parse(entry: dict[str, Any]) -> BundledSpec:
    try:
        photo = str(entry["photo"])
        if photo.split(":", 1)[0] not in _SOURCES or ":" not in photo:
            raise InputError(f"photo {photo!r} must be one of {_SOURCES} followed by ':NAME'")
        crop = entry.get("crop")
        targets = tuple(
            Target(Box(*(int(v) for v in t["box"])), str(t["category"])) for t in entry["targets"]
        )
        return BundledSpec(
            id=str(entry["id"]),
            photo=photo,
            crop=None if crop is None else (int(crop[0]), int(crop[1]), int(crop[2]), int(crop[3])),
            grayscale=bool(entry.get("grayscale", False)),
            attribution=str(entry["attribution"]),
            licence=str(entry["licence"]),
            depth=dict(entry["depth"]),
            targets=targets,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"bundled.yaml entry {entry.get('id')!r} is malformed: {exc}") from exc


@functools.cache
def bundled_specs() -> dict[str, BundledSpec]:
    """Every annotated scene of ``bundled.yaml`` by id (whether or not its photo is present)."""
    text = resources.files("clearsight.scenes").joinpath("data/bundled.yaml").read_text()
    specs = [_parse(e) for e in yaml.safe_load(text)["scenes"]]
    return {s.id: s for s in specs}


def darknet_photo_dir() -> Path:
    """Where ``make data`` puts the darknet test photos."""
    return cache_dir() / DARKNET_DIR


def photo_missing(spec: BundledSpec) -> str | None:
    """Why a scene's photo is unavailable on this machine, or None if it can be loaded."""
    if spec.source != "darknet":
        return None
    path = darknet_photo_dir() / spec.photo.split(":", 1)[1]
    if path.is_file():
        return None
    return (
        f"{path} is missing: run `clearsight fetch` (or `make data`) to extract the darknet "
        "test photos"
    )


def bundled_scene_ids(available_only: bool = True) -> list[str]:
    """Ids of the bundled scenes, in file order; by default only those whose photo is present."""
    return [
        s.id for s in bundled_specs().values() if not available_only or photo_missing(s) is None
    ]


def _read_image(path: Path) -> npt.NDArray[np.uint8]:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"), dtype=np.uint8)
    except (OSError, UnidentifiedImageError) as exc:
        raise InputError(f"cannot read image file {path}: {exc}") from exc


def _load_photo(spec: BundledSpec) -> npt.NDArray[np.uint8]:
    source, name = spec.photo.split(":", 1)
    if source == "skimage":
        import skimage.data

        loader = getattr(skimage.data, name, None)
        if loader is None:
            raise InputError(f"scikit-image has no data image {name!r}")
        image = loader()
        image = image[0] if name == "stereo_motorcycle" else image
    elif source == "sklearn":
        from sklearn.datasets import load_sample_image

        image = load_sample_image(name)
    elif source == "matplotlib":
        import matplotlib

        image = _read_image(Path(matplotlib.get_data_path()) / "sample_data" / name)
    else:
        missing = photo_missing(spec)
        if missing:
            raise InputError(f"scene {spec.id!r}: {missing}")
        image = _read_image(darknet_photo_dir() / name)
    image = np.asarray(image)
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    return np.ascontiguousarray(image[:, :, :3], dtype=np.uint8)


def _depth(
    spec: BundledSpec, h: int, w: int
) -> tuple[npt.NDArray[np.float32], DepthProvenance, str]:
    kind = spec.depth.get("kind")
    if kind == "stereo":
        depth, note = motorcycle_depth()
        if spec.crop is not None:
            x0, y0, x1, y1 = spec.crop
            depth = depth[y0:y1, x0:x1]
        return np.ascontiguousarray(depth), "measured", note
    if kind == "assumed":
        d = spec.depth
        depth = assumed_depth(
            h,
            w,
            far_m=d["far_m"],
            horizon=d.get("horizon"),
            near_m=d.get("near_m"),
            target_boxes=[t.box for t in spec.targets],
            targets_m=d.get("targets_m") or (),
        )
        return depth, "assumed", f"assumed: {d.get('note', '')}" + _edge_note(depth, spec.targets)
    raise InputError(f"scene {spec.id!r}: unknown depth kind {kind!r} (stereo or assumed)")


#: A target box whose depth differs from the layout around it by this factor shows its edges.
EDGE_RATIO = 1.5


def box_edges(
    depth_m: npt.NDArray[np.float32], boxes: Sequence[Box], ring_px: int = 4
) -> list[tuple[int, float, float]]:
    """The boxes whose edges a fog of this depth would show: ``(i, inside, around)`` for each
    box i where the median depth inside it and the median over a ``ring_px`` wide strip along
    one of its sides (inside the image; ``around``: the side that differs most) differ by a
    factor ``max / min >= EDGE_RATIO``. A stated layout puts an upright target at one depth in
    a background at another, so fog (transmission ``exp(-3.912 z / V)``) leaves a clear
    rectangle where the box is."""
    h, w = depth_m.shape
    found = []
    for i, b in enumerate(boxes):
        inside = float(np.median(depth_m[b.y0 : b.y1, b.x0 : b.x1]))
        strips = (
            depth_m[max(b.y0 - ring_px, 0) : b.y0, b.x0 : b.x1],
            depth_m[b.y1 : min(b.y1 + ring_px, h), b.x0 : b.x1],
            depth_m[b.y0 : b.y1, max(b.x0 - ring_px, 0) : b.x0],
            depth_m[b.y0 : b.y1, b.x1 : min(b.x1 + ring_px, w)],
        )
        sides = [float(np.median(strip)) for strip in strips if strip.size]
        if not sides:
            continue  # the box fills the image: no edge to show
        around = max(sides, key=lambda z: max(z, inside) / min(z, inside))
        if max(inside, around) >= EDGE_RATIO * min(inside, around):
            found.append((i, inside, around))
    return found


def _edge_note(depth_m: npt.NDArray[np.float32], targets: Sequence[Target]) -> str:
    """The depth note's warning where the stated layout's box edges show in fog ('' if none)."""
    edges = box_edges(depth_m, [t.box for t in targets])
    if not edges:
        return ""
    parts = ", ".join(
        f"{targets[i].category} box at {inside:.3g} m beside {around:.3g} m"
        for i, inside, around in edges
    )
    return (
        f"; box edges show in fog ({parts}): the fogged image has a clear rectangle where "
        "such a box is (the layout is stated per box, not measured)"
    )


@functools.lru_cache(maxsize=32)
def load_bundled_scene(scene_id: str) -> Scene:
    """The bundled scene ``scene_id`` with its photo decoded once per process (arrays read-only)."""
    specs = bundled_specs()
    if scene_id not in specs:
        raise InputError(f"unknown scene id {scene_id!r}; bundled scenes: {', '.join(specs)}")
    spec = specs[scene_id]
    image = _load_photo(spec)
    if spec.crop is not None:
        x0, y0, x1, y1 = spec.crop
        if not (0 <= x0 < x1 <= image.shape[1] and 0 <= y0 < y1 <= image.shape[0]):
            raise InputError(f"scene {scene_id!r}: crop {spec.crop} lies outside the photo")
        image = np.ascontiguousarray(image[y0:y1, x0:x1])
    h, w = image.shape[:2]
    depth, provenance, note = _depth(spec, h, w)
    image.flags.writeable = False
    depth.flags.writeable = False
    return Scene(
        id=spec.id,
        image=image,
        depth_m=depth,
        depth_provenance=provenance,
        targets=spec.targets,
        attribution=spec.attribution,
        licence=spec.licence,
        depth_note=note,
        source=f"bundled:{spec.photo}" + ("" if spec.crop is None else f" crop {list(spec.crop)}"),
        photo=f"bundled:{spec.photo}",
    )


def bundled_photo(scene_id: str) -> str | None:
    """The photo a bundled scene is cut from (``bundled:SOURCE:NAME``; crops of one photo share
    it), or None for an id that is not a bundled scene. Reads only ``bundled.yaml``."""
    spec = bundled_specs().get(scene_id)
    return None if spec is None else f"bundled:{spec.photo}"
