"""The visibility sweep (docs/methods.md §1-§4): plan the items, run them, keep the records.

A sweep item is one question about one boxed target of one scene under one condition — clean,
fog or water at a visibility level, blank, shuffled, or ImageNet-C fog at a severity — asked of
one model with one prompt wording. Its typed spec (:class:`~clearsight.sweep.specs.SweepItem`)
holds everything that determines its output (scene reference, box, question with options and
answer key, physics parameters, model, seed) and its key is the spec's content hash
(:mod:`clearsight.specs`). Items are grouped into units of one scene and one model, so a worker
decodes the scene once and renders each degraded image once for all the questions that use it;
pixels never reach the store. A unit's items are a grid (:mod:`clearsight.store` (grids)): its
fixed fields x its questions x its conditions, stored from those groups and built as typed items
only when the unit runs (the paper's 1.8 million are never all objects at once). Two model-free
stages follow, one unit per scene: the ImageNet-C severities' retained gain and equivalent
visibility, and the scene's depth profile (what the run's metres mean).
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from clearsight import driver
from clearsight.driver import Execution, ModelNeed, Protocol, RunSummary, Stage
from clearsight.execute import ExecutorName
from clearsight.execute.unit import KeyedItems
from clearsight.models import (
    Capabilities,
    Decoding,
    Message,
    ObserverReference,
    Request,
    Response,
    install_hint,
    shared_backend,
)
from clearsight.models.replies import checked_replies
from clearsight.physics import (
    VISIBILITY_CONSTANT,
    blank_like,
    derangement,
    draw_box,
    imagenet_c_equivalents,
    turbid_coefficients,
)
from clearsight.provenance import run_manifest
from clearsight.scenes.depth import DEFAULT_DEPTH_MODEL, depth_profile
from clearsight.scenes.model import Scene
from clearsight.seeding import derive_seed, rng_for
from clearsight.specs import Options, Spec
from clearsight.store import Record, RunStore, SpecGrid, SpecGrids, keys_of, select
from clearsight.sweep.conditions import (
    ARMS,
    arm_physics,
    arm_stack,
    imagenet_c_seed,
    imagenet_c_stack,
)
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.readouts import letter_readout, parse_verbalized
from clearsight.sweep.specs import (
    DEPTH_PROTOCOL,
    PROTOCOL,
    VEQ_PROTOCOL,
    DepthItem,
    Physics,
    SceneRef,
    Shown,
    SweepItem,
    VeqItem,
)
from clearsight.tasks import (
    AbstainWording,
    DistractorScheme,
    Question,
    category_prior,
    identification_question,
    verbalized_question,
    verification_questions,
)
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.execute.on_ray import RayConfig

_VERBAL_TEMPLATE = {
    "verbal.plain": "verbal.plain.v1",
    "verbal.percent": "verbal.percent.v1",
    "verbal.scale": "verbal.scale.v1",
}


# --------------------------------------------------------------------------------------------
# Scenes as references a worker can load
# --------------------------------------------------------------------------------------------


def scene_refs(config: SweepConfig) -> list[SceneRef]:
    """The scenes of a sweep, as references (no pixels are decoded here)."""
    if config.scenes == "bundled":
        from clearsight.scenes.bundled import bundled_scene_ids, bundled_specs

        specs = bundled_specs()
        ids = list(config.scene_ids) if config.scene_ids is not None else bundled_scene_ids()
        unknown = [i for i in ids if i not in specs]
        if unknown:
            raise InputError(f"unknown scene ids {unknown}; bundled scenes: {', '.join(specs)}")
        refs = [
            SceneRef(
                "bundled",
                i,
                tuple(t.category for t in specs[i].targets),
                tuple(t.box.as_tuple() for t in specs[i].targets),
            )
            for i in ids
        ]
    else:
        from clearsight.scenes.coco import CocoSelectionConfig, select_coco_targets

        if config.coco_annotations is None or config.coco_images is None:
            raise InputError("scenes='coco' needs coco_annotations and coco_images")
        _require_depth_model(config.coco_depth_model)
        targets = select_coco_targets(
            config.coco_annotations,
            config.coco_images,
            CocoSelectionConfig(n=config.coco_n, seed=config.seed),
        )
        refs = [
            SceneRef(
                "coco",
                t.scene_id,
                (t.category,),
                (t.box,),
                coco=t,
            )
            for t in targets
        ]
    if not refs:
        raise InputError(
            "the scene set is empty: no scene to sweep (check scene ids or `make data`)"
        )
    if not config.all_targets:
        refs = [
            dataclasses.replace(r, categories=r.categories[:1], boxes=r.boxes[:1]) for r in refs
        ]
    return refs


def _require_depth_model(model: str) -> None:
    """A COCO sweep's depth model, unless stated (``assumed:<metres>``), must be a local
    directory or in the Hugging Face cache before the run starts (a worker never downloads):
    else one InputError saying how to fetch it."""
    if model.startswith("assumed:") or Path(model).expanduser().is_dir():
        return
    try:
        from clearsight.hub import cached_snapshot

        found = cached_snapshot(model)
    except ImportError:
        hint = install_hint("hf")
        raise InputError(f"the depth model {model!r} needs huggingface_hub: {hint}") from None
    if found is None:
        flag = "--depth" if model == DEFAULT_DEPTH_MODEL else f"--model {model}"
        raise InputError(
            f"the depth model {model!r} is neither a local directory nor in the Hugging Face "
            f"cache: fetch it once with `clearsight fetch {flag}` (or copy a cache that holds "
            "it), or state a depth with coco_depth_model: assumed:<metres>"
        )


_SCENE_CACHE: dict[tuple[str, str], Scene] = {}


def load_scene(ref: SceneRef, depth_model: str) -> Scene:
    """Decode a scene from its reference (bundled: cached per process)."""
    if ref.source == "bundled":
        from clearsight.scenes.bundled import load_bundled_scene

        return load_bundled_scene(ref.id)
    from clearsight.scenes.coco import load_coco_scene

    if ref.coco is None:
        raise InputError(f"COCO scene {ref.id!r} has no target to load")
    key = (ref.digest, depth_model)
    if key not in _SCENE_CACHE:
        _SCENE_CACHE.clear()  # keep one COCO scene: units are per scene
        _SCENE_CACHE[key] = load_coco_scene(ref.coco, _depth_estimator(depth_model))
    return _SCENE_CACHE[key]


_DEPTH: dict[str, Any] = {}


def _depth_estimator(model: str) -> Any:
    """A depth provider by name: ``assumed:<metres>`` (a stated constant depth) or a Depth
    Anything model id or path (one instance per process)."""
    from clearsight.scenes.depth import AssumedDepth, DepthAnythingEstimator

    if model not in _DEPTH:
        if model.startswith("assumed:"):
            try:
                far = float(model.split(":", 1)[1])
            except ValueError:
                raise InputError(f"depth {model!r}: expected assumed:<metres>") from None
            _DEPTH[model] = AssumedDepth(far_m=far)
        else:
            _DEPTH[model] = DepthAnythingEstimator(model)
    return _DEPTH[model]


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
            abstain: AbstainWording = "generic" if wording == "mcq.generic" else "reason"
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


@dataclass(frozen=True)
class SweepUnit(KeyedItems):
    """The questions of one scene for one model: picklable, independent of every other unit."""

    model: str
    model_options: dict[str, Any]
    scene: SceneRef
    depth_model: str
    items: SpecGrid[SweepItem]
    max_new_tokens: int = 24


@dataclass(frozen=True)
class VeqUnit(KeyedItems):
    """The ImageNet-C equivalent visibilities of one scene (no model)."""

    scene: SceneRef
    depth_model: str
    items: tuple[VeqItem, ...]
    model: str = ""

    @property
    def cost(self) -> float:
        """Relative run time, so executors start the longest units first: an equivalent
        visibility costs seconds, a question milliseconds."""
        return len(self.items) * 500.0


@dataclass(frozen=True)
class DepthUnit(KeyedItems):
    """The depth profile of one scene (no model)."""

    scene: SceneRef
    depth_model: str
    items: tuple[DepthItem, ...]
    model: str = ""


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


def _conditions(config: SweepConfig) -> list[tuple[str, float | None, int | None]]:
    conds: list[tuple[str, float | None, int | None]] = []
    if "clean" in config.controls:
        conds.append(("clean", None, None))
    for arm in config.arms:
        conds += [(arm, v, None) for v in config.levels_m]
    for control in ("blank", "shuffled"):
        if control in config.controls:
            conds.append((control, None, None))
    if "imagenet_c" in config.controls:
        conds += [("imagenet_c", None, s) for s in config.imagenet_c_severities]
    return conds


def plan_sweep(config: SweepConfig) -> SweepPlan:
    """Every item of the sweep: scenes x targets x conditions x tasks x wordings x models."""
    refs = scene_refs(config)
    prior = category_prior([c for r in refs for c in r.categories])
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
    physics = Physics(
        config.airlight,
        tuple(config.wavelengths_nm),
        config.water_table,
        config.veil,
        config.box_thickness_px,
        config.turbid_absorption_per_m,
        config.turbid_scattering_per_m,
    )
    # one entry object per condition, shared by every scene and model (a shuffled one per
    # scene), so the store encodes each once
    conditions = [
        {"condition": c, "level_m": level, "severity": severity, "shown": None}
        for c, level, severity in _conditions(config)
    ]
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
        grids: dict[str, SpecGrid[SweepItem]] = {}
        for m in models:
            fixed = {
                "scene": ref,
                "physics": physics,
                "seed": config.seed,
                "model": m.name,
                "model_options": m.options,
            }
            asked = [q for q in questions if q["wording"] in m.wordings]
            under = [c for c in scene_conditions if c["condition"] in m.conditions]
            grids[m.name] = SpecGrid(SweepItem, [(fixed,), asked, under])
        per_scene.append(grids)
    return per_scene


def _question_entries(
    config: SweepConfig,
    ref: SceneRef,
    index: int,
    prior: dict[str, float],
    scheme: DistractorScheme,
    prompt_hashes: dict[str, str],
) -> list[dict[str, Any]]:
    """The question fields of every target of scene ``ref`` (the ``index``-th), in every
    wording asked on it (a wording may be limited to the first scenes: ``wording_scenes``)."""
    entries: list[dict[str, Any]] = []
    for t, (category, box) in enumerate(zip(ref.categories, ref.boxes, strict=True)):
        for task, asked, wording, q in _questions(
            category, prior, config, scheme, (config.seed, ref.id, t)
        ):
            for tref in q.templates:
                prompt_hashes[tref.id] = tref.sha256
            if config.asks_on_scene(wording, index):
                entries.append(
                    {
                        "target": t,
                        "box": box,
                        "category": category,
                        "task": task,
                        "asked": asked,
                        "wording": wording,
                        "question": q,
                    }
                )
    return entries


def _veq_units(config: SweepConfig, refs: Sequence[SceneRef]) -> list[VeqUnit]:
    """The ImageNet-C control's equivalent-visibility units, one per scene (no model)."""
    if "imagenet_c" not in config.controls:
        return []
    return [
        VeqUnit(
            ref,
            config.coco_depth_model,
            tuple(VeqItem(ref, s, config.seed) for s in config.imagenet_c_severities),
        )
        for ref in refs
    ]


