"""Tests for clearsight.scenes.coco: target selection from a COCO JSON and scene loading.

The fixture is a small COCO-format annotation file written by hand around real photos that ship
with scikit-image (saved as JPEG/PNG in ``tmp_path``), plus images that exist only in the JSON
(selection never opens image files).
"""

from __future__ import annotations

import dataclasses
import json
import pickle
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image
from pydantic import ValidationError
from skimage import data as _skimage_data

from clearsight.scenes.coco import (
    CocoSelectionConfig,
    CocoTarget,
    balanced_round_robin,
    coco_bbox_to_box,
    load_coco_scene,
    select_coco_targets,
)
from clearsight.scenes.depth import AssumedDepth, DepthResult
from clearsight.scenes.model import Box
from clearsight.validate import InputError

skdata: Any = _skimage_data  # scikit-image's data functions are untyped

CATEGORIES = [
    {"id": 1, "name": "person", "supercategory": "person"},
    {"id": 2, "name": "bicycle", "supercategory": "vehicle"},
    {"id": 3, "name": "car", "supercategory": "vehicle"},
    {"id": 4, "name": "motorcycle", "supercategory": "vehicle"},
    {"id": 6, "name": "bus", "supercategory": "vehicle"},
    {"id": 8, "name": "truck", "supercategory": "vehicle"},
    {"id": 10, "name": "traffic light", "supercategory": "outdoor"},
    {"id": 11, "name": "fire hydrant", "supercategory": "outdoor"},
    {"id": 13, "name": "stop sign", "supercategory": "outdoor"},
    {"id": 15, "name": "bench", "supercategory": "outdoor"},
    {"id": 17, "name": "cat", "supercategory": "animal"},
    {"id": 47, "name": "cup", "supercategory": "kitchen"},
]
LICENSES = [
    {
        "id": 1,
        "name": "Attribution-NonCommercial-ShareAlike License",
        "url": "http://creativecommons.org/licenses/by-nc-sa/2.0/",
    },
    {"id": 4, "name": "Attribution License", "url": "http://creativecommons.org/licenses/by/2.0/"},
]
FLICKR_101 = "http://farm4.staticflickr.com/0000/101_example.jpg"
COCO_URL_109 = "http://images.cocodataset.org/val2017/000000000109.jpg"

#: What the default configuration must select from the fixture:
#: image id -> (category, annotation id, integer box).
EXPECTED = {
    101: ("motorcycle", 1001, (100, 40, 621, 461)),
    106: ("bus", 1011, (40, 40, 440, 340)),
    107: ("fire hydrant", 1012, (100, 100, 250, 350)),
    108: ("stop sign", 1013, (10, 10, 110, 110)),
    109: ("truck", 1014, (300, 100, 500, 350)),
    111: ("car", 1017, (100, 100, 400, 300)),
}


def _image(
    image_id: int, file_name: str, width: int, height: int, licence: int = 1, **urls: str
) -> dict[str, Any]:
    return {
        "id": image_id,
        "file_name": file_name,
        "width": width,
        "height": height,
        "license": licence,
        **urls,
    }


def _ann(
    ann_id: int, image_id: int, category_id: int, bbox: list[float], iscrowd: int = 0
) -> dict[str, Any]:
    return {
        "id": ann_id,
        "image_id": image_id,
        "category_id": category_id,
        "bbox": bbox,
        "area": bbox[2] * bbox[3],
        "iscrowd": iscrowd,
        "segmentation": [],
    }


