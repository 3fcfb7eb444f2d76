"""What a sweep item is made of: typed specs keyed by :mod:`clearsight.specs`' one recipe.

A sweep item (:class:`SweepItem`) is one question about one boxed target of one scene under one
condition, asked of one model in one wording; an ImageNet-C equivalent (:class:`VeqItem`) is one
severity of one scene, with no model; a depth profile (:class:`DepthItem`) summarises one scene's
depth map. The scene reference, the question and the physics settings and a model's options are
:class:`~clearsight.specs.Part` values shared by many items (a question is asked under every
condition by every model), so each enters a key by its content hash, computed once per plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from clearsight.scenes.coco import CocoTarget
from clearsight.specs import OMIT_NONE, Options, Part, Spec
from clearsight.sweep.readouts import DepthReadouts, SweepReadouts, VeqReadouts
from clearsight.tasks import Question

__all__ = [
    "DEPTH_PROTOCOL",
    "PROTOCOL",
    "VEQ_PROTOCOL",
    "DepthItem",
    "Physics",
    "SceneRef",
    "Shown",
    "SweepItem",
    "VeqItem",
]

PROTOCOL = "sweep"
VEQ_PROTOCOL = "sweep.veq"
DEPTH_PROTOCOL = "sweep.depth"


@dataclass(frozen=True)
class SceneRef(Part):
    """How to load a scene in any process: its source, id and (COCO) the selected target.

    ``categories``/``boxes`` are the scene's targets, used while planning; the stored form is
    ``{source, id, coco}``, which is all a worker needs to load the scene.
    """

    source: str
    id: str
    categories: tuple[str, ...]
    boxes: tuple[tuple[int, int, int, int], ...]
    coco: CocoTarget | None = None

    stored: ClassVar[tuple[str, ...] | None] = ("source", "id", "coco")


@dataclass(frozen=True)
class Physics(Part):
    """The degradation settings every item of a sweep shares (see :class:`SweepConfig`); the
    turbid water's coefficients only in a sweep with the turbid arm (left out of the JSON, and
    so of every key, otherwise)."""

    airlight: float
    wavelengths_nm: tuple[float, ...]
    water_table: str
    veil: str
    box_thickness_px: int
    turbid_absorption_per_m: tuple[float, ...] | None = field(default=None, metadata=OMIT_NONE)
    turbid_scattering_per_m: tuple[float, ...] | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class Shown:
    """What a shuffled-control item shows instead of its own scene: another scene's first
    target (its pixels and box, and the category that box holds)."""

    scene: SceneRef
    box: tuple[int, int, int, int]
    category: str


@dataclass(frozen=True)
class SweepItem(Spec):
    """One question to one model about one boxed target under one condition.

    ``condition`` is ``clean``, ``fog``/``water`` at visibility ``level_m``, ``blank``,
    ``shuffled`` (showing ``shown``) or ``imagenet_c`` at ``severity``; ``asked`` is
    ``true``/``distractor`` for verification (None for identification). ``plasma``
    (ImageNet-C only) is ``independent`` where the severity has its own plasma draw; None —
    left out of the key, as in runs made before the choice — where the scene's severities
    share one (:func:`~clearsight.sweep.conditions.imagenet_c_seed`). ``corruption``
    (ImageNet-C only) names the corruption; None — left out of the key, as in runs made before
    the other corruptions — is fog.
    """

    kind: ClassVar[str] = PROTOCOL
    parts: ClassVar[tuple[str, ...]] = ("scene", "question", "physics", "model_options")
    readout_type = SweepReadouts

    scene: SceneRef
    target: int
    box: tuple[int, int, int, int]
    category: str
    condition: str
    level_m: float | None
    severity: int | None
    task: str
    asked: str | None
    wording: str
    question: Question
    physics: Physics
    seed: int
    shown: Shown | None = field(metadata=OMIT_NONE)
    model: str
    model_options: Options
    plasma: str | None = field(default=None, metadata=OMIT_NONE)
    corruption: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class VeqItem(Spec):
    """The gain-matched equivalent visibility of one scene at one ImageNet-C severity
    (``plasma`` and ``corruption`` as :class:`SweepItem`'s)."""

    kind: ClassVar[str] = VEQ_PROTOCOL
    readout_type = VeqReadouts

    scene: SceneRef
    severity: int
    seed: int
    plasma: str | None = field(default=None, metadata=OMIT_NONE)
    corruption: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class DepthItem(Spec):
    """The depth profile of one scene as the run loaded it (median, quartiles, shares at the
    clip bounds): what sets the meaning of the run's metres, summarised in the report."""

    kind: ClassVar[str] = DEPTH_PROTOCOL
    readout_type = DepthReadouts

    scene: SceneRef