# --------------------------------------------------------------------------------------------
# Running a unit (inside a worker)
# --------------------------------------------------------------------------------------------


class _Images:
    """Degraded images of one scene, each rendered once, boxes drawn per target on copies."""

    def __init__(self, scene: Scene, items: Sequence[SweepItem]) -> None:
        self.scene = scene
        physics = items[0].physics
        self.thickness = physics.box_thickness_px
        self._stacks: dict[str, dict[Any, npt.NDArray[np.uint8]]] = {}
        levels: dict[str, set[float]] = defaultdict(set)
        severities: set[int] = set()
        for it in items:
            if it.condition in ARMS and it.level_m is not None:
                levels[it.condition].add(it.level_m)
            elif it.condition == "imagenet_c" and it.severity is not None:
                severities.add(it.severity)
        physics_of = arm_physics(physics.json)
        for arm, lv in levels.items():
            ordered = sorted(lv, reverse=True)
            stack = arm_stack(scene, arm, ordered, **physics_of[arm])  # type: ignore[arg-type]
            self._stacks[arm] = dict(zip(ordered, stack, strict=True))
        if severities:
            ordered_sev = sorted(severities)
            nominal = imagenet_c_stack(scene, ordered_sev, items[0].seed)
            self._stacks["imagenet_c"] = dict(zip(ordered_sev, nominal, strict=True))
        self._boxed: dict[tuple[Any, ...], npt.NDArray[np.uint8]] = {}

    def get(self, item: SweepItem, shown: Scene | None) -> npt.NDArray[np.uint8]:
        cond = item.condition
        box = item.box
        if cond == "shuffled":
            assert shown is not None
            assert item.shown is not None
            box = item.shown.box
            key: tuple[Any, ...] = ("shuffled", box, shown.id)
            base = shown.image
        elif cond == "clean":
            key, base = ("clean", box), self.scene.image
        elif cond == "blank":
            key, base = ("blank", box), blank_like(self.scene.image)
        else:
            level = item.level_m if cond in ARMS else item.severity
            key, base = (cond, level, box), self._stacks[cond][level]
        if key not in self._boxed:
            self._boxed[key] = draw_box(base.copy(), box, self.thickness)
        return self._boxed[key]


