"""Tests for clearsight.scenes.depth: file, stereo, assumed and model depth providers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from clearsight.scenes.depth import (
    DEPTH_CLIP_M,
    MIDDLEBURY_MOTORCYCLE_FULL,
    MOTORCYCLE_CALIBRATION,
    AssumedDepth,
    DepthAnythingEstimator,
    DepthResult,
    assumed_depth,
    depth_from_disparity,
    depth_from_file,
    fill_nearest,
    motorcycle_depth,
)
from clearsight.scenes.model import Box
from clearsight.validate import InputError

# --------------------------------------------------------------------------------------------
# Import cost
# --------------------------------------------------------------------------------------------


def test_import_does_not_load_torch_or_transformers() -> None:
    code = (
        "import sys, clearsight.scenes.depth, clearsight.scenes.coco; "
        "print(sorted(m for m in ('torch', 'transformers', 'skimage') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------------------------
# fill_nearest
# --------------------------------------------------------------------------------------------


def test_fill_nearest_copies_the_nearest_valid_value() -> None:
    values = np.array([[1.0, 0.0, 0.0, 4.0]])
    valid = np.array([[True, False, False, True]])
    assert fill_nearest(values, valid).tolist() == [[1.0, 1.0, 4.0, 4.0]]


def test_fill_nearest_rejects_an_all_invalid_map() -> None:
    with pytest.raises(InputError, match="no valid pixel"):
        fill_nearest(np.zeros((2, 2)), np.zeros((2, 2), dtype=bool))


# --------------------------------------------------------------------------------------------
# depth_from_file
# --------------------------------------------------------------------------------------------


@pytest.mark.exact_floats("a float32 file read back and clipped at exact bounds: no arithmetic")
def test_npy_round_trip_in_metres_clipped(tmp_path: Path) -> None:
    metres = np.array([[0.1, 1.0], [12.5, 200.0]], dtype=np.float64)
    path = tmp_path / "d.npy"
    np.save(path, metres)
    depth = depth_from_file(path, expected_shape=(2, 2, 3))
    assert depth.dtype == np.float32
    np.testing.assert_array_equal(depth, np.array([[0.5, 1.0], [12.5, 80.0]], dtype=np.float32))


@pytest.mark.exact_floats("millimetres / 1000 is one correctly rounded division on both sides")
def test_png16_in_millimetres_with_zero_holes_filled(tmp_path: Path) -> None:
    mm = np.array([[1000, 0, 0, 4000], [1000, 0, 2500, 4000]], dtype=np.uint16)
    path = tmp_path / "d.png"
    Image.fromarray(mm).save(path)
    depth = depth_from_file(path)
    expected = np.array([[1.0, 1.0, 2.5, 4.0], [1.0, 1.0, 2.5, 4.0]], dtype=np.float32)
    # the hole at (0, 2) is nearest to 2.5 (distance 1) and to 4.0 (distance 1): the tie goes
    # to distance_transform_edt's choice; check the unambiguous holes exactly
    assert depth[0, 1] == pytest.approx(1.0)
    assert depth[1, 1] == pytest.approx(1.0)
    assert depth[0, 2] in (np.float32(2.5), np.float32(4.0))
    mask = np.ones_like(depth, dtype=bool)
    mask[0, 2] = False
    np.testing.assert_array_equal(depth[mask], expected[mask])


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="depth file not found"):
        depth_from_file(tmp_path / "nope.npy")


def test_8bit_png_is_not_depth(tmp_path: Path) -> None:
    path = tmp_path / "d.png"
    Image.fromarray(np.full((3, 3), 7, dtype=np.uint8)).save(path)
    with pytest.raises(InputError, match="16-bit"):
        depth_from_file(path)


def test_colour_png_is_not_depth(tmp_path: Path) -> None:
    path = tmp_path / "d.png"
    Image.fromarray(np.zeros((3, 3, 3), dtype=np.uint8)).save(path)
    with pytest.raises(InputError, match="'RGB'"):
        depth_from_file(path)


def test_all_zero_png_has_no_valid_pixel(tmp_path: Path) -> None:
    path = tmp_path / "d.png"
    Image.fromarray(np.zeros((3, 3), dtype=np.uint16)).save(path)
    with pytest.raises(InputError, match="no valid pixel"):
        depth_from_file(path)


def test_corrupt_png(tmp_path: Path) -> None:
    path = tmp_path / "d.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\nnot really a png")
    with pytest.raises(InputError, match="cannot read depth file"):
        depth_from_file(path)


def test_corrupt_npy(tmp_path: Path) -> None:
    path = tmp_path / "d.npy"
    path.write_bytes(b"garbage")
    with pytest.raises(InputError, match="cannot read depth file"):
        depth_from_file(path)


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.ones((2, 2), dtype=np.int32), "float metres"),
        (np.ones((2, 2, 3)), "HxW"),
        (np.array([[1.0, np.nan]]), "NaN"),
        (np.array([[1.0, -2.0]]), "negative"),
    ],
)
def test_bad_npy_contents(tmp_path: Path, array: np.ndarray, message: str) -> None:
    path = tmp_path / "d.npy"
    np.save(path, array)
    with pytest.raises(InputError, match=message):
        depth_from_file(path)


def test_shape_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "d.npy"
    np.save(path, np.ones((2, 3)))
    with pytest.raises(InputError, match=r"shape \(2, 3\), expected \(3, 2\)"):
        depth_from_file(path, expected_shape=(3, 2))


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = tmp_path / "d.tif"
    path.write_bytes(b"x")
    with pytest.raises(InputError, match="unsupported suffix"):
        depth_from_file(path)


# --------------------------------------------------------------------------------------------
# depth_from_disparity
# --------------------------------------------------------------------------------------------


def test_disparity_formula_by_hand() -> None:
    # z = f B / (d + doffs) = 100 * 0.1 / (d + 2)
    disp = np.array([[8.0, 3.0, 18.0]], dtype=np.float32)
    depth = depth_from_disparity(disp, focal_px=100.0, baseline_m=0.1, doffs_px=2.0)
    assert depth.dtype == np.float32
    np.testing.assert_allclose(depth, [[1.0, 2.0, 0.5]], rtol=1e-6)


def test_disparity_invalid_pixels_take_the_nearest_valid_depth() -> None:
    disp = np.array([[10.0, np.inf, np.nan, 0.0, -1.0, 5.0]])
    depth = depth_from_disparity(disp, focal_px=100.0, baseline_m=0.1)
    np.testing.assert_allclose(depth, [[1.0, 1.0, 1.0, 2.0, 2.0, 2.0]], rtol=1e-6)


def test_disparity_depth_is_clipped() -> None:
    disp = np.array([[1e-4, 1e4]])
    depth = depth_from_disparity(disp, focal_px=100.0, baseline_m=0.1)
    assert depth.tolist() == [list(DEPTH_CLIP_M)[::-1]]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"focal_px": 0.0, "baseline_m": 0.1}, "focal_px"),
        ({"focal_px": 100.0, "baseline_m": -0.1}, "baseline_m"),
        ({"focal_px": 100.0, "baseline_m": float("nan")}, "baseline_m"),
        ({"focal_px": 100.0, "baseline_m": 0.1, "doffs_px": float("inf")}, "doffs_px"),
    ],
)
def test_disparity_bad_calibration(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(InputError, match=message):
        depth_from_disparity(np.ones((2, 2)), **kwargs)


def test_disparity_all_invalid_and_bad_shapes() -> None:
    with pytest.raises(InputError, match="no valid pixel"):
        depth_from_disparity(np.full((2, 2), np.inf), 100.0, 0.1)
    with pytest.raises(InputError, match="HxW"):
        depth_from_disparity(np.ones(4), 100.0, 0.1)
    with pytest.raises(InputError, match="numeric"):
        depth_from_disparity(np.array([["a"]]), 100.0, 0.1)


# --------------------------------------------------------------------------------------------
# Motorcycle (Middlebury 2014 through skimage)
# --------------------------------------------------------------------------------------------


def test_motorcycle_calibration_is_the_middlebury_one_at_a_quarter_size() -> None:
    assert MIDDLEBURY_MOTORCYCLE_FULL.focal_px == 3979.911
    assert MIDDLEBURY_MOTORCYCLE_FULL.doffs_px == 124.343
    assert MIDDLEBURY_MOTORCYCLE_FULL.width_px == 2964
    cal = MOTORCYCLE_CALIBRATION
    # skimage's stereo_motorcycle docstring states the same numbers for its 741 px images
    assert cal.focal_px == pytest.approx(994.978, abs=1e-3)
    assert cal.doffs_px == pytest.approx(31.086, abs=1e-3)
    assert cal.baseline_m == pytest.approx(0.193001)
    assert cal.width_px == 741


def test_motorcycle_depth_is_plausible() -> None:
    depth, note = motorcycle_depth()
    assert depth.shape == (500, 741)
    assert depth.dtype == np.float32
    assert np.isfinite(depth).all()
    # a motorcycle in a studio, a wall behind it: every pixel within 2-5.5 m
    assert float(depth.min()) > 2.0
    assert float(depth.max()) < 5.5
    assert float(np.median(depth)) == pytest.approx(2.82, abs=0.02)
    # the motorcycle itself, in the centre, about 2.4 m away
    assert 2.0 < float(np.median(depth[150:400, 150:600])) < 3.0
    assert "994.978" in note
    assert "31.086" in note
    assert "7.3 %" in note


# --------------------------------------------------------------------------------------------
# assumed_depth and AssumedDepth
# --------------------------------------------------------------------------------------------


def test_no_horizon_is_constant() -> None:
    depth = assumed_depth(4, 5, far_m=20.0)
    assert depth.dtype == np.float32
    assert depth.shape == (4, 5)
    assert (depth == 20.0).all()


def test_ground_plane_below_the_horizon() -> None:
    # height 10, horizon 0.5 -> r_h = 5; z(r) = 2 * (9 - 5) / (r - 5), capped at 50
    depth = assumed_depth(10, 3, far_m=50.0, horizon=0.5, near_m=2.0)
    expected_rows = [50.0] * 6 + [8.0, 4.0, 8.0 / 3.0, 2.0]
    np.testing.assert_allclose(depth[:, 0], expected_rows, rtol=1e-6)
    assert (depth == depth[:, :1]).all()  # the same in every column


def test_ground_plane_is_capped_at_far() -> None:
    # r_h = 50; z(51) = 1 * 49 / 1 = 49 > 10 -> 10
    depth = assumed_depth(100, 2, far_m=10.0, horizon=0.5, near_m=1.0)
    assert depth[51, 0] == 10.0
    assert depth[-1, 0] == 1.0
    assert (np.diff(depth[:, 0]) <= 0).all()  # depth never grows towards the bottom


def test_target_boxes_are_filled() -> None:
    depth = assumed_depth(
        10,
        10,
        far_m=30.0,
        horizon=0.4,
        near_m=3.0,
        target_boxes=[(1, 2, 4, 5), Box(6, 6, 8, 10)],
        targets_m=[7.0, 12.0],
    )
    assert (depth[2:5, 1:4] == 7.0).all()
    assert (depth[6:10, 6:8] == 12.0).all()
    assert depth[0, 0] == 30.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"far_m": 0.0}, "far_m"),
        ({"far_m": 100.0}, "within"),
        ({"far_m": 20.0, "horizon": 0.0, "near_m": 2.0}, "horizon"),
        ({"far_m": 20.0, "horizon": 1.0, "near_m": 2.0}, "horizon"),
        ({"far_m": 20.0, "horizon": 0.5}, "near_m"),
        ({"far_m": 20.0, "horizon": 0.5, "near_m": 30.0}, "must not exceed"),
        ({"far_m": 20.0, "near_m": 0.1}, "near_m"),
        ({"far_m": 20.0, "target_boxes": [(0, 0, 2, 2)], "targets_m": []}, "one depth per box"),
        ({"far_m": 20.0, "target_boxes": [(0, 0, 2, 2)], "targets_m": [-1.0]}, r"targets_m\[0\]"),
        ({"far_m": 20.0, "target_boxes": [(0, 0, 20, 2)], "targets_m": [5.0]}, "outside"),
        ({"far_m": 20.0, "target_boxes": [(3, 0, 2, 2)], "targets_m": [5.0]}, "empty"),
    ],
)
def test_assumed_depth_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        assumed_depth(10, 10, **kwargs)


def test_assumed_depth_rejects_bad_sizes() -> None:
    with pytest.raises(InputError, match="height"):
        assumed_depth(0, 5, far_m=10.0)
    with pytest.raises(InputError, match="width"):
        assumed_depth(5, 2.5, far_m=10.0)  # type: ignore[arg-type]


def test_assumed_depth_provider() -> None:
    image = np.zeros((6, 4, 3), dtype=np.uint8)
    result = AssumedDepth(far_m=15.0)(image)
    assert isinstance(result, DepthResult)
    assert result.provenance == "assumed"
    assert (result.depth_m == 15.0).all()
    assert result.depth_m.shape == (6, 4)
    assert "15 m" in result.note
    layout = AssumedDepth(far_m=40.0, horizon=0.5, near_m=2.0)(image)
    assert layout.depth_m[-1, 0] == 2.0
    assert layout.depth_m[0, 0] == 40.0
    assert "ground plane" in layout.note
    with pytest.raises(InputError, match="horizon"):
        AssumedDepth(far_m=40.0, horizon=2.0, near_m=2.0)


# --------------------------------------------------------------------------------------------
# DepthAnythingEstimator with a tiny random model built offline
# --------------------------------------------------------------------------------------------


def _save_tiny_depth_anything(path: Path, depth_estimation_type: str = "metric") -> Path:
    """Build a 140k-parameter Depth Anything (max depth 200 m) and save it to ``path``.

    Weights are redrawn from N(0, 0.5) with a seeded generator so the output varies across the
    image; max_depth 200 makes part of it exceed 80 m, exercising the clip.
    """
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.models.dpt.image_processing_pil_dpt import DPTImageProcessorPil

    backbone = transformers.Dinov2Config(
        image_size=56,
        patch_size=14,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
        out_features=["stage1", "stage2", "stage3", "stage4"],
        reshape_hidden_states=False,
    )
    config = transformers.DepthAnythingConfig(
        backbone_config=backbone,
        reassemble_hidden_size=32,
        neck_hidden_sizes=[8, 16, 32, 32],
        fusion_hidden_size=16,
        head_hidden_size=8,
        depth_estimation_type=depth_estimation_type,
        max_depth=200,
    )
    model = transformers.DepthAnythingForDepthEstimation(config).eval()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
    processor = DPTImageProcessorPil(
        size={"height": 56, "width": 56}, keep_aspect_ratio=True, ensure_multiple_of=14
    )
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_depth_anything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random metric Depth Anything in a directory, as ``save_pretrained`` writes it."""
    return _save_tiny_depth_anything(tmp_path_factory.mktemp("tiny-depth-anything"))