def _dataset() -> dict[str, Any]:
    """The hand-written instances file; comments say why each annotation is (not) chosen."""
    images = [
        _image(101, "motorcycle.jpg", 741, 500, 4, flickr_url=FLICKR_101, coco_url="x"),
        _image(102, "rocket.jpg", 640, 427),
        _image(103, "coffee.jpg", 600, 400),
        _image(104, "astronaut.jpg", 512, 512),
        _image(105, "chelsea.jpg", 451, 300),
        _image(106, "corrupt.jpg", 640, 480),
        _image(107, "camera_gray.jpg", 512, 512),
        _image(108, "coffee_cmyk.jpg", 600, 400),
        _image(109, "rocket_rgba.png", 640, 427, coco_url=COCO_URL_109),
        _image(110, "json_only_110.jpg", 640, 480),
        _image(111, "json_only_111.jpg", 640, 480, 99),
        _image(112, "json_only_112.jpg", 640, 480),
    ]
    anns = [
        # 101: the motorcycle is the largest qualifying box (0.59 of the image)
        _ann(1001, 101, 4, [100.4, 40.6, 520.2, 420.1]),
        _ann(1002, 101, 10, [20, 20, 10, 25]),  # traffic light: sides < 32 px
        _ann(1003, 101, 1, [300, 50, 100, 200]),  # person: not a selected super-category
        _ann(1004, 101, 15, [150, 100, 100, 100]),  # bench: qualifies, smaller, covers 5 %
        # 102: a crowd and a truck touching the left border: nothing
        _ann(1005, 102, 3, [50, 50, 300, 200], iscrowd=1),
        _ann(1006, 102, 8, [0, 100, 200, 150]),
        # 103: a cup (kitchen): nothing
        _ann(1007, 103, 47, [200, 100, 200, 200]),
        # 104: a person, and a stop sign of 1.4 % of the image: nothing
        _ann(1008, 104, 1, [100, 0, 300, 512]),
        _ann(1009, 104, 13, [400, 30, 60, 60]),
        # 105: a bench that qualifies, in an image whose shorter side is 300 < 320 px
        _ann(1010, 105, 15, [50, 50, 200, 150]),
        # 106-109: one qualifying target each (106's file is corrupt)
        _ann(1011, 106, 6, [40, 40, 400, 300]),
        _ann(1012, 107, 11, [100, 100, 150, 250]),
        _ann(1013, 108, 13, [10, 10, 100, 100]),
        _ann(1014, 109, 8, [300, 100, 200, 250]),
        # 110: the car is largest, but a bus covers 75 % of it: image skipped
        _ann(1015, 110, 3, [100, 100, 300, 200]),
        _ann(1016, 110, 6, [120, 110, 250, 180]),
        # 111: two cars overlap (same category: allowed); the larger is chosen
        _ann(1017, 111, 3, [100, 100, 300, 200]),
        _ann(1018, 111, 3, [150, 150, 250, 150]),
        # 112: a bus filling the frame (area 1.0 > 0.8) and a small traffic light: nothing
        _ann(1019, 112, 6, [0.0, 0.0, 640.0, 480.0]),
        _ann(1020, 112, 10, [300.2, 100.7, 39.6, 80.0]),
        # an annotation of a category the file does not list is ignored
        _ann(1021, 111, 999, [100, 100, 300, 300]),
    ]
    return {
        "info": {"description": "clearsight test fixture"},
        "licenses": LICENSES,
        "images": images,
        "annotations": anns,
        "categories": CATEGORIES,
    }


def _save_photos(images_dir: Path) -> None:
    """Write the photo files the fixture names (real skimage photos; one corrupt JPEG)."""
    images_dir.mkdir(parents=True, exist_ok=True)
    left, _, _ = skdata.stereo_motorcycle()
    Image.fromarray(left).save(images_dir / "motorcycle.jpg", quality=90)
    Image.fromarray(skdata.rocket()).save(images_dir / "rocket.jpg", quality=90)
    Image.fromarray(skdata.coffee()).save(images_dir / "coffee.jpg", quality=90)
    Image.fromarray(skdata.astronaut()).save(images_dir / "astronaut.jpg", quality=90)
    Image.fromarray(skdata.chelsea()).save(images_dir / "chelsea.jpg", quality=90)
    Image.fromarray(skdata.camera()).save(images_dir / "camera_gray.jpg", quality=90)
    Image.fromarray(skdata.coffee()).convert("CMYK").save(images_dir / "coffee_cmyk.jpg")
    Image.fromarray(skdata.rocket()).convert("RGBA").save(images_dir / "rocket_rgba.png")
    # a real JPEG cut short: the header parses, the pixels do not
    whole = (images_dir / "rocket.jpg").read_bytes()
    (images_dir / "corrupt.jpg").write_bytes(whole[:2000])


