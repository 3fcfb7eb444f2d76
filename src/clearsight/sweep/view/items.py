"""A sweep item rebuilt from its stored spec: the typed :class:`~clearsight.sweep.specs.SweepItem`
whose image ``clearsight view`` renders, refused unless its key is the stored key (so the image
is that of exactly the item asked)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from clearsight.scenes.coco import CocoTarget
from clearsight.specs import Options
from clearsight.sweep.specs import Physics, SceneRef, Shown, SweepItem
from clearsight.tasks import Question
from clearsight.validate import InputError

__all__ = ["QuestionOf", "sweep_item"]

#: A sweep question from its stored form (:func:`clearsight.sweep.face.question_of`, handed in
#: by the face that declares the view).
QuestionOf = Callable[[Mapping[str, Any]], Question]


def _scene_ref(stored: Mapping[str, Any]) -> SceneRef:
    coco = stored.get("coco")
    target = None
    if coco is not None:
        target = CocoTarget(**{**coco, "file": Path(coco["file"]), "box": tuple(coco["box"])})
    return SceneRef(stored["source"], stored["id"], (), (), target)


def _physics(stored: Mapping[str, Any]) -> Physics:
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in stored.items()}
    return Physics(**fields)


def sweep_item(key: str, spec: Mapping[str, Any], question_of: QuestionOf) -> SweepItem:
    """The typed sweep item of a stored spec (its question rebuilt by ``question_of``);
    InputError unless its key is ``key`` (the spec read back is then exactly the one the run
    asked)."""
    shown = spec.get("shown")
    names = ("target", "category", "condition", "level_m", "severity", "task", "asked", "wording")
    plain: dict[str, Any] = {name: spec.get(name) for name in (*names, "seed")}
    item = SweepItem(
        **plain,
        scene=_scene_ref(spec["scene"]),
        box=tuple(spec["box"]),
        question=question_of(spec["question"]),
        physics=_physics(spec["physics"]),
        shown=None
        if shown is None
        else Shown(_scene_ref(shown["scene"]), tuple(shown["box"]), shown["category"]),
        model=spec["model"],
        model_options=Options(spec["model_options"]),
        plasma=spec.get("plasma"),
        corruption=spec.get("corruption"),
    )
    if item.key != key:
        raise InputError(f"the stored spec of item {key} does not rebuild into that item")
    return item
