"""The image a model sees under each condition of the sweep, made from a scene on demand.

Pixels are never stored: a worker renders them from (scene, condition, target) whenever it needs
them, all levels of one arm from one decode, and draws the red box last so it is never degraded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from clearsight.physics import (
    SWEEP_LEVELS_M,
    blank_like,
    draw_box,
    fog_levels,
    imagenet_c_fog,
    underwater_levels,
)
from clearsight.scenes.model import Scene
from clearsight.seeding import derive_seed
from clearsight.validate import InputError

Arm = Literal["fog", "water"]
ARMS: Final[tuple[Arm, ...]] = ("fog", "water")
IMAGENET_C_SEVERITIES: Final[tuple[int, ...]] = (1, 2, 3, 4, 5)


def _target_box(scene: Scene, target: int) -> tuple[int, int, int, int]:
    if not 0 <= target < len(scene.targets):
        raise InputError(
            f"scene {scene.id!r} has {len(scene.targets)} target(s); target index {target} "
            "does not exist"
        )
    return scene.targets[target].box.as_tuple()


def render_clean(scene: Scene, target: int = 0) -> npt.NDArray[np.uint8]:
    """The clean photo with the target's box."""
    return draw_box(scene.image.copy(), _target_box(scene, target))


def render_arm(
    scene: Scene, arm: Arm, levels: Sequence[float] = SWEEP_LEVELS_M, target: int = 0
) -> npt.NDArray[np.uint8]:
    """All levels of a physical arm, (L, H, W, 3), with the target's box drawn on each."""
    box = _target_box(scene, target)
    if arm == "fog":
        stack = fog_levels(scene.image, scene.depth_m, levels)
    elif arm == "water":
        stack = underwater_levels(scene.image, scene.depth_m, levels)
    else:
        raise InputError(f"unknown arm {arm!r}; known: {ARMS}")
    return draw_box(stack, box)


def imagenet_c_seed(scene_id: str, seed: int) -> int:
    """The plasma seed of a scene's ImageNet-C fog: one per scene and run seed, all severities."""
    return derive_seed("imagenet_c_fog", scene_id, seed)


def render_imagenet_c(
    scene: Scene,
    severities: Sequence[int] = IMAGENET_C_SEVERITIES,
    seed: int = 0,
    target: int = 0,
) -> npt.NDArray[np.uint8]:
    """ImageNet-C fog at each severity, (S, H, W, 3), with the target's box."""
    box = _target_box(scene, target)
    s = imagenet_c_seed(scene.id, seed)
    stack = np.stack(
        [imagenet_c_fog(scene.image, sev, np.random.RandomState(s)) for sev in severities]
    )
    return draw_box(stack, box)


def render_blank(scene: Scene, target: int = 0) -> npt.NDArray[np.uint8]:
    """The blank control: mid-grey with the target's box."""
    return draw_box(blank_like(scene.image), _target_box(scene, target))
