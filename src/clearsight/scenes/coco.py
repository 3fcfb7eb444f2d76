"""COCO scenes from a local copy of COCO 2017: choose one boxed target per image, then load it.

The visibility sweep (docs/methods.md §1) uses 1000 COCO val images with one
boxable target per image from the ``vehicle`` and ``outdoor`` super-categories, meeting area and
resolution minimums, with frequency-balanced categories and a seeded draw. Selection
(``select_coco_targets``) is pure JSON work and returns small picklable ``CocoTarget`` records,
so a sweep can plan its work items without decoding a pixel; ``load_coco_scene`` decodes one
image and attaches depth from a ``DepthProvider``.

Selection rules, in order (all documented choices, configurable in ``CocoSelectionConfig``):

1. The image's shorter side is at least ``min_image_side_px``.
2. An annotation qualifies when its category's super-category is one of ``supercategories``,
   it is not a crowd (``iscrowd`` = 1 marks a blob of many objects, not one boxable object), its
   integer box (``coco_bbox_to_box``) has both sides >= ``min_box_side_px``, its box area over
   the image area lies in [``min_area_frac``, ``max_area_frac``], and it keeps at least
   ``border_margin_px`` from every image border (an object cut by the border is truncated, and
   the red box drawn around it would be clipped).
3. One target per image: the largest qualifying box (ties: the smaller annotation id).
4. The image is skipped when an annotation (crowds included) of a *different* category from the
   selected super-categories covers more than ``max_other_cover`` of the chosen box: the red box
   would then hold two candidate answers. Other super-categories (a rider on a motorcycle) are
   not distractors in the identification task and do not count.
5. Frequency balancing: qualifying images are grouped by target category and drawn round-robin
   across categories (categories in a seeded random order, images within each category in a
   seeded random order) until ``n`` are chosen or all are used, so no category has more than one
   image more than another unless it ran out. The result depends on the seed and the JSON's
   content, never on the order of entries in the JSON.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, Self, TypedDict, TypeVar, cast

import numpy as np
import numpy.typing as npt
from PIL import Image, UnidentifiedImageError
from pydantic import BaseModel, ConfigDict, Field, model_validator

from clearsight.scenes.categories import SUPERCATEGORY
from clearsight.scenes.depth import DepthProvider
from clearsight.scenes.model import DEPTH_PROVENANCES, Box, Scene, Target
from clearsight.validate import InputError, check_depth, refuse_repeated_ids, short_repr

T = TypeVar("T")

#: The citation every COCO scene carries.
COCO_CITATION = "COCO 2017 (Lin et al. 2014)"


class CocoImage(TypedDict):
    """One entry of a COCO instances file's ``images`` list (the fields clearsight reads)."""

    id: int
    file_name: str
    width: int
    height: int
    license: NotRequired[int]
    flickr_url: NotRequired[str]
    coco_url: NotRequired[str]


class CocoAnnotation(TypedDict):
    """One entry of the ``annotations`` list: an object instance's box ``[x, y, w, h]``."""

    id: int
    image_id: int
    category_id: int
    bbox: list[float]
    iscrowd: NotRequired[int]


class CocoCategory(TypedDict):
    """One entry of the ``categories`` list."""

    id: int
    name: str
    supercategory: str


class CocoLicence(TypedDict, total=False):
    """One entry of the optional ``licenses`` list (COCO's spelling; not checked on load, so
    :func:`_licence_text` reads it defensively)."""

    id: int
    name: str
    url: str


class CocoInstances(TypedDict):
    """A COCO instances JSON after :func:`_load_instances` has checked its structure."""

    images: list[CocoImage]
    annotations: list[CocoAnnotation]
    categories: list[CocoCategory]
    licenses: NotRequired[list[CocoLicence]]


