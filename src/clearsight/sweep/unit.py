"""Running one unit of the visibility sweep into records, inside a worker.

A unit (:class:`SweepUnit`) is the questions of one scene for one model: the worker decodes the
scene once (:func:`load_scene`), renders each degraded image once for all the questions that use
it (:class:`_Images`; pixels never reach the store), builds each item's request — the image with
the target's box, the prompt, the decoding, and the :class:`~clearsight.sweep.references.observer.
ObserverReference` a reference observer reads — asks the model in one batch and turns each
checked reply into a record with its read-outs (:func:`~clearsight.sweep.readouts.
sweep_readouts`). The model-free units (each ImageNet-C severity's equivalent visibility, each
scene's depth profile) are :mod:`clearsight.sweep.model_free`'s. A failure of the unit fails its
items with the reason (:func:`failed_records`); a failure of one request or reply fails only its
item.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import JsonValue

from clearsight.execute.kept import with_shown
from clearsight.execute.unit import KeyedItems
from clearsight.models import Decoding, Message, Request, Response, shared_backend
from clearsight.models.replies import checked_replies
from clearsight.physics import blank_like, draw_box
from clearsight.scenes.depth import DepthProvider
from clearsight.scenes.model import Scene
from clearsight.seeding import derive_seed
from clearsight.store import Record, SpecGrid
from clearsight.sweep.conditions import (
    ARMS,
    PlasmaDraw,
    arm_physics,
    arm_stack,
    imagenet_c_stack,
)
from clearsight.sweep.readouts import sweep_readouts
from clearsight.sweep.references.observer import ObserverReference
from clearsight.sweep.specs import SceneRef, SweepItem
from clearsight.tasks import Question
from clearsight.validate import InputError

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


_DEPTH: dict[str, DepthProvider] = {}


def _depth_estimator(model: str) -> DepthProvider:
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


@dataclass(frozen=True)
class SweepUnit(KeyedItems):
    """The questions of one scene for one model: picklable, independent of every other unit."""

    model: str
    model_options: dict[str, JsonValue]
    scene: SceneRef
    depth_model: str
    items: SpecGrid[SweepItem]
    max_new_tokens: int = 24


class _Images:
    """Degraded images of one scene, each rendered once, boxes drawn per target on copies."""

    def __init__(self, scene: Scene, items: Sequence[SweepItem]) -> None:
        self.scene = scene
        physics = items[0].physics
        self.thickness = physics.box_thickness_px
        self._stacks: dict[str, dict[Any, npt.NDArray[np.uint8]]] = {}
        levels: dict[str, set[float]] = defaultdict(set)
        severities: dict[str, set[int]] = defaultdict(set)
        plasma: PlasmaDraw = "common"
        for it in items:
            if it.condition in ARMS and it.level_m is not None:
                levels[it.condition].add(it.level_m)
            elif it.condition == "imagenet_c" and it.severity is not None:
                severities[it.corruption or "fog"].add(it.severity)
                plasma = "independent" if it.plasma == "independent" else "common"
        physics_of = arm_physics(physics.json)
        for arm, lv in levels.items():
            ordered = sorted(lv, reverse=True)
            stack = arm_stack(scene, arm, ordered, **physics_of[arm])  # type: ignore[arg-type]
            self._stacks[arm] = dict(zip(ordered, stack, strict=True))
        for name, sevs in severities.items():
            ordered_sev = sorted(sevs)
            nominal = imagenet_c_stack(scene, ordered_sev, items[0].seed, plasma, name)
            self._stacks[_stack_name("imagenet_c", name)] = dict(
                zip(ordered_sev, nominal, strict=True)
            )
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
            stack = _stack_name(cond, item.corruption or "fog")
            key, base = (stack, level, box), self._stacks[stack][level]
        if key not in self._boxed:
            self._boxed[key] = draw_box(base.copy(), box, self.thickness)
        return self._boxed[key]


def _stack_name(condition: str, corruption: str) -> str:
    """The stack a condition's images are kept in: its own, one per corruption for ImageNet-C
    (fog's under ``imagenet_c``, as before the other corruptions)."""
    if condition != "imagenet_c" or corruption == "fog":
        return condition
    return f"imagenet_c.{corruption}"


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


def item_request(item: SweepItem, depth_model: str, max_new_tokens: int = 24) -> Request:
    """The request :func:`run_unit` sends for ``item``, built alone (its scene, and the one a
    shuffled item shows, loaded here): what a re-ask of a finished item sends again."""
    scene = load_scene(item.scene, depth_model)
    shown = None if item.shown is None else load_scene(item.shown.scene, depth_model)
    clean = None if item.condition == "blank" else (shown or scene)
    return _request(item, _Images(scene, [item]).get(item, shown), clean, max_new_tokens)


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
        abstain_names_reason=q.abstain is not None and item.wording != "mcq.generic",
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


def failed_records(unit: KeyedItems, exc: BaseException, started: float) -> list[Record]:
    """Every item of ``unit`` failed with ``exc`` (a unit-level failure)."""
    return [Record.failed(key, exc, time.perf_counter() - started) for key in unit.keys]


def run_unit(unit: SweepUnit) -> list[Record]:
    """Records of one unit. A unit-level failure (an unreadable image, say) fails its items with
    the reason; a failing request, or a reply that cannot be read
    (:func:`~clearsight.models.replies.checked_reply`), fails only its own item. The record of
    an item the run keeps the image of (a tracker's sample) carries the pixels its request
    sent (:func:`~clearsight.execute.kept.with_shown`)."""
    started = time.perf_counter()
    items = tuple(unit.items)  # a grid builds its items when iterated: once here
    try:
        scene = load_scene(unit.scene, unit.depth_model)
        backend = shared_backend(unit.model, unit.model_options)
        images = _Images(scene, items)
    except Exception as exc:  # recorded with its reason; the run goes on
        return failed_records(unit, exc, started)
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
    records = [item_record(item, r, elapsed) for item, r in zip(items, replies, strict=True)]
    return with_shown(records, {item.key: r for item, r in zip(items, built, strict=True)})


def item_record(item: SweepItem, reply: Response | BaseException, elapsed: float) -> Record:
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