@pytest.mark.slow
@pytest.mark.exact_floats(
    "the same weights, image, process and thread count: one computation (determinism)"
)
def test_depth_anything_tiny_model(tiny_depth_anything: Path) -> None:
    estimator = DepthAnythingEstimator(tiny_depth_anything)
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, size=(37, 53, 3), dtype=np.uint8)
    result = estimator(image)
    assert result.provenance == "estimated"
    assert str(tiny_depth_anything) in result.note
    depth = result.depth_m
    assert depth.shape == (37, 53)
    assert depth.dtype == np.float32
    lo, hi = DEPTH_CLIP_M
    assert float(depth.min()) >= lo
    assert float(depth.max()) <= hi
    assert (depth == hi).any(), "max_depth 200 should push some pixels past the 80 m clip"
    assert float(depth.std()) > 0.1, "random weights should give a non-constant map"
    np.testing.assert_array_equal(estimator.estimate(image), depth)  # deterministic
    # a fresh load of the same files gives the same map; exact: the same weights, image,
    # process and thread count, so the same computation
    np.testing.assert_array_equal(
        DepthAnythingEstimator(str(tiny_depth_anything)).estimate(image), depth
    )


@pytest.mark.slow
def test_depth_anything_rejects_a_bad_image(tiny_depth_anything: Path) -> None:
    estimator = DepthAnythingEstimator(tiny_depth_anything)
    with pytest.raises(InputError, match="uint8"):
        estimator.estimate(np.zeros((8, 8, 3), dtype=np.float32))