class CocoSelectionConfig(BaseModel):
    """Which COCO annotations make a scene, and how many scenes to draw (see the module doc)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    supercategories: tuple[str, ...] = Field(
        ("vehicle", "outdoor"),
        description="COCO super-categories a target may come from (the paper: vehicle, outdoor).",
    )
    min_area_frac: float = Field(
        0.02, gt=0.0, le=1.0, description="Smallest target box area as a share of the image area."
    )
    max_area_frac: float = Field(
        0.8, gt=0.0, le=1.0, description="Largest target box area as a share of the image area."
    )
    min_box_side_px: int = Field(
        32, ge=1, description="Smallest width and height of the target box, in pixels."
    )
    min_image_side_px: int = Field(
        320, ge=1, description="Smallest shorter side of the image, in pixels."
    )
    border_margin_px: int = Field(
        1,
        ge=0,
        description=(
            "Pixels a target box must keep from every image border; 1 drops boxes touching the "
            "border (truncated objects), 0 keeps them."
        ),
    )
    max_other_cover: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Skip the image when an annotation of another category from the selected "
            "super-categories covers more than this share of the chosen box; 1 disables."
        ),
    )
    n: int = Field(1000, ge=1, description="How many scenes to draw (fewer if fewer qualify).")
    seed: int = Field(0, ge=0, description="Seed of the category-balanced random draw.")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.supercategories:
            raise ValueError("supercategories must name at least one COCO super-category")
        known = sorted(set(SUPERCATEGORY.values()))
        unknown = [s for s in self.supercategories if s not in known]
        if unknown:
            raise ValueError(f"unknown COCO super-categories {unknown}; known: {known}")
        if self.min_area_frac >= self.max_area_frac:
            raise ValueError(
                f"min_area_frac ({self.min_area_frac}) must be below max_area_frac "
                f"({self.max_area_frac})"
            )
        return self

    def criteria(self) -> str:
        """The selection criteria in words, for error messages and manifests."""
        return (
            f"super-categories {list(self.supercategories)}, not crowd, box area "
            f"{self.min_area_frac:g}..{self.max_area_frac:g} of the image, box sides >= "
            f"{self.min_box_side_px} px, image shorter side >= {self.min_image_side_px} px, "
            f">= {self.border_margin_px} px from the border, no other selected-category box "
            f"covering > {self.max_other_cover:g} of it"
        )


@dataclass(frozen=True)
class CocoTarget:
    """One selected COCO image and its target: everything needed to load the scene later.

    ``box`` is ``(x0, y0, x1, y1)`` in integer pixels with exclusive ends (``coco_bbox_to_box``).
    ``url`` is the image's Flickr URL (else its COCO URL, else empty); ``licence`` is the image's
    licence from the annotation file's ``licenses`` list.
    """

    scene_id: str
    file: Path
    image_id: int
    width: int
    height: int
    box: tuple[int, int, int, int]
    category: str
    annotation_id: int
    url: str
    licence: str

    @property
    def attribution(self) -> str:
        """The attribution a report shows for this image."""
        where = f" ({self.url})" if self.url else ""
        return f"{COCO_CITATION}, image {self.image_id} from Flickr{where}"


def coco_bbox_to_box(bbox: Sequence[float], width: int, height: int) -> Box | None:
    """Convert a COCO ``[x, y, w, h]`` float box to integer pixels that cover it, clipped.

    ``x0 = floor(x)``, ``y0 = floor(y)``, ``x1 = ceil(x + w)``, ``y1 = ceil(y + h)`` (exclusive
    ends, so every pixel the float box touches is inside), then clipped to the
    ``width`` x ``height`` image. Returns None when nothing is left (a degenerate box).
    """
    if len(bbox) != 4:
        raise InputError(f"COCO bbox must be [x, y, w, h], got {list(bbox)!r}")
    x, y, w, h = (float(v) for v in bbox)
    if not all(math.isfinite(v) for v in (x, y, w, h)) or w < 0 or h < 0:
        raise InputError(f"COCO bbox must hold finite numbers with w, h >= 0, got {list(bbox)!r}")
    x0 = max(0, math.floor(x))
    y0 = max(0, math.floor(y))
    x1 = min(width, math.ceil(x + w))
    y1 = min(height, math.ceil(y + h))
    if x1 <= x0 or y1 <= y0:
        return None
    return Box(x0, y0, x1, y1)


def balanced_round_robin(groups: Mapping[str, Sequence[T]], n: int, seed: int) -> list[T]:
    """Draw up to ``n`` items round-robin across groups, in a seeded random order.

    The groups are put in a random order (a permutation of their sorted keys) and the items of
    each group in a random order (a permutation of the sequence as given; the caller sorts it),
    all from one ``numpy.random.default_rng(seed)``. Round k takes the k-th item of every group
    that still has one, in group order, until ``n`` items are drawn. So group counts differ by at
    most one, except for groups that run out.
    """
    rng = np.random.default_rng(seed)
    keys = sorted(groups)
    order = [keys[i] for i in rng.permutation(len(keys))]
    shuffled = {k: [groups[k][i] for i in rng.permutation(len(groups[k]))] for k in keys}
    drawn: list[T] = []
    depth = max((len(v) for v in shuffled.values()), default=0)
    for k in range(depth):
        for key in order:
            if len(drawn) == n:
                return drawn
            if k < len(shuffled[key]):
                drawn.append(shuffled[key][k])
    return drawn


# --------------------------------------------------------------------------------------------
# Reading the annotation file
# --------------------------------------------------------------------------------------------


def _load_instances(path: Path) -> CocoInstances:
    """Read and structurally check a COCO instances JSON; raise InputError naming the problem."""
    if not path.is_file():
        raise InputError(f"COCO annotation file not found: {path}")
    try:
        with path.open(encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read COCO annotation file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"COCO annotation file {path} must hold a JSON object")
    for key in ("images", "annotations", "categories"):
        if not isinstance(data.get(key), list):
            raise InputError(f"COCO annotation file {path} has no {key!r} list")
    required = {
        "images": ("id", "file_name", "width", "height"),
        "annotations": ("id", "image_id", "category_id", "bbox"),
        "categories": ("id", "name", "supercategory"),
    }
    for key, fields in required.items():
        for i, entry in enumerate(data[key]):
            if not isinstance(entry, dict) or any(f not in entry for f in fields):
                raise InputError(
                    f"COCO annotation file {path}: {key}[{i}] must be an object with fields "
                    f"{list(fields)}, got {str(entry)[:200]}"
                )
            _check_entry(path, key, i, entry)
        refuse_repeated_ids(
            ((entry["id"], f"{path} {key}[{i}]") for i, entry in enumerate(data[key])),
            f"COCO {_SINGULAR[key]}",
        )
    # the checks above give the three lists this shape; ``licenses`` is read defensively
    return cast("CocoInstances", data)


#: The fields of each list of a COCO instances file that must be whole numbers (``> 0``: the
#: image's size) and text.
_WHOLE = {
    "images": ("id",),
    "annotations": ("id", "image_id", "category_id"),
    "categories": ("id",),
}
_POSITIVE = {"images": ("width", "height")}
_TEXT = {"images": ("file_name",), "categories": ("name", "supercategory")}
_SINGULAR = {"images": "image", "annotations": "annotation", "categories": "category"}


def _check_entry(path: Path, key: str, i: int, entry: dict[str, Any]) -> None:
    """One entry's fields have the types COCO gives them; InputError naming the file, the entry
    and the field otherwise (a category id of "3" or a width of "big" would fail later, deep in
    the selection)."""

    def bad(field: str, what: str) -> InputError:
        got = short_repr(entry[field])
        return InputError(
            f"COCO annotation file {path}: {key}[{i}].{field} must be {what}, got {got}"
        )

    for field in (*_WHOLE.get(key, ()), *_POSITIVE.get(key, ())):
        value = entry[field]
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad(field, "a whole number")
        if field in _POSITIVE.get(key, ()) and value < 1:
            raise bad(field, "a whole number >= 1")
    for field in _TEXT.get(key, ()):
        if not isinstance(entry[field], str):
            raise bad(field, "text")
    if key == "annotations":
        box = entry["bbox"]
        numbers = isinstance(box, list) and all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in box
        )
        if not numbers or len(box) != 4 or box[2] < 0 or box[3] < 0:
            raise bad("bbox", "[x, y, w, h]: four finite numbers, w and h >= 0")


def _index(data: CocoInstances) -> Any:
    """Index a checked dataset with pycocotools (quietly: it prints progress to stdout)."""
    from pycocotools.coco import COCO

    coco = COCO()
    coco.dataset = data
    with contextlib.redirect_stdout(io.StringIO()):
        coco.createIndex()
    return coco


def _licence_text(data: CocoInstances, image: CocoImage) -> str:
    """The image's licence as "name (url)" from the ``licenses`` list, or a stated unknown."""
    lic_id = image.get("license")
    for lic in data.get("licenses") or []:
        if isinstance(lic, dict) and lic.get("id") == lic_id:
            name = str(lic.get("name", "")).strip() or f"licence {lic_id}"
            url = str(lic.get("url", "")).strip()
            return f"{name} ({url})" if url else name
    return "unknown (the annotation file gives no licence for this image)"