@pytest.fixture(scope="module")
def coco_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("coco")
    _save_photos(root / "val2017")
    (root / "instances_val2017.json").write_text(json.dumps(_dataset()))
    return root


def _paths(root: Path) -> tuple[Path, Path]:
    return root / "instances_val2017.json", root / "val2017"


def _write(tmp_path: Path, dataset: Any, name: str = "instances.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(dataset))
    return path


def _by_image(targets: list[CocoTarget]) -> dict[int, tuple[str, int, tuple[int, ...]]]:
    return {t.image_id: (t.category, t.annotation_id, t.box) for t in targets}


# --------------------------------------------------------------------------------------------
# Configuration and helpers
# --------------------------------------------------------------------------------------------


def test_default_config_matches_the_paper() -> None:
    cfg = CocoSelectionConfig()
    assert cfg.supercategories == ("vehicle", "outdoor")
    assert (cfg.min_area_frac, cfg.max_area_frac) == (0.02, 0.8)
    assert (cfg.min_box_side_px, cfg.min_image_side_px, cfg.n, cfg.seed) == (32, 320, 1000, 0)
    for name, field in CocoSelectionConfig.model_fields.items():
        assert field.description, f"field {name} needs a description"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_area_frac": 0.5, "max_area_frac": 0.5}, "must be below"),
        ({"supercategories": ("vehicles",)}, "unknown COCO super-categories"),
        ({"supercategories": ()}, "at least one"),
        ({"n": 0}, "greater than or equal to 1"),
        ({"max_area_frac": 1.5}, "less than or equal to 1"),
        ({"colour": "red"}, "Extra inputs"),
    ],
)
def test_config_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        CocoSelectionConfig(**kwargs)


def test_bbox_conversion_covers_the_float_box() -> None:
    assert coco_bbox_to_box([10.2, 20.7, 100.5, 50.1], 200, 200) == Box(10, 20, 111, 71)
    assert coco_bbox_to_box([10, 20, 30, 40], 200, 200) == Box(10, 20, 40, 60)
    assert coco_bbox_to_box([-3.5, 5, 20, 500], 100, 100) == Box(0, 5, 17, 100)
    assert coco_bbox_to_box([200, 200, 10, 10], 100, 100) is None
    assert coco_bbox_to_box([5, 5, 0, 10], 100, 100) is None
    with pytest.raises(InputError, match=r"\[x, y, w, h\]"):
        coco_bbox_to_box([1, 2, 3], 100, 100)
    with pytest.raises(InputError, match="w, h >= 0"):
        coco_bbox_to_box([1, 2, -3, 4], 100, 100)


