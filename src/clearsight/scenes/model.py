"""What a scene is: a photo, its metric depth (with where the depth came from) and boxed targets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from clearsight.scenes.categories import SUPERCATEGORY
from clearsight.validate import InputError, check_depth, check_image

#: Where a depth map came from: a sensor or stereo pair, a monocular estimator, or a stated guess.
DepthProvenance = Literal["measured", "estimated", "assumed"]
DEPTH_PROVENANCES: tuple[DepthProvenance, ...] = ("measured", "estimated", "assumed")


@dataclass(frozen=True)
class Box:
    """An axis-aligned pixel box; ``x1``/``y1`` are exclusive, so width = x1 - x0."""

    x0: int
    y0: int
    x1: int
    y1: int

    def __post_init__(self) -> None:
        if not (self.x1 > self.x0 and self.y1 > self.y0):
            raise InputError(f"box {self.as_tuple()} is empty or inverted (need x1 > x0, y1 > y0)")

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.x0, self.y0, self.x1, self.y1)

    @property
    def area(self) -> int:
        return (self.x1 - self.x0) * (self.y1 - self.y0)

    def check_inside(self, height: int, width: int) -> None:
        """Raise InputError unless the box lies inside an image of ``height`` x ``width``."""
        if self.x0 < 0 or self.y0 < 0 or self.x1 > width or self.y1 > height:
            raise InputError(
                f"box {self.as_tuple()} lies outside the {width}x{height} image (x0, y0, x1, y1)"
            )


@dataclass(frozen=True)
class Target:
    """A boxed object the questions ask about, with its COCO category name."""

    box: Box
    category: str

    def __post_init__(self) -> None:
        if self.category not in SUPERCATEGORY:
            raise InputError(f"unknown COCO category {self.category!r}")


@dataclass(frozen=True, eq=False)
class Scene:
    """A photo with metric depth and at least one boxed target.

    ``depth_provenance`` says whether the depth was measured (stereo, sensor), estimated (a
    monocular model) or assumed (a stated layout); ``depth_note`` says how, in words a report can
    show. Visibility in metres is only as good as the depth scale, so the provenance travels with
    every result. ``photo`` names the photo the scene was cut from (crops of one photo share
    it, so a bootstrap resamples them together, :mod:`clearsight.sweep.numbers.crossings`); empty
    where the scene is its own photo.
    """

    id: str
    image: npt.NDArray[np.uint8]
    depth_m: npt.NDArray[np.float32]
    depth_provenance: DepthProvenance
    targets: tuple[Target, ...]
    attribution: str
    licence: str
    depth_note: str = ""
    source: str = ""
    photo: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id:
            raise InputError("scene id must be a non-empty string")
        check_image(self.image, f"scene {self.id!r} image")
        check_depth(self.depth_m, self.image.shape)
        if self.depth_m.dtype != np.float32:
            raise InputError(f"scene {self.id!r} depth must be float32, got {self.depth_m.dtype}")
        if self.depth_provenance not in DEPTH_PROVENANCES:
            raise InputError(
                f"scene {self.id!r}: depth provenance must be one of {DEPTH_PROVENANCES}, "
                f"got {self.depth_provenance!r}"
            )
        if not self.targets:
            raise InputError(f"scene {self.id!r} has no targets")
        h, w = self.image.shape[:2]
        for t in self.targets:
            t.box.check_inside(h, w)

    @property
    def height(self) -> int:
        return int(self.image.shape[0])

    @property
    def width(self) -> int:
        return int(self.image.shape[1])
