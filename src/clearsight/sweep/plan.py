"""Planning the visibility sweep (docs/methods.md §1-§3): scenes, questions, items, units.

A sweep item is one question about one boxed target of one scene under one condition — clean,
fog or water at a visibility level, blank, shuffled, or ImageNet-C fog at a severity — asked of
one model with one prompt wording. Its typed spec (:class:`~clearsight.sweep.specs.SweepItem`)
holds everything that determines its output (scene reference, box, question with options and
answer key, physics parameters, model, seed) and its key is the spec's content hash
(:mod:`clearsight.specs`). Planning is a pure function of the config: the scenes as references
(no pixels decoded: :mod:`~clearsight.sweep.scenes`), the category prior and distractor
scheme, every target's questions in every wording, and the items grouped into units of one
scene and one model
(:mod:`~clearsight.sweep.unit` runs them). A unit's items are a grid (:mod:`clearsight.store`
(grids)): its fixed fields x its questions x its conditions, stored from those groups and built
as typed items only when the unit runs (the example design's 1.04 million, ``clearsight plan
examples/sweep-coco-hf.yaml``, are never all objects at once).
Two model-free unit kinds follow, one unit per scene: the ImageNet-C severities' equivalent
visibility and the scene's depth profile.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from clearsight.physics import derangement
from clearsight.seeding import rng_for
from clearsight.specs import Options
from clearsight.store import SpecGrid
from clearsight.sweep.conditions import corruption_field, plasma_field
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.model_free import DepthUnit, VeqUnit
from clearsight.sweep.scenes import prior_categories, scene_refs
from clearsight.sweep.specs import (
    DepthItem,
    Physics,
    SceneRef,
    Shown,
    SweepItem,
    VeqItem,
)
from clearsight.sweep.unit import SweepUnit
from clearsight.tasks import (
    AbstainWording,
    DistractorScheme,
    Question,
    category_prior,
    identification_question,
    verbalized_question,
    verification_questions,
)

_VERBAL_TEMPLATE = {
    "verbal.plain": "verbal.plain.v1",
    "verbal.percent": "verbal.percent.v1",
    "verbal.scale": "verbal.scale.v1",
}


# --------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------


def distractor_scheme(config: SweepConfig, prior: dict[str, float]) -> DistractorScheme:
    """The scheme a sweep uses: ``auto`` resolves to exchangeable where it exists."""
    if config.distractors != "auto":
        return config.distractors
    return "exchangeable" if max(prior.values()) <= 0.25 else "proportional"


def _questions(
    category: str,
    prior: dict[str, float],
    config: SweepConfig,
    scheme: DistractorScheme,
    seed_parts: tuple[Any, ...],
) -> list[tuple[str, str | None, str, Question]]:
    """(task, asked, wording, question) for one target: the same options in every wording."""
    out: list[tuple[str, str | None, str, Question]] = []
    for task in config.tasks:
        for wording in config.wordings:
            abstain = _ABSTAIN_OPTION.get(wording, "reason")
            rng = rng_for(*seed_parts, task)
            if task == "identify":
                qs: list[tuple[str | None, Question]] = [
                    (
                        None,
                        identification_question(
                            category, prior, rng, abstain=abstain, scheme=scheme
                        ),
                    )
                ]
            else:
                yes, no = verification_questions(
                    category, prior, rng, abstain=abstain, scheme=scheme
                )
                qs = [("true", yes), ("distractor", no)]
            for asked, q in qs:
                if wording in _VERBAL_TEMPLATE:
                    q = verbalized_question(q, _VERBAL_TEMPLATE[wording])
                out.append((task, asked, wording, q))
    return out


#: The abstain option of each wording that does not offer the reason-naming one.
_ABSTAIN_OPTION: dict[str, AbstainWording | None] = {"mcq.generic": "generic", "mcq.none": None}


@dataclass(frozen=True)
class SweepPlan:
    """All items of a sweep and their grouping into units."""

    units: tuple[SweepUnit, ...]
    veq_units: tuple[VeqUnit, ...]
    depth_units: tuple[DepthUnit, ...]
    prompt_hashes: dict[str, str]
    prior: dict[str, float]
    distractor_scheme: str

    @property
    def questions(self) -> list[SweepItem]:
        """The questions to the models (no model-free item)."""
        return [i for u in self.units for i in u.items]

    @property
    def items(self) -> list[SweepItem | VeqItem | DepthItem]:
        """Every item, the questions first."""
        veq = [i for u in self.veq_units for i in u.items]
        return [*self.questions, *veq, *(i for u in self.depth_units for i in u.items)]


def _condition_entries(config: SweepConfig) -> list[dict[str, Any]]:
    """The condition fields of every item (one entry object per condition, shared by every
    scene and model, so the store encodes each once): clean, the arms' levels, blank, shuffled
    (its ``shown`` set per scene), each ImageNet-C corruption's severities with their
    ``plasma`` draw."""
    plasma = plasma_field(config.imagenet_c_plasma)
    conds: list[tuple[str, float | None, int | None, str | None]] = []
    conds += [("clean", None, None, None)] if "clean" in config.controls else []
    for arm in config.arms:
        conds += [(arm, v, None, None) for v in config.levels_m]
    conds += [(c, None, None, None) for c in ("blank", "shuffled") if c in config.controls]
    if "imagenet_c" in config.controls:
        for name in config.imagenet_c_corruptions:
            conds += [("imagenet_c", None, s, name) for s in config.imagenet_c_severities]
    return [
        {"condition": c, "level_m": v, "severity": s, "shown": None}
        | {"plasma": plasma if c == "imagenet_c" else None}
        | {"corruption": None if name is None else corruption_field(name)}
        for c, v, s, name in conds
    ]


def plan_sweep(config: SweepConfig, refs: Sequence[SceneRef] | None = None) -> SweepPlan:
    """Every item of the sweep: scenes x targets x conditions x tasks x wordings x models
    (``refs``: the scenes, where not the configuration's own:
    :func:`~clearsight.sweep.scenes.stand_in_refs`)."""
    refs = scene_refs(config) if refs is None else list(refs)
    prior = category_prior(prior_categories(config, refs))
    scheme = distractor_scheme(config, prior)
    prompt_hashes: dict[str, str] = {}
    models = [_ModelPlan.of(config, m) for m in config.models]
    per_scene = _scene_items(config, refs, prior, scheme, models, prompt_hashes)
    units = [
        SweepUnit(
            m.name,
            dict(m.options.values),
            ref,
            config.coco_depth_model,
            items[m.name],
            config.max_new_tokens,
        )
        for m in models
        for ref, items in zip(refs, per_scene, strict=True)
        if m.name in items
    ]
    depth = tuple(DepthUnit(ref, config.coco_depth_model, (DepthItem(ref),)) for ref in refs)
    veq = tuple(_veq_units(config, refs))
    return SweepPlan(tuple(units), veq, depth, prompt_hashes, prior, scheme)


@dataclass(frozen=True)
class _ModelPlan:
    """What the plan needs of one model: its options (one shared part for all its items) and
    the wordings and conditions it is asked in."""

    name: str
    options: Options
    wordings: frozenset[str]
    conditions: frozenset[str]

    @classmethod
    def of(cls, config: SweepConfig, model: str) -> _ModelPlan:
        return cls(
            model,
            Options(config.options_of(model)),
            frozenset(config.wordings_of(model)),
            frozenset(config.conditions_of(model)),
        )


def _scene_items(
    config: SweepConfig,
    refs: Sequence[SceneRef],
    prior: dict[str, float],
    scheme: DistractorScheme,
    models: Sequence[_ModelPlan],
    prompt_hashes: dict[str, str],
) -> list[dict[str, SpecGrid[SweepItem]]]:
    """Per scene and model, its items as a grid (:mod:`clearsight.store` (grids)): the unit's
    fixed fields x the targets' questions in the model's wordings x the model's conditions,
    conditions varying fastest (recording each template's hash in ``prompt_hashes``)."""
    partner = derangement(len(refs), config.seed) if "shuffled" in config.controls else None
    physics = _physics(config)
    conditions = _condition_entries(config)
    per_scene: list[dict[str, SpecGrid[SweepItem]]] = []
    for i, ref in enumerate(refs):
        shown = None
        if partner is not None:
            other = refs[int(partner[i])]
            shown = Shown(other, other.boxes[0], other.categories[0])
        scene_conditions = [
            {**c, "shown": shown} if c["condition"] == "shuffled" else c for c in conditions
        ]
        questions = _question_entries(config, ref, i, prior, scheme, prompt_hashes)
        fixed = {"scene": ref, "physics": physics, "seed": config.seed}
        per_scene.append(
            {
                m.name: SpecGrid(
                    SweepItem,
                    [
                        ({**fixed, "model": m.name, "model_options": m.options},),
                        [q for q in questions if q["wording"] in m.wordings],
                        [c for c in scene_conditions if c["condition"] in m.conditions],
                    ],
                )
                for m in models
                if config.model_on_scene(m.name, i)
            }
        )
    return per_scene


def _physics(config: SweepConfig) -> Physics:
    """The physics every item of ``config`` is rendered with (one shared part)."""
    return Physics(
        config.airlight,
        tuple(config.wavelengths_nm),
        config.water_table,
        config.veil,
        config.box_thickness_px,
        config.turbid_absorption_per_m,
        config.turbid_scattering_per_m,
    )


class QuestionFields(TypedDict):
    """The fields of a :class:`~clearsight.sweep.specs.SweepItem` that one question sets: its
    target, the task, which category a verification asks about, the wording and the question
    (one group of a unit's grid)."""

    target: int
    box: tuple[int, int, int, int]
    category: str
    task: str
    asked: str | None
    wording: str
    question: Question


def _question_entries(
    config: SweepConfig,
    ref: SceneRef,
    index: int,
    prior: dict[str, float],
    scheme: DistractorScheme,
    prompt_hashes: dict[str, str],
) -> list[QuestionFields]:
    """The question fields of every target of scene ``ref`` (the ``index``-th), in every
    wording asked on it (a wording may be limited to the first scenes: ``wording_scenes``)."""
    entries: list[QuestionFields] = []
    for t, (category, box) in enumerate(zip(ref.categories, ref.boxes, strict=True)):
        for task, asked, wording, q in _questions(
            category, prior, config, scheme, (config.seed, ref.id, t)
        ):
            for tref in q.templates:
                prompt_hashes[tref.id] = tref.sha256
            if config.asks_on_scene(wording, index):
                entries.append(
                    QuestionFields(
                        target=t,
                        box=box,
                        category=category,
                        task=task,
                        asked=asked,
                        wording=wording,
                        question=q,
                    )
                )
    return entries


def _veq_units(config: SweepConfig, refs: Sequence[SceneRef]) -> list[VeqUnit]:
    """The ImageNet-C control's equivalent-visibility units, one per scene (no model)."""
    if "imagenet_c" not in config.controls:
        return []
    plasma = plasma_field(config.imagenet_c_plasma)
    return [
        VeqUnit(
            ref,
            config.coco_depth_model,
            tuple(
                VeqItem(ref, s, config.seed, plasma, corruption_field(name))
                for name in config.imagenet_c_corruptions
                for s in config.imagenet_c_severities
            ),
        )
        for ref in refs
    ]