def test_round_robin_by_hand() -> None:
    groups = {"a": [1, 2, 3], "b": [10], "c": [20, 21]}
    drawn = balanced_round_robin(groups, n=10, seed=0)
    assert sorted(drawn) == [1, 2, 3, 10, 20, 21]
    # round 1 holds one item of every group, round 2 one of a and c, round 3 the last a
    assert {x // 10 for x in drawn[:3]} == {0, 1, 2}
    assert {x // 10 for x in drawn[3:5]} == {0, 2}
    assert drawn[5] in (1, 2, 3)
    assert balanced_round_robin(groups, n=4, seed=0) == drawn[:4]
    assert balanced_round_robin({}, n=3, seed=0) == []


# --------------------------------------------------------------------------------------------
# Selection on the photo fixture
# --------------------------------------------------------------------------------------------


def test_selection_exact(coco_dir: Path) -> None:
    json_path, images_dir = _paths(coco_dir)
    targets = select_coco_targets(json_path, images_dir, CocoSelectionConfig())
    assert _by_image(targets) == EXPECTED
    by_id = {t.image_id: t for t in targets}
    moto = by_id[101]
    assert moto.scene_id == "coco-101"
    assert moto.file == images_dir / "motorcycle.jpg"
    assert (moto.width, moto.height) == (741, 500)
    assert moto.url == FLICKR_101  # the Flickr URL wins over the COCO URL
    assert moto.licence == "Attribution License (http://creativecommons.org/licenses/by/2.0/)"
    assert by_id[109].url == COCO_URL_109
    assert by_id[107].url == ""
    assert by_id[111].licence.startswith("unknown")
    assert all(isinstance(v, int) for t in targets for v in t.box)


def test_selection_is_deterministic_and_picklable(coco_dir: Path) -> None:
    json_path, images_dir = _paths(coco_dir)
    first = select_coco_targets(json_path, images_dir, CocoSelectionConfig(seed=3))
    again = select_coco_targets(json_path, images_dir, CocoSelectionConfig(seed=3))
    assert first == again
    assert pickle.loads(pickle.dumps(first)) == first


def test_selection_does_not_depend_on_json_order(coco_dir: Path, tmp_path: Path) -> None:
    json_path, images_dir = _paths(coco_dir)
    shuffled = _dataset()
    rng = np.random.default_rng(7)
    for key in ("images", "annotations", "categories"):
        shuffled[key] = [shuffled[key][i] for i in rng.permutation(len(shuffled[key]))]
    other = _write(tmp_path, shuffled)
    for seed in (0, 1, 2):
        cfg = CocoSelectionConfig(seed=seed)
        assert select_coco_targets(other, images_dir, cfg) == select_coco_targets(
            json_path, images_dir, cfg
        )


def test_n_takes_a_prefix_of_the_draw(coco_dir: Path) -> None:
    json_path, images_dir = _paths(coco_dir)
    full = select_coco_targets(json_path, images_dir, CocoSelectionConfig(n=100))
    three = select_coco_targets(json_path, images_dir, CocoSelectionConfig(n=3))
    assert len(full) == 6  # fewer qualify than asked for: all of them
    assert three == full[:3]


def test_rules_can_be_relaxed(coco_dir: Path) -> None:
    json_path, images_dir = _paths(coco_dir)
    relaxed = CocoSelectionConfig(
        min_image_side_px=300, border_margin_px=0, max_other_cover=1.0, min_area_frac=0.01
    )
    got = _by_image(select_coco_targets(json_path, images_dir, relaxed))
    assert got[105] == ("bench", 1010, (50, 50, 250, 200))  # the 300 px image now counts
    assert got[102] == ("truck", 1006, (0, 100, 200, 250))  # the border box now counts
    assert got[110] == ("car", 1015, (100, 100, 400, 300))  # the covered car now counts
    assert got[104] == ("stop sign", 1009, (400, 30, 460, 90))  # 1.4 % >= 1 %
    assert got[112] == ("traffic light", 1020, (300, 100, 340, 181))
    only_outdoor = CocoSelectionConfig(supercategories=("outdoor",))
    got = _by_image(select_coco_targets(json_path, images_dir, only_outdoor))
    # 101's motorcycle no longer qualifies, so its bench becomes the target
    assert got == {
        101: ("bench", 1004, (150, 100, 250, 200)),
        107: EXPECTED[107],
        108: EXPECTED[108],
    }


# --------------------------------------------------------------------------------------------
# Frequency balancing on a larger JSON-only fixture
# --------------------------------------------------------------------------------------------


def _balancing_dataset(counts: dict[int, int]) -> dict[str, Any]:
    """Images with one qualifying target each: ``counts`` maps category id -> number of images."""
    images, anns = [], []
    image_id = 1
    for cat_id, count in counts.items():
        for _ in range(count):
            images.append(_image(image_id, f"{image_id}.jpg", 640, 480))
            anns.append(_ann(10_000 + image_id, image_id, cat_id, [100, 100, 200, 200]))
            image_id += 1
    return {"images": images, "annotations": anns, "categories": CATEGORIES, "licenses": []}


BALANCE_COUNTS = {3: 7, 6: 2, 10: 4, 15: 1}  # car 7, bus 2, traffic light 4, bench 1


@pytest.fixture
def balance_json(tmp_path: Path) -> Path:
    return _write(tmp_path, _balancing_dataset(BALANCE_COUNTS))


def test_balancing_counts(balance_json: Path, tmp_path: Path) -> None:
    four = select_coco_targets(balance_json, tmp_path, CocoSelectionConfig(n=4))
    assert Counter(t.category for t in four) == {"car": 1, "bus": 1, "traffic light": 1, "bench": 1}
    eight = Counter(t.category for t in select_coco_targets(balance_json, tmp_path, _n(8)))
    # bench runs out after 1, bus after 2; car and traffic light share the rest within one
    assert eight["bench"] == 1
    assert eight["bus"] == 2
    assert sorted([eight["car"], eight["traffic light"]]) == [2, 3]
    eleven = Counter(t.category for t in select_coco_targets(balance_json, tmp_path, _n(11)))
    assert eleven == {"car": 4, "traffic light": 4, "bus": 2, "bench": 1}
    everything = select_coco_targets(balance_json, tmp_path, _n(1000))
    assert len(everything) == 14
    assert len({t.image_id for t in everything}) == 14


def _n(n: int, seed: int = 0) -> CocoSelectionConfig:
    return CocoSelectionConfig(n=n, seed=seed)


def test_every_prefix_is_balanced(balance_json: Path, tmp_path: Path) -> None:
    drawn = select_coco_targets(balance_json, tmp_path, _n(1000, seed=5))
    available = {"car": 7, "bus": 2, "traffic light": 4, "bench": 1}
    for k in range(1, len(drawn) + 1):
        counts = Counter(t.category for t in drawn[:k])
        open_counts = [counts[c] for c in available if counts[c] < available[c]]
        if open_counts:
            # a category that has not run out is never more than one behind any other
            assert max(counts.values()) - min(open_counts) <= 1


def test_another_seed_gives_another_order(balance_json: Path, tmp_path: Path) -> None:
    a = [t.image_id for t in select_coco_targets(balance_json, tmp_path, _n(1000, seed=0))]
    b = [t.image_id for t in select_coco_targets(balance_json, tmp_path, _n(1000, seed=1))]
    assert a != b
    assert sorted(a) == sorted(b)
    firsts = {
        tuple(t.category for t in select_coco_targets(balance_json, tmp_path, _n(4, seed=s)))
        for s in range(6)
    }
    assert len(firsts) > 1, "the category order should depend on the seed"


# --------------------------------------------------------------------------------------------
# Selection errors
# --------------------------------------------------------------------------------------------


def test_missing_json_and_directory(coco_dir: Path, tmp_path: Path) -> None:
    json_path, images_dir = _paths(coco_dir)
    with pytest.raises(InputError, match="annotation file not found"):
        select_coco_targets(tmp_path / "nope.json", images_dir)
    with pytest.raises(InputError, match="image directory not found"):
        select_coco_targets(json_path, tmp_path / "no-images")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "cannot read COCO annotation file"),
        ("[1, 2]", "must hold a JSON object"),
        (json.dumps({"images": [], "categories": []}), "no 'annotations' list"),
        (
            json.dumps({"images": [{"id": 1}], "annotations": [], "categories": []}),
            r"images\[0\] must be an object with fields",
        ),
        (
            json.dumps(
                {
                    "images": [],
                    "annotations": [{"id": 1, "image_id": 1, "category_id": 3}],
                    "categories": [],
                }
            ),
            r"annotations\[0\].*bbox",
        ),
    ],
)
def test_malformed_json(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        select_coco_targets(path, tmp_path)


def test_no_qualifying_target_names_the_criteria(coco_dir: Path) -> None:
    json_path, images_dir = _paths(coco_dir)
    with pytest.raises(InputError, match=r"no image .* qualifying target") as info:
        select_coco_targets(json_path, images_dir, CocoSelectionConfig(supercategories=("sports",)))
    message = str(info.value)
    assert "super-categories ['sports']" in message
    assert "12 images, 11 large enough" in message
    assert "box sides >= 32 px" in message


def test_unknown_category_name_is_an_error(tmp_path: Path) -> None:
    dataset = _balancing_dataset({3: 1})
    dataset["categories"] = [
        *CATEGORIES,
        {"id": 99, "name": "hovercraft", "supercategory": "vehicle"},
    ]
    with pytest.raises(InputError, match="'hovercraft'"):
        select_coco_targets(_write(tmp_path, dataset), tmp_path)


@pytest.mark.parametrize(
    ("where", "field", "value", "message"),
    [
        ("categories", "id", "three", r"categories\[0\]\.id must be a whole number, got 'three'"),
        ("images", "width", "wide", r"images\[0\]\.width must be a whole number, got 'wide'"),
        ("images", "height", 0, r"images\[0\]\.height must be a whole number >= 1, got 0"),
        ("images", "id", 1.5, r"images\[0\]\.id must be a whole number, got 1\.5"),
        ("annotations", "category_id", None, r"annotations\[0\]\.category_id must be a whole"),
        ("annotations", "bbox", [1, "a", 2, 3], r"annotations\[0\]\.bbox must be \[x, y, w, h\]"),
        ("images", "file_name", 7, r"images\[0\]\.file_name must be text, got 7"),
    ],
)
def test_a_field_of_the_wrong_type_is_one_line_naming_file_and_field(
    tmp_path: Path, where: str, field: str, value: Any, message: str
) -> None:
    dataset = _balancing_dataset({3: 2})
    dataset[where] = [dict(dataset[where][0], **{field: value}), *dataset[where][1:]]
    path = _write(tmp_path, dataset)
    with pytest.raises(InputError, match=message) as info:
        select_coco_targets(path, tmp_path)
    assert str(info.value).startswith(f"COCO annotation file {path}: ")


@pytest.mark.parametrize("where", ["images", "annotations", "categories"])
def test_a_repeated_id_is_refused_naming_it(tmp_path: Path, where: str) -> None:
    dataset = _balancing_dataset({3: 2, 6: 1})
    first, second = dataset[where][:2]
    dataset[where] = [first, dict(second, id=first["id"]), *dataset[where][2:]]
    path = _write(tmp_path, dataset)
    with pytest.raises(InputError, match=rf"duplicate COCO \w+ id {first['id']}: ") as info:
        select_coco_targets(path, tmp_path)
    assert f"{path} {where}[0] and again in {path} {where}[1]" in str(info.value)


def test_a_bad_coco_field_stops_the_sweep_before_its_run_exists(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app

    dataset = _balancing_dataset({3: 2})
    dataset["images"][0]["width"] = "640px"
    path = _write(tmp_path, dataset)
    config = tmp_path / "coco.yaml"
    config.write_text(
        f"scenes: coco\ncoco_annotations: {path}\ncoco_images: {tmp_path}\n"
        "coco_depth_model: 'assumed:10'\n"
    )
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["sweep", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        f"error: COCO annotation file {path}: images[0].width must be a whole number, got '640px'"
    ]
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# load_coco_scene
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def targets(coco_dir: Path) -> dict[int, CocoTarget]:
    json_path, images_dir = _paths(coco_dir)
    return {t.image_id: t for t in select_coco_targets(json_path, images_dir)}


def test_load_scene(targets: dict[int, CocoTarget]) -> None:
    target = targets[101]
    scene = load_coco_scene(target, AssumedDepth(far_m=20.0))
    assert scene.id == "coco-101"
    assert scene.image.shape == (500, 741, 3)
    assert scene.image.dtype == np.uint8
    np.testing.assert_array_equal(scene.image, np.asarray(Image.open(target.file).convert("RGB")))
    assert scene.depth_m.dtype == np.float32
    assert (scene.depth_m == 20.0).all()
    assert scene.depth_provenance == "assumed"
    assert scene.depth_note == "assumed: every pixel at 20 m"
    assert len(scene.targets) == 1
    assert scene.targets[0].category == "motorcycle"
    assert scene.targets[0].box == Box(100, 40, 621, 461)
    assert scene.attribution == f"COCO 2017 (Lin et al. 2014), image 101 from Flickr ({FLICKR_101})"
    assert scene.licence == "Attribution License (http://creativecommons.org/licenses/by/2.0/)"
    assert scene.source == str(target.file)
    assert scene.extra == {"image_id": "101", "annotation_id": "1001"}


def test_load_scene_converts_grey_cmyk_and_rgba_to_rgb(targets: dict[int, CocoTarget]) -> None:
    depth = AssumedDepth(far_m=30.0, horizon=0.4, near_m=3.0)
    grey = load_coco_scene(targets[107], depth)
    assert grey.image.shape == (512, 512, 3)
    assert (grey.image[..., 0] == grey.image[..., 1]).all()
    assert (grey.image[..., 1] == grey.image[..., 2]).all()
    assert grey.depth_m[-1, 0] == 3.0
    cmyk = load_coco_scene(targets[108], depth)
    assert cmyk.image.shape == (400, 600, 3)
    rgba = load_coco_scene(targets[109], depth)
    np.testing.assert_array_equal(rgba.image, skdata.rocket())  # PNG: lossless, alpha dropped
    assert rgba.attribution.endswith(f"({COCO_URL_109})")


def test_load_scene_with_an_estimated_depth_provider(targets: dict[int, CocoTarget]) -> None:
    def fake_estimator(image: npt.NDArray[np.uint8]) -> DepthResult:
        h, w = image.shape[:2]
        ramp = np.linspace(1.0, 50.0, h * w, dtype=np.float32).reshape(h, w)
        return DepthResult(ramp, "estimated", "a ramp")

    scene = load_coco_scene(targets[109], fake_estimator)
    assert scene.depth_provenance == "estimated"
    assert scene.depth_note == "a ramp"
    assert scene.depth_m[0, 0] == 1.0


def test_corrupt_image_names_the_file(targets: dict[int, CocoTarget]) -> None:
    with pytest.raises(InputError, match=r"cannot decode COCO image .*corrupt\.jpg"):
        load_coco_scene(targets[106], AssumedDepth(far_m=20.0))


def test_missing_image_file(targets: dict[int, CocoTarget]) -> None:
    with pytest.raises(InputError, match=r"not found: .*json_only_111\.jpg"):
        load_coco_scene(targets[111], AssumedDepth(far_m=20.0))


def test_size_mismatch(targets: dict[int, CocoTarget]) -> None:
    wrong = dataclasses.replace(targets[101], width=640)
    with pytest.raises(InputError, match="is 741x500 but its annotation says 640x500"):
        load_coco_scene(wrong, AssumedDepth(far_m=20.0))


def test_bad_depth_providers(targets: dict[int, CocoTarget]) -> None:
    target = targets[108]

    def wrong_shape(image: npt.NDArray[np.uint8]) -> DepthResult:
        return DepthResult(np.ones((2, 2), dtype=np.float32), "estimated", "")

    def wrong_provenance(image: npt.NDArray[np.uint8]) -> DepthResult:
        h, w = image.shape[:2]
        return DepthResult(np.ones((h, w), dtype=np.float32), "guessed", "")  # type: ignore[arg-type]

    def not_a_triple(image: npt.NDArray[np.uint8]) -> DepthResult:
        return np.ones(image.shape[:2], dtype=np.float32)  # type: ignore[return-value]

    with pytest.raises(InputError, match="does not match"):
        load_coco_scene(target, wrong_shape)
    with pytest.raises(InputError, match="provenance"):
        load_coco_scene(target, wrong_provenance)
    with pytest.raises(InputError, match=r"\(depth_m, provenance, note\)"):
        load_coco_scene(target, not_a_triple)
