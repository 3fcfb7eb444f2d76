"""GQA's images are a config of their own (issue 46 item 11): the loader reads the questions of
``testdev_balanced_instructions`` and each image by ``imageId`` from
``testdev_balanced_images``, from a snapshot folder or the hub cache, where the repository
keeps both configs; a datasets cache (one config a folder) and a missing or foreign image
table are refused in one line, and a question whose image is not in the table is refused by
its id. Another config or split of the questions (``GQA[val_balanced_instructions]@val``) reads
the images of the config beside its own, not testdev's."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hub_datasets import _offline_caches  # noqa: F401  (autouse: caches empty, offline)

from clearsight.datasets.hub import HUB_SPECS, hub_spec
from clearsight.datasets.rows import provenance
from clearsight.datasets.snapshot import locate, source_record
from clearsight.grounding.problems.hub import hub_problems, load_benchmark
from clearsight.validate import InputError
from fixtures.hub_snapshots import FIXTURES, build_datasets_cache, build_snapshot, image, png

pytest.importorskip("datasets")

SPEC = HUB_SPECS["GQA"]
IMAGES = "testdev_balanced_images/testdev-00000-of-00001.parquet"


def test_each_question_gets_the_image_its_image_id_names(tmp_path: Path) -> None:
    root = build_snapshot("GQA", tmp_path / "datasets" / "GQA")
    problems = load_benchmark("GQA", root.parent)
    assert [p.gold for p in problems] == ["yes", "left", "no"]
    images = [Path(str(p.image)).read_bytes() for p in problems]
    assert images == [png(33), png(33), png(34)]  # two questions of one image, then another
    located = locate(SPEC, root)
    assert [f.relative_to(root).as_posix() for f in located.image_files] == [IMAGES]
    assert source_record(located)["files"] == 2  # the manifest's digest covers both configs
    assert provenance(SPEC)["image"].startswith("imageId, a id of testdev_balanced_images/")
    assert SPEC.downloads == (*SPEC.files, "testdev_balanced_images/testdev-*.parquet")


def test_the_hub_cache_keeps_both_configs(tmp_path: Path) -> None:
    repo = tmp_path / "hf-hub" / "datasets--lmms-lab--GQA"
    build_snapshot("GQA", repo / "snapshots" / "0123abcd")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    problems = hub_problems("GQA", "hf:")
    assert [Path(str(p.image)).read_bytes() for p in problems][-1] == png(34)


def test_a_datasets_cache_holds_one_config_and_is_refused(tmp_path: Path) -> None:
    snapshot = build_snapshot("GQA", tmp_path / "repo" / SPEC.hub_id)
    prepared = build_datasets_cache("GQA", snapshot, tmp_path / "hf-datasets")
    with pytest.raises(InputError, match="a datasets cache does not hold beside") as exc:
        locate(SPEC, prepared)
    assert "\n" not in str(exc.value)
    assert "clearsight fetch --dataset GQA" in str(exc.value)


def test_a_missing_or_foreign_image_table_is_refused(tmp_path: Path) -> None:
    root = build_snapshot("GQA", tmp_path / "datasets" / "GQA")
    (root / IMAGES).unlink()
    with pytest.raises(InputError, match=r"no GQA images in .*testdev_balanced_images/"):
        locate(SPEC, root)
    other = build_snapshot("MM-Vet", tmp_path / "mmvet")
    (root / IMAGES).write_bytes((other / FIXTURES["MM-Vet"].file).read_bytes())
    with pytest.raises(InputError, match=r"not the image table .* expected id, image"):
        load_benchmark("GQA", root.parent)


def test_a_question_whose_image_is_not_in_the_table_is_refused(tmp_path: Path) -> None:
    columns = {**FIXTURES["GQA"].columns, "imageId": ["n288870", "n999", "n161313"]}
    root = build_snapshot("GQA", tmp_path / "datasets" / "GQA", columns)
    with pytest.raises(InputError, match="GQA row 20968380 refused: its imageId 'n999'"):
        load_benchmark("GQA", root.parent)
    refused: list[str] = []
    kept = hub_problems("GQA", root.parent, refused=refused)
    assert [p.id for p in kept] == ["GQA/20968379", "GQA/201640614"]
    assert len(refused) == 1


def test_another_config_or_split_reads_the_images_beside_its_questions() -> None:
    val = SPEC.choose("val_balanced_instructions", "val")
    assert val.files == ("val_balanced_instructions/val-*.parquet",)
    assert val.image_table is not None
    assert val.image_table.files == ("val_balanced_images/val-*.parquet",)
    assert val.downloads == (*val.files, "val_balanced_images/val-*.parquet")
    every = SPEC.choose("testdev_all_instructions")  # the split kept, the config's images
    assert every.image_table is not None
    assert every.image_table.files == ("testdev_all_images/testdev-*.parquet",)
    assert SPEC.choose(SPEC.config, SPEC.split) is SPEC
    assert hub_spec("GQA@val") == val  # the split names its config: val's, not testdev's


def test_a_config_not_named_after_its_split_is_not_renamed_with_it() -> None:
    four = hub_spec("MMMU-Pro[standard (4 options)]@validation")
    assert four.config == "standard (4 options)"
    assert four.files == ("standard (4 options)/validation-*.parquet",)


def test_a_config_not_named_as_the_questions_are_is_refused_in_one_line() -> None:
    with pytest.raises(InputError, match="config 'val_balanced' does not end '_instructions'"):
        SPEC.choose("val_balanced")
    with pytest.raises(InputError) as caught:
        SPEC.choose("_instructions")
    assert "\n" not in str(caught.value)


def test_the_val_questions_get_the_val_images_not_testdevs(tmp_path: Path) -> None:
    folder = tmp_path / "datasets" / "GQA[val_balanced_instructions]@val"
    root = build_snapshot("GQA", folder)
    questions = root / FIXTURES["GQA"].file
    moved = root / "val_balanced_instructions" / questions.name.replace("testdev-", "val-")
    moved.parent.mkdir()
    questions.rename(moved)
    images = root / "val_balanced_images" / "val-00000-of-00001.parquet"
    images.parent.mkdir()
    (root / IMAGES).rename(images)
    import datasets  # testdev's table beside it, holding other images of the same ids

    features = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image()})
    testdev = {"id": ["n288870", "n161313"], "image": [image(40), image(41)]}
    datasets.Dataset.from_dict(testdev, features=features).to_parquet(str(root / IMAGES))
    problems = load_benchmark("GQA[val_balanced_instructions]@val", root.parent)
    assert [Path(str(p.image)).read_bytes() for p in problems] == [png(33), png(33), png(34)]