def _shown_letter(q: Question, category: str | None) -> str | None:
    """The option that names the object actually in the box (None: nothing, or no option)."""
    if category is None:
        return None
    if q.task == "verify":
        return q.answer_letters[0] if q.asked_category == category else q.answer_letters[1]
    for letter in q.answer_letters:
        if q.option_for(letter) == category:
            return letter
    return None


def item_image(item: SweepItem, depth_model: str) -> npt.NDArray[np.uint8]:
    """The image the sweep shows a model for ``item``: its condition rendered from the scene
    (a shuffled item's from the scene it shows), the target's red box drawn last — the same
    pixels :func:`run_unit` sends (a person answering in ``serve --sweep`` sees these)."""
    scene = load_scene(item.scene, depth_model)
    shown = None if item.shown is None else load_scene(item.shown.scene, depth_model)
    return _Images(scene, [item]).get(item, shown)


def _request(
    item: SweepItem, image: npt.NDArray[np.uint8], clean: Scene | None, max_new_tokens: int
) -> Request:
    q = item.question
    cond = item.condition
    shown = item.shown if cond == "shuffled" else None
    shown_category = item.category if shown is None else shown.category
    reference = ObserverReference(
        clean=None if clean is None else clean.image,
        box=item.box if shown is None else shown.box,
        letters=q.answer_letters,
        shown_letter=None if cond == "blank" else _shown_letter(q, shown_category),
        abstain_letter=q.abstain,
        abstain_names_reason=item.wording != "mcq.generic",
        depth_m=None if clean is None else clean.depth_m,
    )
    seed = derive_seed(item.key)
    messages = (Message.user(image, q.prompt),)
    if q.readout == "verbalized":
        return Request(
            messages, Decoding(max_new_tokens=max_new_tokens, seed=seed), reference=reference
        )
    return Request(
        messages,
        Decoding(max_new_tokens=1, seed=seed),
        candidates=q.letters,
        generate=False,
        reference=reference,
    )