# --------------------------------------------------------------------------------------------
# Selection
# --------------------------------------------------------------------------------------------


def _cover(box: Box, other: Box) -> float:
    """Share of ``box``'s area that ``other`` covers."""
    w = min(box.x1, other.x1) - max(box.x0, other.x0)
    h = min(box.y1, other.y1) - max(box.y0, other.y0)
    return max(0, w) * max(0, h) / box.area


def _qualifies(box: Box | None, width: int, height: int, cfg: CocoSelectionConfig) -> bool:
    """Whether a non-crowd box of a selected category meets the size and border rules."""
    if box is None:
        return False
    if min(box.x1 - box.x0, box.y1 - box.y0) < cfg.min_box_side_px:
        return False
    frac = box.area / (width * height)
    if not cfg.min_area_frac <= frac <= cfg.max_area_frac:
        return False
    m = cfg.border_margin_px
    return box.x0 >= m and box.y0 >= m and box.x1 <= width - m and box.y1 <= height - m


def _choose_target(
    anns: Sequence[CocoAnnotation],
    cat_names: Mapping[int, str],
    width: int,
    height: int,
    cfg: CocoSelectionConfig,
) -> tuple[CocoAnnotation, Box] | None:
    """The image's target annotation and box (rules 2-4 of the module doc), or None."""
    boxed: list[tuple[CocoAnnotation, Box]] = []
    for ann in anns:
        if ann["category_id"] not in cat_names:
            continue
        box = coco_bbox_to_box(ann["bbox"], width, height)
        if box is not None:
            boxed.append((ann, box))
    qualifying = [
        (ann, box)
        for ann, box in boxed
        if not ann.get("iscrowd", 0) and _qualifies(box, width, height, cfg)
    ]
    if not qualifying:
        return None
    ann, box = max(qualifying, key=lambda ab: (ab[1].area, -int(ab[0]["id"])))
    for other, obox in boxed:
        if other["category_id"] != ann["category_id"] and _cover(box, obox) > cfg.max_other_cover:
            return None
    return ann, box


