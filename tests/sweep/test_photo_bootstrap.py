"""The sweep's bootstrap resamples source photos: crops of one photo are one cluster, checked
against a hand-written cluster bootstrap (a loop over draws and items, no matrix products)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clearsight.scenes.bundled import bundled_photo, bundled_specs
from clearsight.sweep.numbers.clusters import photo_clusters
from clearsight.sweep.numbers.crossings import scene_bootstrap
from fixtures.sweep_runs import toy_record, toy_run

LEVELS = (100.0, 10.0, 1.0)
# scene -> (photo, accuracy at clean and at each level, items per condition)
SCENES = {
    "a-crop1": ("A", [1, 1, 1, 0], 3),
    "a-crop2": ("A", [1, 1, 0, 0], 2),
    "b": ("B", [1, 0, 0, 0], 4),
    "c": (None, [1, 1, 1, 1], 1),
    "d": ("D", [0, 1, 0, 0], 2),
}


def _records() -> pd.DataFrame:
    rows = []
    conditions = [("clean", np.nan), *(("fog", lv) for lv in LEVELS)]
    for scene, (_, accuracy, n) in SCENES.items():
        for (cond, level), correct in zip(conditions, accuracy, strict=True):
            for i in range(n):
                # items of one cell differ, so a cluster's mean is not its first item
                right = float(correct if i % 2 == 0 else 1 - correct)
                rows.append(toy_record(scene, cond, level, correct=right, internal_conf=0.9))
    frame = pd.DataFrame(rows)
    scenes = list(SCENES)
    labels = dict(zip(scenes, photo_clusters(scenes, [SCENES[s][0] for s in scenes]), strict=True))
    frame["cluster"] = frame["scene"].map(labels)
    return frame


def _by_hand(records: pd.DataFrame, level: float | None, n_boot: int, seed: int) -> np.ndarray:
    """Replicate means of accuracy at one condition, resampling photos by hand."""
    cell = (
        records[records["level_m"] == level] if level else records[records["condition"] == "clean"]
    )
    photos = sorted(set(records["cluster"]))
    items = {p: cell.loc[cell["cluster"] == p, "correct"].tolist() for p in photos}
    draws = np.random.default_rng(seed).multinomial(
        len(photos), [1 / len(photos)] * len(photos), n_boot
    )
    means = []
    for draw in draws:
        sample: list[float] = []
        for photo, times in zip(photos, draw, strict=True):
            sample += items[photo] * int(times)
        means.append(sum(sample) / len(sample))
    return np.array(means)


def test_photo_clusters_group_crops_and_keep_unknown_photos_apart() -> None:
    scenes = ["k2", "k1", "coco-1", "solo", "user"]
    photos = ["kite.jpg", "kite.jpg", None, "x.jpg", None]
    assert photo_clusters(scenes, photos) == ["k1", "k1", "coco-1", "solo", "user"]
    # every scene of its own photo: the clusters are the scenes
    assert photo_clusters(["b", "a"], ["p", "q"]) == ["b", "a"]


def test_the_bundled_scenes_come_from_twelve_photos() -> None:
    photos = {bundled_photo(s) for s in bundled_specs()}
    assert len(bundled_specs()) == 22
    assert len(photos) == 12
    assert bundled_photo("no-such-scene") is None


@pytest.mark.parametrize("level", [None, 10.0, 1.0])
def test_intervals_are_those_of_a_hand_written_photo_bootstrap(level: float | None) -> None:
    records = _records()
    boot = scene_bootstrap(toy_run(records, LEVELS), n_boot=300, seed=7)
    assert (boot.n_scenes, boot.n_clusters) == (5, 4)
    curves = boot.curves[(boot.curves["signal"] == "accuracy")]
    row = curves[curves["condition"] == "clean"] if level is None else curves[curves["x"] == level]
    means = _by_hand(records, level, 300, 7)
    low, high = np.percentile(means, [2.5, 97.5])
    assert row["n_scenes"].item() == 5
    assert row["low"].item() == pytest.approx(low, abs=1e-12)
    assert row["high"].item() == pytest.approx(high, abs=1e-12)


def test_scene_clusters_differ_from_photo_clusters() -> None:
    """The same records with every scene its own cluster give other intervals (the crops were
    resampled as if independent)."""
    records = _records()
    by_photo = scene_bootstrap(toy_run(records, LEVELS), n_boot=300, seed=7).curves
    by_scene = scene_bootstrap(
        toy_run(records.assign(cluster=records["scene"]), LEVELS), n_boot=300, seed=7
    )
    assert by_scene.n_clusters == 5
    assert not np.allclose(by_photo["low"], by_scene.curves["low"])
    assert np.allclose(by_photo["estimate"], by_scene.curves["estimate"], atol=1e-12)