def sweep_readouts(q: Question, raw: dict[str, Any]) -> dict[str, Any]:
    """Answer, correctness, abstention and confidences of one answer to ``q``, from raw output."""
    out: dict[str, Any] = {"chance": q.chance, "n_options": len(q.answer_letters)}
    if q.readout == "verbalized":
        texts = raw.get("texts") or [""]
        answer, conf = parse_verbalized(texts[0], q.letters)
        out.update(answer=answer, verbal_conf=conf, internal_conf=None, letter_mass=None)
        out["verbal_parsed"] = conf is not None
    else:
        lr = letter_readout(raw.get("candidate_probs"), q.answer_letters, q.abstain)
        out.update(
            answer=lr.answer, internal_conf=lr.confidence, verbal_conf=None, letter_mass=lr.mass
        )
        out["letter_probs"] = lr.raw
    out["abstained"] = out["answer"] is not None and out["answer"] == q.abstain
    out["correct"] = out["answer"] == q.correct
    return out


def _failed(unit: KeyedItems, exc: BaseException, started: float) -> list[Record]:
    """Every item of ``unit`` failed with ``exc`` (a unit-level failure)."""
    return [Record.failed(key, exc, time.perf_counter() - started) for key in unit.keys]


def run_unit(unit: SweepUnit) -> list[Record]:
    """Records of one unit. A unit-level failure (an unreadable image, say) fails its items with
    the reason; a failing request, or a reply that cannot be read
    (:func:`~clearsight.models.replies.checked_reply`), fails only its own item."""
    started = time.perf_counter()
    items = tuple(unit.items)  # a grid builds its items when iterated: once here
    try:
        scene = load_scene(unit.scene, unit.depth_model)
        backend = shared_backend(unit.model, unit.model_options)
        images = _Images(scene, items)
    except Exception as exc:  # recorded with its reason; the run goes on
        return _failed(unit, exc, started)
    partners: dict[str, Scene | BaseException] = {}
    built: list[Request | BaseException] = []
    for item in items:
        try:
            built.append(_build(item, scene, images, partners, unit))
        except Exception as exc:  # this item fails alone, with its reason
            built.append(exc)
    requests = [r for r in built if isinstance(r, Request)]
    answers = iter(checked_replies(backend, requests))
    replies = [r if isinstance(r, BaseException) else next(answers) for r in built]
    elapsed = (time.perf_counter() - started) / max(len(replies), 1)
    return [_item_record(item, reply, elapsed) for item, reply in zip(items, replies, strict=True)]


