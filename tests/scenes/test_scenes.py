"""Bundled scenes: annotations, loading, depth provenance and the errors a user can hit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clearsight.scenes import bundled
from clearsight.scenes.bundled import (
    bundled_scene_ids,
    bundled_specs,
    load_bundled_scene,
    photo_missing,
)
from clearsight.scenes.categories import SUPERCATEGORY
from clearsight.scenes.model import Box, Scene, Target
from clearsight.validate import InputError


def test_annotation_file_has_enough_scenes_and_targets():
    specs = bundled_specs()
    assert len(specs) >= 20
    assert sum(len(s.targets) for s in specs.values()) >= 40
    assert len({s.id for s in specs.values()}) == len(specs)
    for spec in specs.values():
        assert spec.attribution
        assert spec.licence
        assert spec.depth["kind"] in ("stereo", "assumed")
        for t in spec.targets:
            assert t.category in SUPERCATEGORY
            assert t.box.x1 - t.box.x0 >= 20
            assert t.box.y1 - t.box.y0 >= 20


def test_every_available_scene_loads_valid():
    ids = bundled_scene_ids()
    assert len(ids) >= 6  # the package-carried photos are always present
    for scene_id in ids:
        scene = load_bundled_scene(scene_id)
        assert scene.image.dtype == np.uint8
        assert scene.image.shape[2] == 3
        assert scene.depth_m.dtype == np.float32
        assert scene.depth_m.shape == scene.image.shape[:2]
        assert 0.5 <= float(scene.depth_m.min()) <= float(scene.depth_m.max()) <= 80.0
        if scene_id == "skimage-stereo-motorcycle":
            assert scene.depth_provenance == "measured"
        else:
            assert scene.depth_provenance == "assumed"
            assert scene.depth_note.startswith("assumed")
        assert not scene.image.flags.writeable  # cached scenes are shared: read-only


def test_darknet_scenes_present_after_make_data():
    if photo_missing(bundled_specs()["darknet-dog"]):
        pytest.skip("darknet photos not extracted (apt unavailable); `make data` notes it")
    assert len(bundled_scene_ids()) == len(bundled_specs())


def test_motorcycle_depth_is_measured_and_plausible():
    scene = load_bundled_scene("skimage-stereo-motorcycle")
    box = scene.targets[0].box
    bike = scene.depth_m[box.y0 : box.y1, box.x0 : box.x1]
    assert 1.5 < float(np.median(bike)) < 3.5
    assert "Middlebury" in scene.depth_note


def test_assumed_targets_sit_at_their_stated_depth():
    spec = bundled_specs()["skimage-astronaut"]
    scene = load_bundled_scene("skimage-astronaut")
    b = spec.targets[0].box
    assert scene.depth_m[(b.y0 + b.y1) // 2, (b.x0 + b.x1) // 2] == pytest.approx(
        spec.depth["targets_m"][0]
    )


def test_unknown_scene_id_lists_known_ones():
    with pytest.raises(InputError, match=r"unknown scene id 'nope'.*skimage-astronaut"):
        load_bundled_scene("nope")


def test_missing_and_unreadable_darknet_photo(tmp_path, monkeypatch):
    monkeypatch.setenv("CLEARSIGHT_CACHE", str(tmp_path))
    load_bundled_scene.cache_clear()
    try:
        assert "darknet-dog" not in bundled_scene_ids()
        with pytest.raises(InputError, match="make data"):
            load_bundled_scene("darknet-dog")
        folder = tmp_path / bundled.DARKNET_DIR
        folder.mkdir(parents=True)
        (folder / "dog.jpg").write_bytes(b"\xff\xd8 this is not a jpeg")
        with pytest.raises(InputError, match=r"cannot read image file .*dog\.jpg"):
            load_bundled_scene("darknet-dog")
    finally:
        load_bundled_scene.cache_clear()


def _scene(**kw):
    args = {
        "id": "s",
        "image": np.zeros((10, 12, 3), np.uint8),
        "depth_m": np.ones((10, 12), np.float32),
        "depth_provenance": "assumed",
        "targets": (Target(Box(1, 1, 5, 5), "car"),),
        "attribution": "a",
        "licence": "l",
    }
    args.update(kw)
    return Scene(**args)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"targets": (Target(Box(1, 1, 15, 5), "car"),)}, "outside"),
        ({"depth_m": np.full((10, 12), np.nan, np.float32)}, "NaN"),
        ({"depth_m": np.ones((10, 11), np.float32)}, "does not match"),
        ({"depth_m": np.ones((10, 12), np.float64)}, "float32"),
        ({"image": np.zeros((10, 12, 3), np.float32)}, "uint8"),
        ({"depth_provenance": "guessed"}, "provenance"),
        ({"targets": ()}, "no targets"),
    ],
)
def test_scene_validation(kw, message):
    assert _scene().id == "s"
    with pytest.raises(InputError, match=message):
        _scene(**kw)


def test_box_and_target_validation():
    with pytest.raises(InputError, match="empty or inverted"):
        Box(5, 5, 5, 9)
    with pytest.raises(InputError, match="unknown COCO category"):
        Target(Box(0, 0, 2, 2), "spaceship")


def test_preview_contact_sheet(tmp_path: Path):
    from PIL import Image

    from clearsight.sweep.images.preview import contact_sheet

    path = contact_sheet(load_bundled_scene("skimage-chelsea"), tmp_path / "p.png")
    with Image.open(path) as im:
        assert im.format == "PNG"
        assert im.width > 1000
        assert im.height > 300
