"""The unit the sweep's bootstrap resamples: a scene's source photo. Crops cut from one photo
share its pixels, so they are resampled together (:func:`photo_clusters`); the records' reader
(:func:`~clearsight.sweep.results.load_run_data`) labels every record with its scene's cluster
(:func:`scene_clusters`), and the bootstrap sums its per-scene cells per cluster
(:func:`by_cluster`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = ["by_cluster", "photo_clusters", "scene_clusters"]


def photo_clusters(scenes: Sequence[str], photos: Sequence[str | None]) -> list[str]:
    """Each scene's bootstrap cluster: the smallest id among the given scenes cut from its
    source photo (``photos[i]`` is scene i's, None where unknown: a COCO image, a user scene,
    which is then its own cluster). Crops of one photo share its pixels, so they are resampled
    together; a run whose scenes all come from different photos clusters exactly by scene."""
    first: dict[str, str] = {}
    for scene, photo in zip(scenes, photos, strict=True):
        if photo is not None and (photo not in first or scene < first[photo]):
            first[photo] = scene
    return [
        scene if photo is None else first[photo]
        for scene, photo in zip(scenes, photos, strict=True)
    ]


def scene_clusters(records: pd.DataFrame) -> pd.Series:
    """The ``cluster`` column: each record's scene's :func:`photo_clusters` label."""
    from clearsight.scenes.bundled import bundled_photo

    pairs = records[["scene", "scene.source"]].astype(str).drop_duplicates("scene")
    scenes = pairs["scene"].tolist()
    photos = [
        bundled_photo(scene) if source == "bundled" else None
        for scene, source in zip(scenes, pairs["scene.source"], strict=True)
    ]
    labels = dict(zip(scenes, photo_clusters(scenes, photos), strict=True))
    return records["scene"].astype(str).map(labels).astype(object)


def by_cluster(
    records: pd.DataFrame, scenes: npt.NDArray[np.str_], *per_scene: npt.NDArray[np.float64]
) -> tuple[list[str], list[npt.NDArray[np.float64]]]:
    """The per-scene rows summed per bootstrap cluster (a record's ``cluster``: its scene's
    source photo, :func:`clearsight.sweep.numbers.clusters.photo_clusters`), clusters in
    sorted order: a run whose every scene is its own cluster keeps its rows exactly."""
    pairs = records[["scene", "cluster"]].astype(str).drop_duplicates("scene")
    label = dict(zip(pairs["scene"], pairs["cluster"], strict=True))
    labels, member = np.unique([label[s] for s in scenes], return_inverse=True)
    if labels.size == scenes.size:
        return labels.tolist(), list(per_scene)
    summed = []
    for rows in per_scene:
        out = np.zeros((labels.size, rows.shape[1]))
        np.add.at(out, member, rows)
        summed.append(out)
    return labels.tolist(), summed