def _selected_categories(data: CocoInstances, cfg: CocoSelectionConfig) -> dict[int, str]:
    """Category id -> name for the categories in the selected super-categories."""
    cats: dict[int, str] = {}
    for cat in data["categories"]:
        if cat["supercategory"] not in cfg.supercategories:
            continue
        if cat["name"] not in SUPERCATEGORY:
            raise InputError(
                f"COCO category {cat['name']!r} (id {cat['id']}) is not one of the 80 COCO "
                "categories clearsight knows; is this a COCO instances file?"
            )
        cats[int(cat["id"])] = str(cat["name"])
    return cats


def _coco_target(
    data: CocoInstances,
    img: CocoImage,
    ann: CocoAnnotation,
    box: Box,
    category: str,
    images_dir: Path,
) -> CocoTarget:
    """The selected target ``ann`` (its ``box``, of ``category``) of the COCO image ``img``,
    with where the image file is and where it came from (its URL and licence)."""
    return CocoTarget(
        scene_id=f"coco-{int(img['id'])}",
        file=images_dir / str(img["file_name"]),
        image_id=int(img["id"]),
        width=int(img["width"]),
        height=int(img["height"]),
        box=box.as_tuple(),
        category=category,
        annotation_id=int(ann["id"]),
        url=str(img.get("flickr_url") or img.get("coco_url") or ""),
        licence=_licence_text(data, img),
    )