def _item_record(item: SweepItem, reply: Response | BaseException, elapsed: float) -> Record:
    """The record of one question: its read-outs from a checked reply, or failed with the
    reason (the reply's raw output kept where there is one)."""
    if isinstance(reply, BaseException):
        return Record.failed(item.key, reply, elapsed)
    raw: dict[str, Any] | None = None
    try:
        raw = reply.to_json()
        readouts = sweep_readouts(item.question, raw)
    except Exception as exc:  # this item fails alone, with its reason
        return Record.failed(item.key, exc, elapsed, raw)
    return Record(item.key, "ok", None, raw, readouts, elapsed)


def _build(
    item: SweepItem,
    scene: Scene,
    images: _Images,
    partners: dict[str, Scene | BaseException],
    unit: SweepUnit,
) -> Request:
    """The request of one item; a shuffled item loads (once) the scene whose pixels it shows."""
    shown = None
    if item.shown is not None:
        ref = item.shown.scene
        if ref.id not in partners:
            try:
                partners[ref.id] = load_scene(ref, unit.depth_model)
            except Exception as exc:
                partners[ref.id] = exc
        partner = partners[ref.id]
        if isinstance(partner, BaseException):
            raise partner
        shown = partner
    clean = None if item.condition == "blank" else (shown or scene)
    return _request(item, images.get(item, shown), clean, unit.max_new_tokens)


def run_veq_unit(unit: VeqUnit) -> list[Record]:
    """The retained gain and equivalent visibility of each of one scene's ImageNet-C
    severities (one record each)."""
    started = time.perf_counter()
    severities = [item.severity for item in unit.items]
    try:
        scene = load_scene(unit.scene, unit.depth_model)
        seed = imagenet_c_seed(scene.id, unit.items[0].seed)
        found = imagenet_c_equivalents(scene.image, scene.depth_m, seed, severities)
    except Exception as exc:
        return _failed(unit, exc, started)
    elapsed = (time.perf_counter() - started) / len(severities)
    return [
        Record(item.key, "ok", None, {}, {"v_eq_m": eq.v_eq_m, "gain": eq.gain}, elapsed)
        for item, eq in zip(unit.items, found, strict=True)
    ]


def run_depth_unit(unit: DepthUnit) -> list[Record]:
    """The depth profile of one scene's depth map as the run loads it (one record)."""
    started = time.perf_counter()
    try:
        profile = depth_profile(load_scene(unit.scene, unit.depth_model).depth_m)
    except Exception as exc:
        return _failed(unit, exc, started)
    elapsed = time.perf_counter() - started
    return [Record(item.key, "ok", None, {}, profile._asdict(), elapsed) for item in unit.items]


# --------------------------------------------------------------------------------------------
# A whole run
# --------------------------------------------------------------------------------------------


def _models(config: SweepConfig) -> list[ModelNeed]:
    """Every model the sweep asks, with the options it runs with; it must load and give letter
    probabilities when asked a letter wording, generate when asked a verbalized one (images are
    not required: the blind control is text-only on purpose)."""
    needs = []
    for m in config.models:
        wordings = config.wordings_of(m)
        can = Capabilities(
            generate=any(w.startswith("verbal.") for w in wordings),
            candidate_probs=any(w.startswith("mcq.") for w in wordings),
        )
        needs.append(ModelNeed(m, config.options_of(m), can, "the visibility sweep"))
    return needs


