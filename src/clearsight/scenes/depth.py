"""Depth providers: where a scene's metric depth comes from (file, stereo, stated layout, model).

Every provider returns a float32 HxW map in metres clipped to ``DEPTH_CLIP_M`` (docs/methods.md §1:
the fog model clips depth to [0.5, 80] m, so a provider that already clips gives the physics and
the reports the same numbers). Fog only sees ``beta * z``, so a global depth-scale error rescales
every reported visibility; each provider therefore says how its depth was obtained
(``DepthResult.provenance`` and ``.note``), and that travels with the scene.

torch and transformers are imported only inside ``DepthAnythingEstimator`` (importing them
costs about 10 s), so importing this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt
from PIL import Image, UnidentifiedImageError

from clearsight.models import install_hint
from clearsight.physics.medium import DEPTH_CLIP_M, clip_depth
from clearsight.scenes.model import Box, DepthProvenance
from clearsight.validate import InputError, check_image

if TYPE_CHECKING:
    from os import PathLike

#: Depth Anything V2's metric outdoor checkpoints (max depth 80 m) by size. The visibility-sweep
#: paper names the model (its metric outdoor variant), not its size.
DEPTH_SIZES: Final[dict[str, str]] = {
    size: f"depth-anything/Depth-Anything-V2-Metric-Outdoor-{size}-hf"
    for size in ("Small", "Base", "Large")
}
#: The checkpoint COCO scenes' depth is estimated with unless a run names another: Small is
#: clearsight's choice of size (:data:`DEPTH_CHOICE`), not the paper's.
DEFAULT_DEPTH_MODEL: Final[str] = DEPTH_SIZES["Small"]
#: What the default checkpoint's size is, in words (docs/methods.md §1, the manifest, the report).
DEPTH_CHOICE: Final[str] = (
    "Small is clearsight's choice of size: the paper names Depth Anything V2's metric outdoor "
    "model but no size (Small, Base, Large); V* in metres scales with the depth the checkpoint "
    "estimates, W does not. V*'s sensitivity to the size is not measured: no Depth Anything V2 "
    "weights of any size were at hand where clearsight was built, and the bundled scenes' depth "
    "is assumed or measured, never estimated (docs/methods.md §1)"
)


def depth_checkpoint(model: str, coco: bool) -> dict[str, str]:
    """The depth checkpoint ``model`` (a run's ``coco_depth_model``) as the run's manifest
    records it: ``model``, its ``size`` (of :data:`DEPTH_SIZES`; 'unknown' for another
    checkpoint, 'none' for an assumed depth), who ``chose`` it (the default: clearsight,
    :data:`DEPTH_CHOICE`; else the run's configuration) and what it is ``used_for``: every
    scene's depth in a run of ``coco`` scenes that estimates it, else nothing (the bundled
    scenes' depth is assumed or measured; ``assumed:N`` assumes it)."""
    assumed = model.startswith("assumed:")
    size = "none" if assumed else next((k for k, v in DEPTH_SIZES.items() if v == model), "unknown")
    if not coco:
        used = "nothing: the bundled scenes' depth is assumed or measured (stereo)"
    else:
        used = f"nothing: the run assumes the depth ({model})" if assumed else "every scene's depth"
    return {
        "model": model,
        "size": size,
        "chosen": DEPTH_CHOICE if model == DEFAULT_DEPTH_MODEL else "the run's coco_depth_model",
        "used_for": used,
    }


#: 16-bit PNG modes Pillow gives single-channel 16-bit images.
_PNG16_MODES: Final[frozenset[str]] = frozenset({"I;16", "I;16L", "I;16B", "I"})


class DepthResult(NamedTuple):
    """What a depth provider returns: the map, where it came from, and how (for reports)."""

    depth_m: npt.NDArray[np.float32]
    provenance: DepthProvenance
    note: str


class DepthProvider(Protocol):
    """Anything that turns a uint8 HxWx3 sRGB image into metric depth with its provenance.

    ``load_coco_scene`` and other scene loaders take one of these, so the same scenes can be
    built with estimated (``DepthAnythingEstimator``) or assumed (``AssumedDepth``) depth.
    """

    def __call__(self, image: npt.NDArray[np.uint8]) -> DepthResult: ...


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


class DepthProfile(NamedTuple):
    """What one scene's depth map says about its metres: the median and quartiles of its
    pixels' depth, and the shares of pixels at the clip bounds (:data:`DEPTH_CLIP_M`: at or
    below 0.5 m, at or beyond 80 m — where the physics no longer sees the true depth)."""

    median_m: float
    q25_m: float
    q75_m: float
    near_share: float
    far_share: float


def depth_profile(depth_m: npt.NDArray[np.floating]) -> DepthProfile:
    """The :class:`DepthProfile` of a depth map in metres (numpy's linear percentiles over
    every pixel)."""
    z = np.asarray(depth_m, dtype=np.float64).ravel()
    if z.size == 0 or not np.isfinite(z).all():
        raise InputError("a depth map must be non-empty and finite to be summarised")
    q25, med, q75 = (float(q) for q in np.percentile(z, [25, 50, 75]))
    near, far = DEPTH_CLIP_M
    return DepthProfile(med, q25, q75, float((z <= near).mean()), float((z >= far).mean()))


def fill_nearest(
    values: npt.NDArray[np.floating], valid: npt.NDArray[np.bool_]
) -> npt.NDArray[Any]:
    """Replace every invalid pixel by the value of the nearest valid pixel (Euclidean distance).

    Why nearest and not interpolation: stereo holes sit at occlusion boundaries, where the
    nearest valid neighbour is usually the background surface the hole belongs to, and nearest
    filling never invents depths outside the measured range. Ties between equidistant valid
    pixels are broken the way ``scipy.ndimage.distance_transform_edt`` breaks them
    (deterministic). Raises InputError when no pixel is valid.
    """
    if values.shape != valid.shape:
        raise InputError(f"values shape {values.shape} does not match mask shape {valid.shape}")
    if not valid.any():
        raise InputError("no valid pixel to fill from: every pixel is invalid")
    if valid.all():
        return values.copy()
    from scipy import ndimage  # lazy: scipy.ndimage costs ~0.5 s to import

    _, indices = ndimage.distance_transform_edt(~valid, return_indices=True)
    filled: npt.NDArray[Any] = values[tuple(indices)]
    return filled


def _positive(value: float, name: str) -> float:
    """Return ``value`` as a float if it is finite and > 0, else raise InputError."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise InputError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def _depth_in_range(value: float, name: str) -> float:
    """Return ``value`` in metres if it lies within ``DEPTH_CLIP_M``, else raise InputError."""
    v = _positive(value, name)
    lo, hi = DEPTH_CLIP_M
    if not lo <= v <= hi:
        raise InputError(f"{name} must lie within {lo}..{hi} m (DEPTH_CLIP_M), got {v:g} m")
    return v


# --------------------------------------------------------------------------------------------
# Measured depth: files and stereo
# --------------------------------------------------------------------------------------------


def _read_npy(path: Path) -> npt.NDArray[np.float64]:
    """Read a ``.npy`` depth map in metres; it must hold a 2-D float array."""
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read depth file {path}: {exc}") from None
    if not isinstance(arr, np.ndarray) or not np.issubdtype(arr.dtype, np.floating):
        dtype = getattr(arr, "dtype", type(arr).__name__)
        raise InputError(f"depth file {path} must hold float metres, got dtype {dtype}")
    if arr.ndim != 2:
        raise InputError(f"depth file {path} must hold an HxW map, got shape {arr.shape}")
    if np.isnan(arr).any():
        raise InputError(f"depth file {path} has {int(np.isnan(arr).sum())} NaN values")
    if (arr < 0).any():
        raise InputError(f"depth file {path} has negative depths (min {float(arr.min()):.4g} m)")
    return arr.astype(np.float64)


def _read_png16(path: Path) -> npt.NDArray[np.float64]:
    """Read a single-channel 16-bit PNG in millimetres; 0 marks a missing measurement.

    Missing pixels are filled from the nearest valid pixel (as for stereo holes); a map with no
    valid pixel is an error. An 8-bit or colour PNG is rejected: it cannot hold millimetres.
    """
    try:
        with Image.open(path) as img:
            img.load()
            mode = img.mode
            arr = np.asarray(img)
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        raise InputError(f"cannot read depth file {path}: {exc}") from None
    if mode not in _PNG16_MODES:
        raise InputError(
            f"depth PNG {path} has mode {mode!r} ({arr.dtype}); a depth PNG must be single-channel "
            "16-bit in millimetres (an 8-bit or colour PNG is an image, not depth)"
        )
    if arr.ndim != 2:
        raise InputError(f"depth PNG {path} must be HxW, got shape {arr.shape}")
    mm = arr.astype(np.float64)
    if mm.min() < 0 or mm.max() > 65535:
        raise InputError(f"depth PNG {path} has values outside 0..65535 mm")
    valid = mm > 0
    if not valid.any():
        raise InputError(f"depth PNG {path} has no valid pixel (all 0 = missing)")
    return fill_nearest(mm, valid) / 1000.0


def depth_from_file(
    path: str | PathLike[str], expected_shape: tuple[int, ...] | None = None
) -> npt.NDArray[np.float32]:
    """Load a measured depth map: ``.npy`` in metres, or a 16-bit PNG in millimetres.

    The ``.npy`` file must hold a 2-D float array without NaN or negative values (``+inf``, "no
    return", is allowed and clips to the far limit). In a PNG a
    value of 0 means "no measurement" (the KITTI / Middlebury convention); such pixels are
    filled from the nearest valid pixel. The result is clipped to ``DEPTH_CLIP_M`` and returned
    as float32. ``expected_shape`` (e.g. the image's shape; only the first two entries are used)
    is checked when given.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"depth file not found: {p}")
    suffix = p.suffix.lower()
    if suffix == ".npy":
        metres = _read_npy(p)
    elif suffix == ".png":
        metres = _read_png16(p)
    else:
        raise InputError(
            f"depth file {p} has unsupported suffix {p.suffix!r}; use .npy (metres) or "
            ".png (16-bit millimetres)"
        )
    if expected_shape is not None and metres.shape != tuple(expected_shape[:2]):
        raise InputError(
            f"depth file {p} has shape {metres.shape}, expected {tuple(expected_shape[:2])}"
        )
    return clip_depth(metres)


def depth_from_disparity(
    disparity: npt.ArrayLike, focal_px: float, baseline_m: float, doffs_px: float = 0.0
) -> npt.NDArray[np.float32]:
    """Metric depth from a rectified stereo disparity map: ``z = f * B / (d + doffs)``.

    ``f`` is the focal length in pixels, ``B`` the baseline in metres and ``doffs`` the
    x-difference of the two principal points (Middlebury's ``doffs``), all at the resolution of
    the disparity map. Pixels whose disparity is NaN, infinite or <= 0 (or whose ``d + doffs``
    is <= 0) are invalid; they are filled from the nearest valid pixel
    (``scipy.ndimage.distance_transform_edt``). The result is clipped to ``DEPTH_CLIP_M``.
    """
    f = _positive(focal_px, "focal_px")
    b = _positive(baseline_m, "baseline_m")
    doffs = float(doffs_px)
    if not math.isfinite(doffs):
        raise InputError(f"doffs_px must be finite, got {doffs_px!r}")
    d = np.asarray(disparity)
    if not (np.issubdtype(d.dtype, np.floating) or np.issubdtype(d.dtype, np.integer)):
        raise InputError(f"disparity must be a numeric array, got dtype {d.dtype}")
    if d.ndim != 2 or d.size == 0:
        raise InputError(f"disparity must be a non-empty HxW map, got shape {d.shape}")
    d = d.astype(np.float64)
    with np.errstate(invalid="ignore"):
        valid = np.isfinite(d) & (d > 0) & (d + doffs > 0)
    if not valid.any():
        raise InputError("disparity has no valid pixel (all NaN, infinite or <= 0)")
    z = np.zeros_like(d)
    z[valid] = f * b / (d[valid] + doffs)
    return clip_depth(fill_nearest(z, valid))


@dataclass(frozen=True)
class StereoCalibration:
    """The numbers that turn disparity into metres, at the resolution of the disparity map."""

    focal_px: float
    baseline_m: float
    doffs_px: float
    width_px: int
    source: str

    def scaled(self, factor: float, source: str) -> StereoCalibration:
        """The calibration for images resized by ``factor``: pixel quantities scale, B does not."""
        return StereoCalibration(
            focal_px=self.focal_px * factor,
            baseline_m=self.baseline_m,
            doffs_px=self.doffs_px * factor,
            width_px=round(self.width_px * factor),
            source=source,
        )


#: Middlebury 2014 "Motorcycle" (Scharstein et al., GCPR 2014), full size, from its calib.txt:
#: cam0 = [3979.911 0 1244.772; 0 3979.911 1019.507; 0 0 1], cam1 principal point x 1369.115,
#: doffs = 124.343, baseline = 193.001 mm, width = 2964, height = 2000, ndisp = 270.
MIDDLEBURY_MOTORCYCLE_FULL: Final[StereoCalibration] = StereoCalibration(
    focal_px=3979.911,
    baseline_m=0.193001,
    doffs_px=124.343,
    width_px=2964,
    source="Middlebury 2014 stereo, Motorcycle calib.txt (full size 2964x2000)",
)

#: Width of ``skimage.data.stereo_motorcycle()`` images: the Middlebury images downscaled by 4.
_SKIMAGE_MOTORCYCLE_WIDTH: Final[int] = 741

#: The Motorcycle calibration at skimage's resolution (factor 741 / 2964 = 1/4): focal
#: 994.978 px, doffs 31.086 px, baseline 0.193 m; skimage's docstring states the same numbers.
MOTORCYCLE_CALIBRATION: Final[StereoCalibration] = MIDDLEBURY_MOTORCYCLE_FULL.scaled(
    _SKIMAGE_MOTORCYCLE_WIDTH / MIDDLEBURY_MOTORCYCLE_FULL.width_px,
    source=(
        "Middlebury 2014 Motorcycle calib.txt (f = 3979.911 px, doffs = 124.343 px, "
        "B = 193.001 mm at width 2964) scaled by 741/2964 for skimage.data.stereo_motorcycle()"
    ),
)


def motorcycle_depth() -> tuple[npt.NDArray[np.float32], str]:
    """Measured depth of ``skimage.data.stereo_motorcycle()``'s left image, with a note.

    The disparity is Middlebury's ground truth downscaled with the images; depth uses
    ``MOTORCYCLE_CALIBRATION`` and fills the ~7 % invalid (inf) pixels from the nearest valid one.
    The motorcycle stands 2.1-2.5 m from the camera, the wall behind it at 4-5 m; the median
    over the whole image is 2.82 m.
    """
    from skimage import data  # lazy: skimage.data is only needed for this scene

    _, _, disparity = data.stereo_motorcycle()  # type: ignore[no-untyped-call]
    cal = MOTORCYCLE_CALIBRATION
    if disparity.shape[1] != cal.width_px:
        raise InputError(
            f"stereo_motorcycle disparity is {disparity.shape[1]} px wide but the calibration "
            f"is for {cal.width_px} px; scikit-image changed the data set"
        )
    invalid = float(np.mean(~(np.isfinite(disparity) & (disparity > 0))))
    depth = depth_from_disparity(disparity, cal.focal_px, cal.baseline_m, cal.doffs_px)
    note = (
        f"measured: Middlebury 2014 ground-truth disparity, z = f*B/(d + doffs) with "
        f"f = {cal.focal_px:.3f} px, B = {cal.baseline_m:.6f} m, doffs = {cal.doffs_px:.3f} px "
        f"({cal.source}); {100 * invalid:.1f} % invalid pixels filled from the nearest valid "
        f"pixel; clipped to {DEPTH_CLIP_M[0]}..{DEPTH_CLIP_M[1]} m"
    )
    return depth, note


# --------------------------------------------------------------------------------------------
# Assumed depth: a stated layout
# --------------------------------------------------------------------------------------------


def _check_layout(
    far_m: float, horizon: float | None, near_m: float | None
) -> tuple[float, float | None, float | None]:
    """Validate the numbers of an assumed layout; return them as floats."""
    far = _depth_in_range(far_m, "far_m")
    near = None if near_m is None else _depth_in_range(near_m, "near_m")
    if horizon is None:
        return far, None, near
    try:
        h = float(horizon)
    except (TypeError, ValueError):
        raise InputError(f"horizon must be a fraction of the height, got {horizon!r}") from None
    if not 0.0 < h < 1.0:
        raise InputError(
            f"horizon must lie strictly between 0 and 1 (top..bottom), got {horizon!r}"
        )
    if near is None:
        raise InputError("near_m (depth at the bottom row) is required when a horizon is given")
    if near > far:
        raise InputError(f"near_m ({near:g} m) must not exceed far_m ({far:g} m)")
    return far, h, near


def _row_depths(
    height: int, far: float, horizon: float | None, near: float | None
) -> npt.NDArray[np.float64]:
    """The depth of each row of :func:`assumed_depth`'s layout: ``far`` everywhere without a
    horizon; with one, ``far`` down to the horizon row and a level ground plane below it,
    ``near`` on the bottom row (capped at ``far``)."""
    col = np.full(height, far, dtype=np.float64)
    if horizon is not None and near is not None:
        r_h = horizon * height
        rows = np.arange(height, dtype=np.float64)
        below = rows > r_h
        col[below] = np.minimum(far, near * (height - 1 - r_h) / (rows[below] - r_h))
    return col


def assumed_depth(
    height: int,
    width: int,
    *,
    far_m: float,
    horizon: float | None = None,
    near_m: float | None = None,
    target_boxes: Sequence[Box | tuple[int, int, int, int]] = (),
    targets_m: Sequence[float] = (),
) -> npt.NDArray[np.float32]:
    """A stated depth layout for a photo without measured depth.

    Without a horizon every pixel is at ``far_m``. With a horizon fraction ``h`` in (0, 1) the
    horizon row is ``r_h = h * height``; rows ``r <= r_h`` (sky, distant scene) are at ``far_m``
    and rows below are a flat ground plane seen by a level pinhole camera, whose depth is
    inversely proportional to the distance below the horizon row:
    ``z(r) = near_m * (height - 1 - r_h) / (r - r_h)``, so ``z = near_m`` on the bottom row,
    capped at ``far_m``. Finally each target box ``(x0, y0, x1, y1)`` (exclusive ends) is set to
    its depth in ``targets_m``: an upright object standing at that distance.
    """
    if isinstance(height, bool) or not isinstance(height, (int, np.integer)) or height < 1:
        raise InputError(f"height must be an int >= 1, got {height!r}")
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
        raise InputError(f"width must be an int >= 1, got {width!r}")
    far, h, near = _check_layout(far_m, horizon, near_m)
    if len(target_boxes) != len(targets_m):
        raise InputError(
            f"got {len(target_boxes)} target boxes but {len(targets_m)} target depths; "
            "give one depth per box"
        )
    boxes = [b if isinstance(b, Box) else Box(*(int(v) for v in b)) for b in target_boxes]
    depths = [_depth_in_range(z, f"targets_m[{i}]") for i, z in enumerate(targets_m)]
    for b in boxes:
        b.check_inside(height, width)

    depth = np.repeat(_row_depths(height, far, h, near)[:, None], width, axis=1)
    for b, z in zip(boxes, depths, strict=True):
        depth[b.y0 : b.y1, b.x0 : b.x1] = z
    return depth.astype(np.float32)


@dataclass(frozen=True)
class AssumedDepth:
    """A depth provider that states a layout instead of measuring one (provenance "assumed").

    A constant (``far_m`` only) or a ground plane below a horizon (``horizon``, ``near_m``), as
    in ``assumed_depth``. Use it when no depth model is available, or to make a scene's depth
    scale explicit; visibility in metres is then only as good as the stated layout.
    """

    far_m: float
    horizon: float | None = None
    near_m: float | None = None

    def __post_init__(self) -> None:
        _check_layout(self.far_m, self.horizon, self.near_m)

    @property
    def note(self) -> str:
        """The layout in words, for reports."""
        if self.horizon is None:
            return f"assumed: every pixel at {self.far_m:g} m"
        return (
            f"assumed: {self.far_m:g} m above the horizon at {self.horizon:g} of the height, "
            f"a flat ground plane below it from {self.near_m:g} m at the bottom row "
            f"(depth inversely proportional to the distance below the horizon, capped at "
            f"{self.far_m:g} m)"
        )

    def __call__(self, image: npt.NDArray[np.uint8]) -> DepthResult:
        """The stated layout at the size of ``image``."""
        check_image(image)
        h, w = image.shape[:2]
        depth = assumed_depth(h, w, far_m=self.far_m, horizon=self.horizon, near_m=self.near_m)
        return DepthResult(depth, "assumed", self.note)


# --------------------------------------------------------------------------------------------
# Estimated depth: Depth Anything V2 (metric)
# --------------------------------------------------------------------------------------------


def _missing_model_message(model: str, reason: str) -> str:
    return (
        f"cannot load the depth model {model!r} from a local directory or the Hugging Face "
        f"cache ({reason}). clearsight never downloads at run time: fetch it once with "
        f"`clearsight fetch --model {model}` (`--depth` for {DEFAULT_DEPTH_MODEL}) where the "
        "hub is reachable and copy the Hugging Face cache (~/.cache/huggingface/hub, or "
        "$HF_HUB_CACHE) here, or pass the path of a directory holding config.json, "
        "preprocessor_config.json and the weights"
    )


class DepthAnythingEstimator:
    """Metric monocular depth with Depth Anything V2 through transformers.

    ``model`` is a Hugging Face model id found in the local cache, or a local directory saved
    with ``save_pretrained``; nothing is downloaded (``local_files_only=True``), and a missing
    model raises InputError saying how to supply one. The model is loaded when the estimator is
    built, so a missing model fails before any work starts. The paper's model is the outdoor
    metric one (max depth 80 m), of a size it does not name (the default's, Small, is
    clearsight's choice: :data:`DEPTH_CHOICE`); its absolute scale is not verified on COCO,
    hence provenance "estimated".
    """

    def __init__(
        self, model: str | PathLike[str] = DEFAULT_DEPTH_MODEL, *, device: str = "cpu"
    ) -> None:
        try:
            import torch
            from transformers import AutoImageProcessor, AutoModelForDepthEstimation
        except ImportError as exc:
            raise InputError(
                f"DepthAnythingEstimator needs torch and transformers ({exc}); {install_hint('hf')}"
            ) from None
        self.model_id = str(model)
        self.device = device
        local = Path(model).expanduser()
        source = str(local) if local.is_dir() else self.model_id
        try:
            self._processor = AutoImageProcessor.from_pretrained(  # type: ignore[no-untyped-call,unused-ignore]
                source, local_files_only=True
            )
            net = AutoModelForDepthEstimation.from_pretrained(source, local_files_only=True)
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(_missing_model_message(self.model_id, first)) from None
        if getattr(net.config, "depth_estimation_type", "metric") != "metric":
            raise InputError(
                f"depth model {self.model_id!r} estimates relative depth "
                f"({net.config.depth_estimation_type!r}), not metres; use a metric checkpoint "
                f"such as {DEFAULT_DEPTH_MODEL}"
            )
        try:
            self._model = net.to(torch.device(device)).eval()
        except (RuntimeError, ValueError) as exc:
            raise InputError(f"cannot move the depth model to device {device!r}: {exc}") from None
        self._torch = torch

    @property
    def note(self) -> str:
        """How the depth was obtained, for reports."""
        return (
            f"estimated: Depth Anything V2 metric ({self.model_id}), resized to the image, "
            f"clipped to {DEPTH_CLIP_M[0]}..{DEPTH_CLIP_M[1]} m; absolute scale not verified"
        )

    def estimate(self, image: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """Depth in metres (float32 HxW, clipped to ``DEPTH_CLIP_M``) of a uint8 HxWx3 image."""
        check_image(image)
        h, w = image.shape[:2]
        torch = self._torch
        inputs = self._processor(images=Image.fromarray(image), return_tensors="pt")
        inputs = {k: v.to(self._model.device) for k, v in inputs.items()}
        with torch.inference_mode():
            outputs = self._model(**inputs)
            post = self._processor.post_process_depth_estimation(outputs, target_sizes=[(h, w)])
        depth = post[0]["predicted_depth"].float().cpu().numpy().reshape(h, w)
        if not np.isfinite(depth).all():
            raise InputError(f"depth model {self.model_id!r} returned NaN or infinite depths")
        return clip_depth(depth)

    def __call__(self, image: npt.NDArray[np.uint8]) -> DepthResult:
        """The estimated depth with provenance "estimated" (the ``DepthProvider`` protocol)."""
        return DepthResult(self.estimate(image), "estimated", self.note)