def select_coco_targets(
    instances_json: Path, images_dir: Path, config: CocoSelectionConfig | None = None
) -> list[CocoTarget]:
    """Choose up to ``config.n`` COCO images with one target each (rules in the module doc).

    Pure JSON work: no pixel is decoded and image files are not opened (a missing or corrupt
    file fails later in ``load_coco_scene``, naming the file). The list is in draw order, so
    any prefix of it is itself category-balanced. Raises InputError for a missing or malformed
    annotation file, a missing image directory, or when no image qualifies.
    """
    cfg = config if config is not None else CocoSelectionConfig()
    instances_json = Path(instances_json)
    images_dir = Path(images_dir)
    data = _load_instances(instances_json)
    if not images_dir.is_dir():
        raise InputError(f"COCO image directory not found: {images_dir}")
    cat_names = _selected_categories(data, cfg)
    coco = _index(data)

    groups: dict[str, list[CocoTarget]] = {}
    n_large_enough = 0
    for image_id in sorted(coco.imgs):
        img = coco.imgs[image_id]
        width, height = int(img["width"]), int(img["height"])
        if width < 1 or height < 1:
            raise InputError(f"COCO image {image_id} has size {width}x{height}")
        if min(width, height) < cfg.min_image_side_px:
            continue
        n_large_enough += 1
        chosen = _choose_target(coco.imgToAnns.get(image_id, []), cat_names, width, height, cfg)
        if chosen is None:
            continue
        ann, box = chosen
        target = _coco_target(data, img, ann, box, cat_names[ann["category_id"]], images_dir)
        groups.setdefault(target.category, []).append(target)

    if not groups:
        raise InputError(
            f"no image in {instances_json} has a qualifying target: {len(coco.imgs)} images, "
            f"{n_large_enough} large enough, none with a target meeting the criteria "
            f"({cfg.criteria()})"
        )
    return balanced_round_robin(groups, cfg.n, cfg.seed)


# --------------------------------------------------------------------------------------------
# Loading a scene
# --------------------------------------------------------------------------------------------


def _decode_rgb(path: Path) -> npt.NDArray[np.uint8]:
    """Decode an image file to uint8 HxWx3 RGB; raise InputError naming the file if it fails.

    Grayscale, palette, CMYK and alpha images are converted to RGB (alpha is dropped). EXIF
    orientation is not applied: COCO boxes refer to the stored pixel grid.
    """
    if not path.is_file():
        raise InputError(f"COCO image file not found: {path}")
    try:
        with Image.open(path) as img:
            img.load()
            rgb = img if img.mode == "RGB" else img.convert("RGB")
            return np.asarray(rgb, dtype=np.uint8).copy()
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        raise InputError(f"cannot decode COCO image {path}: {exc}") from None


def load_coco_scene(target: CocoTarget, depth: DepthProvider) -> Scene:
    """Decode a selected COCO image and build its ``Scene`` with depth from ``depth``.

    The decoded size must match the annotation's (else the boxes would be wrong). The scene id
    is ``coco-<image_id>``; attribution cites COCO and the image's Flickr URL; the licence is
    the image's own. A corrupt or unreadable image raises InputError naming the file, so a
    sweep can record the item as failed and go on.
    """
    image = _decode_rgb(target.file)
    h, w = image.shape[:2]
    if (w, h) != (target.width, target.height):
        raise InputError(
            f"COCO image {target.file} is {w}x{h} but its annotation says "
            f"{target.width}x{target.height}"
        )
    result = depth(image)
    if not isinstance(result, tuple) or len(result) != 3:
        raise InputError(
            f"a depth provider must return (depth_m, provenance, note), got {type(result).__name__}"
        )
    depth_m, provenance, note = result
    check_depth(depth_m, image.shape)
    if provenance not in DEPTH_PROVENANCES:
        raise InputError(f"depth provenance must be one of {DEPTH_PROVENANCES}, got {provenance!r}")
    return Scene(
        id=target.scene_id,
        image=image,
        depth_m=np.asarray(depth_m, dtype=np.float32),
        depth_provenance=provenance,
        targets=(Target(Box(*target.box), target.category),),
        attribution=target.attribution,
        licence=target.licence,
        depth_note=str(note),
        source=str(target.file),
        extra={"image_id": str(target.image_id), "annotation_id": str(target.annotation_id)},
    )
