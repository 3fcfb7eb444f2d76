"""What the perceiver sees in one image: detections related to the box, image statistics,
and the evidence text the LLM reads (steps 3-5 of :mod:`clearsight.perceiver`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
from pydantic import JsonValue

from clearsight.perceiver.box import Box, band_mask, erase_band, find_red_box
from clearsight.perceiver.colours import colour_name
from clearsight.perceiver.detector import (
    Detection,
    Detector,
    as_rgb,
    box_iou,
    classwise_nms,
)
from clearsight.perceiver.options import MIN_SIDE_PX, PerceiverOptions

#: IoU at which a detection matches the box fully (match = min(1, IoU / MATCH_IOU)).
MATCH_IOU: Final = 0.5
#: A detection is listed in the box from this IoU, or when this much of it lies in the box.
IN_BOX_IOU: Final = 0.25
IN_BOX_CONTAINMENT: Final = 0.75
#: Crops covering at least this share of the image are not detected separately.
CROP_SKIP_SHARE: Final = 0.7
_LUMA: Final = np.array([0.2126, 0.7152, 0.0722], dtype=np.float32)


@dataclass(frozen=True)
class Seen:
    """One detected object and how it relates to the box."""

    label: str
    score: float
    box: tuple[float, float, float, float]
    iou: float
    containment: float
    in_box: bool
    position: str
    colour: str

    @property
    def evidence(self) -> float:
        """``score * min(1, IoU / 0.5)``: how strongly it says what is in the box."""
        return self.score * min(1.0, self.iou / MATCH_IOU)

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "label": self.label,
            "score": round(self.score, 4),
            "box": [round(v, 1) for v in self.box],
            "iou": round(self.iou, 3),
            "in_box": self.in_box,
            "position": self.position,
            "colour": self.colour,
        }


@dataclass(frozen=True)
class Perception:
    """What the perceiver saw in one image."""

    width: int
    height: int
    box_found: bool
    box: Box
    objects: tuple[Seen, ...]
    brightness: float
    contrast: float
    box_contrast: float
    too_small: bool
    crop: Box | None
    detector_calls: int

    @property
    def in_box(self) -> list[Seen]:
        return sorted((o for o in self.objects if o.in_box), key=lambda o: -o.evidence)

    @property
    def elsewhere(self) -> list[Seen]:
        return sorted((o for o in self.objects if not o.in_box), key=lambda o: -o.score)


def position(box: Sequence[float], width: int, height: int) -> str:
    """Coarse position of a box's centre in thirds of the image: ``top left`` .. ``centre``."""
    cx = (box[0] + box[2]) / 2 / max(width, 1)
    cy = (box[1] + box[3]) / 2 / max(height, 1)
    vertical = "top" if cy < 1 / 3 else "bottom" if cy > 2 / 3 else ""
    horizontal = "left" if cx < 1 / 3 else "right" if cx > 2 / 3 else ""
    return " ".join(p for p in (vertical, horizontal) if p) or "centre"