@pytest.mark.slow
def test_depth_anything_missing_model_says_how_to_get_one(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    # an id that is in no cache: the error must say how to supply a model, not try to download
    match = "clearsight fetch --model clearsight-tests/no-such-depth-model"
    with pytest.raises(InputError, match=match) as info:
        DepthAnythingEstimator("clearsight-tests/no-such-depth-model")
    assert "never downloads" in str(info.value)
    assert "clearsight-tests/no-such-depth-model" in str(info.value)
    with pytest.raises(InputError, match="local directory"):
        DepthAnythingEstimator(tmp_path / "no-such-model")


@pytest.mark.slow
def test_depth_anything_rejects_a_relative_depth_model(tmp_path: Path) -> None:
    path = _save_tiny_depth_anything(tmp_path / "relative", depth_estimation_type="relative")
    with pytest.raises(InputError, match="relative depth"):
        DepthAnythingEstimator(path)


def test_depth_profile_hand_computed() -> None:
    from clearsight.scenes.depth import depth_profile

    # 8 pixels: two at the near bound, one at the far bound
    depth = np.array([[0.5, 0.5, 1.0, 2.0], [3.0, 4.0, 10.0, 80.0]], dtype=np.float32)
    got = depth_profile(depth)
    # numpy's linear percentiles of the sorted 8 values: P25 at index 1.75, P75 at 5.25
    assert got.median_m == pytest.approx(2.5)
    assert (got.q25_m, got.q75_m) == pytest.approx((0.875, 5.5))
    assert (got.near_share, got.far_share) == pytest.approx((0.25, 0.125))
    with pytest.raises(InputError, match="finite"):
        depth_profile(np.array([[1.0, np.nan]]))
    with pytest.raises(InputError, match="non-empty"):
        depth_profile(np.zeros((0, 3)))
