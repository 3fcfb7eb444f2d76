"""The sweep's model-free units, one per scene, run inside a worker like the questions: each
ImageNet-C severity's equivalent visibility on the fog axis (:class:`VeqUnit`) and the scene's
depth profile (:class:`DepthUnit`). A failure of the unit fails its items with the reason."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Generic, TypeVar

from clearsight.execute.unit import KeyedItems
from clearsight.physics import Equivalence, imagenet_c_equivalents
from clearsight.scenes.depth import depth_profile
from clearsight.store import Record
from clearsight.sweep.conditions import imagenet_c_seed
from clearsight.sweep.specs import DepthItem, SceneRef, VeqItem
from clearsight.sweep.unit import failed_records, load_scene

__all__ = ["DepthUnit", "VeqUnit", "run_depth_unit", "run_veq_unit"]

#: The item kind of a model-free scene unit.
ItemT = TypeVar("ItemT", VeqItem, DepthItem)


@dataclass(frozen=True)
class _SceneUnit(KeyedItems, Generic[ItemT]):
    """A model-free unit: items of one scene (its reference and depth model), no model."""

    scene: SceneRef
    depth_model: str
    items: tuple[ItemT, ...]
    model: str = ""


@dataclass(frozen=True)
class VeqUnit(_SceneUnit[VeqItem]):
    """The ImageNet-C equivalent visibilities of one scene (no model)."""

    @property
    def cost(self) -> float:
        """Relative run time, so executors start the longest units first: an equivalent
        visibility costs seconds, a question milliseconds."""
        return len(self.items) * 500.0


@dataclass(frozen=True)
class DepthUnit(_SceneUnit[DepthItem]):
    """The depth profile of one scene (no model)."""


def run_veq_unit(unit: VeqUnit) -> list[Record]:
    """The retained gain, the detail added and the equivalent visibility of each of one
    scene's ImageNet-C severities (one record each)."""
    started = time.perf_counter()
    severities = [item.severity for item in unit.items]
    try:
        scene = load_scene(unit.scene, unit.depth_model)
        groups: dict[str, list[VeqItem]] = defaultdict(list)
        for item in unit.items:
            groups[item.corruption or "fog"].append(item)
        equivalent: dict[str, Equivalence] = {}
        for name, group in groups.items():
            seeds = [
                imagenet_c_seed(scene.id, i.seed, i.severity if i.plasma else None, name)
                for i in group
            ]
            sevs = [i.severity for i in group]
            found = imagenet_c_equivalents(scene.image, scene.depth_m, seeds, sevs, name)
            equivalent.update(zip((i.key for i in group), found, strict=True))
    except Exception as exc:
        return failed_records(unit, exc, started)
    elapsed = (time.perf_counter() - started) / len(severities)
    return [
        Record(
            item.key,
            "ok",
            None,
            {},
            {"v_eq_m": eq.v_eq_m, "gain": eq.gain, "added": eq.added},
            elapsed,
        )
        for item in unit.items
        for eq in [equivalent[item.key]]
    ]


def run_depth_unit(unit: DepthUnit) -> list[Record]:
    """The depth profile of one scene's depth map as the run loads it (one record)."""
    started = time.perf_counter()
    try:
        profile = depth_profile(load_scene(unit.scene, unit.depth_model).depth_m)
    except Exception as exc:
        return failed_records(unit, exc, started)
    elapsed = time.perf_counter() - started
    return [Record(item.key, "ok", None, {}, profile._asdict(), elapsed) for item in unit.items]