def _luma(image: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    return ((image.astype(np.float32) / 255.0) @ _LUMA).astype(np.float32)


def _stats(values: npt.NDArray[np.float32]) -> tuple[float, float]:
    if values.size == 0:
        return 0.0, 0.0
    return float(values.mean()), float(values.std())


def _crop_box(box: Box, factor: float, min_px: int, width: int, height: int) -> Box:
    """``box`` enlarged ``factor`` times about its centre, at least ``min_px`` a side (as far as
    the image allows), shifted inside the image."""
    x0, y0, x1, y1 = box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    cw = min(width, max(min_px, round((x1 - x0) * factor)))
    ch = min(height, max(min_px, round((y1 - y0) * factor)))
    left = int(min(max(round(cx - cw / 2), 0), width - cw))
    top = int(min(max(round(cy - ch / 2), 0), height - ch))
    return left, top, left + cw, top + ch


def _relate(
    det: Detection, box: Box, image: npt.NDArray[np.uint8], width: int, height: int
) -> Seen:
    bx = np.asarray(det.box, np.float64)
    iou = float(box_iou(bx, box)[0, 0])
    ix = max(0.0, min(bx[2], box[2]) - max(bx[0], box[0]))
    iy = max(0.0, min(bx[3], box[3]) - max(bx[1], box[1]))
    area = max((bx[2] - bx[0]) * (bx[3] - bx[1]), 1e-9)
    containment = float(ix * iy / area)
    # the central half of the detection for its colour (less background)
    w, h = bx[2] - bx[0], bx[3] - bx[1]
    cx0, cx1 = int(bx[0] + w / 4), int(np.ceil(bx[2] - w / 4))
    cy0, cy1 = int(bx[1] + h / 4), int(np.ceil(bx[3] - h / 4))
    colour = colour_name(image[cy0 : max(cy1, cy0 + 1), cx0 : max(cx1, cx0 + 1)])
    return Seen(
        label=det.label,
        score=float(det.score),
        box=det.box,
        iou=iou,
        containment=containment,
        in_box=iou >= IN_BOX_IOU or containment >= IN_BOX_CONTAINMENT,
        position=position(det.box, width, height),
        colour=colour,
    )


def _detect(
    clean: npt.NDArray[np.uint8], box: Box | None, detector: Detector, options: PerceiverOptions
) -> tuple[list[Detection], Box | None, int]:
    """Detect objects in the whole image and, when a box was found and its crop is small
    enough to be worth it, again in the crop around the box (small objects near the box are
    found there); overlapping detections of one label are merged by NMS. Returns the
    detections (in image coordinates), the crop looked at (None: none) and the detector calls."""
    height, width = clean.shape[:2]
    threshold = options.score_threshold
    detections = list(detector.detect(clean, threshold))
    calls = 1
    crop: Box | None = None
    if box is not None:
        crop = _crop_box(box, options.crop_factor, options.min_crop_px, width, height)
        share = (crop[2] - crop[0]) * (crop[3] - crop[1]) / (width * height)
        if share < CROP_SKIP_SHARE and min(crop[2] - crop[0], crop[3] - crop[1]) >= MIN_SIDE_PX:
            x0, y0, x1, y1 = crop
            calls += 1
            for d in detector.detect(clean[y0:y1, x0:x1], threshold):
                b = d.box
                detections.append(
                    Detection(d.label, d.score, (b[0] + x0, b[1] + y0, b[2] + x0, b[3] + y0))
                )
        else:
            crop = None
    if detections:
        kept = classwise_nms(
            [d.box for d in detections],
            [d.score for d in detections],
            [d.label for d in detections],
        )
        detections = [detections[int(k)] for k in kept]
    return detections, crop, calls


def perceive(
    image: npt.NDArray[np.uint8], detector: Detector, options: PerceiverOptions
) -> Perception:
    """Find the box, detect objects in the image and around the box, relate them to the box
    and measure brightness and contrast (see the module docstring)."""
    rgb = as_rgb(image)
    height, width = rgb.shape[:2]
    thickness = options.box_thickness_px
    found = find_red_box(rgb, thickness)
    box: Box = found if found is not None else (0, 0, width, height)
    clean = erase_band(rgb, box, thickness) if found is not None and options.erase_box else rgb
    band = band_mask((height, width), box, thickness) if found is not None else None
    luma = _luma(clean)
    brightness, contrast = _stats(luma if band is None else luma[~band])
    box_contrast = _stats(luma[box[1] : box[3], box[0] : box[2]])[1]
    too_small = min(width, height) < MIN_SIDE_PX
    detections: list[Detection] = []
    crop: Box | None = None
    calls = 0
    if not too_small:
        detections, crop, calls = _detect(
            clean, box if found is not None else None, detector, options
        )
    objects = tuple(_relate(d, box, clean, width, height) for d in detections)
    return Perception(
        width=width,
        height=height,
        box_found=found is not None,
        box=box,
        objects=objects,
        brightness=brightness,
        contrast=contrast,
        box_contrast=box_contrast,
        too_small=too_small,
        crop=crop,
        detector_calls=calls,
    )


# --------------------------------------------------------------------------------------------
# Evidence text
# --------------------------------------------------------------------------------------------


def _grouped(objects: Sequence[Seen]) -> list[tuple[Seen, int]]:
    """The best object of each category (in the given order) and how many there are."""
    best: dict[str, Seen] = {}
    count: dict[str, int] = {}
    for o in objects:
        best.setdefault(o.label, o)
        count[o.label] = count.get(o.label, 0) + 1
    return [(o, count[o.label]) for o in best.values()]


def _item(o: Seen, n: int, where: bool, colour: bool) -> str:
    details = [f"{o.score:.2f}"]
    if where:
        details.append(o.position)
    if colour:
        details.append(o.colour)
    times = f" x{n}" if n > 1 else ""
    return f"{o.label}{times} ({', '.join(details)})"


def evidence_text(p: Perception, *, free_form: bool = False, max_items: int = 4) -> str:
    """The detector's findings as a short text (format in the module docstring).

    ``free_form`` adds the dominant colour of each object (questions like "what colour is the
    car?"); counts are always given (``dog x2``).
    """
    if p.too_small:
        return (
            f"The image is too small ({p.width}x{p.height} px) for the detector: nothing can "
            f"be recognised. Image brightness {p.brightness:.2f}, contrast {p.contrast:.2f}."
        )
    parts = []
    if p.box_found:
        inside = _grouped(p.in_box)[:max_items]
        listed = ", ".join(_item(o, n, False, free_form) for o, n in inside)
        parts.append(f"Inside the red box: {listed or 'nothing detected'}.")
        others = _grouped(p.elsewhere)[:max_items]
        if others:
            parts.append(
                f"Elsewhere: {', '.join(_item(o, n, True, free_form) for o, n in others)}."
            )
    else:
        found = _grouped(sorted(p.objects, key=lambda o: -o.score))[: 2 * max_items]
        listed = ", ".join(_item(o, n, True, free_form) for o, n in found)
        parts.append(f"No red box found. In the image: {listed or 'nothing detected'}.")
    parts.append(f"Image brightness {p.brightness:.2f}, contrast {p.contrast:.2f}.")
    return " ".join(parts)