def _stages(config: SweepConfig, plan: SweepPlan, store: RunStore) -> Iterator[Stage[Any]]:
    """Questions to the models, then the model-free ImageNet-C equivalents and depth
    profiles."""
    if plan.units:
        items = SpecGrids([u.items for u in plan.units])
        yield Stage(PROTOCOL, items, partial(_pending_units, plan.units), run_unit)
    if plan.veq_units:
        veq = [item for u in plan.veq_units for item in u.items]
        yield Stage(VEQ_PROTOCOL, veq, partial(_pending_units, plan.veq_units), run_veq_unit)
    if plan.depth_units:
        depth = [item for u in plan.depth_units for item in u.items]
        units = partial(_pending_units, plan.depth_units)
        yield Stage(DEPTH_PROTOCOL, depth, units, run_depth_unit)


U = TypeVar("U", SweepUnit, VeqUnit, DepthUnit)


def _pending_units(units: Sequence[U], pending: Sequence[Spec]) -> list[U]:
    """The planned units cut down to their pending items (units with none dropped; all of
    them as planned when every item is pending)."""
    if len(pending) == sum(len(u.items) for u in units):
        return [u for u in units if u.items]
    keys = set(keys_of(pending))
    cut = (dataclasses.replace(u, items=_kept(u.items, keys)) for u in units)
    return [u for u in cut if u.items]


def _kept(items: Sequence[Spec], keys: set[str]) -> Any:
    """``items`` (a unit's grid or tuple) cut down to ``keys``, of the same type."""
    kept = select(items, keys)
    return kept if isinstance(kept, SpecGrid) else tuple(kept)


def _manifest(config: SweepConfig, plan: SweepPlan) -> dict[str, Any]:
    return run_manifest(
        config.model_dump(mode="json"),
        PROTOCOL,
        prompt_hashes=plan.prompt_hashes,
        category_prior=plan.prior,
        distractor_scheme=plan.distractor_scheme,
        **_turbid_manifest(config),
    )


def _turbid_manifest(config: SweepConfig) -> dict[str, Any]:
    """With the turbid arm: which channel defines its V, the per-channel attenuation ratios
    and the veil its coefficients give (:func:`~clearsight.physics.turbid_coefficients`)."""
    a, b = config.turbid_absorption_per_m, config.turbid_scattering_per_m
    if "turbid" not in config.arms or a is None or b is None:
        return {}
    beta, veil = turbid_coefficients(VISIBILITY_CONSTANT, a, b, config.airlight)
    return {
        "turbid_water": {
            "visibility_channel": "RGB"[int(np.argmin(beta))],
            "attenuation_ratio_rgb": [round(float(x), 6) for x in beta],
            "veil_rgb": [round(float(x), 6) for x in veil],
        }
    }


#: Version of the sweep's planner: raise it when the same config plans other items.
PLAN_VERSION = 1


def _fingerprint(config: SweepConfig) -> list[Any]:
    """What the plan is a function of: the planner's version, the config and (COCO scenes)
    the annotation file's size and modification time."""
    annotations = config.coco_annotations
    stat = annotations.stat() if config.scenes == "coco" and annotations is not None else None
    file = None if stat is None else [stat.st_size, stat.st_mtime_ns]
    return [PLAN_VERSION, config.model_dump(mode="json"), file]


#: The visibility sweep as a value for :func:`clearsight.driver.run`.
SWEEP: Protocol[SweepConfig, SweepPlan] = Protocol(
    PROTOCOL, _models, plan_sweep, _manifest, _stages, fingerprint=_fingerprint
)


def run_sweep(
    config: SweepConfig,
    run_dir: Path,
    *,
    fresh: bool = False,
    allow_mismatch: bool = False,
    executor: ExecutorName = "serial",
    workers: int = 1,
    progress: bool = True,
    ray: RayConfig | None = None,
) -> RunSummary:
    """Plan the sweep, store its items, run what is not finished, and return what ran.

    A rerun of a finished run does nothing but check; an interrupted run resumes. The same as
    ``clearsight.driver.run(SWEEP, config, run_dir, Execution(...))``.
    """
    return driver.run(
        SWEEP,
        config,
        run_dir,
        Execution(executor, workers, ray, progress),
        fresh=fresh,
        allow_mismatch=allow_mismatch,
    )
