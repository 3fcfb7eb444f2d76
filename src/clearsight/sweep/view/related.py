"""Sweep items seen side by side in ``clearsight view``: the same item for each model, the
same scene across levels, and the same item in another sweep run.

Items are "the same" as ``clearsight compare`` matches them
(:func:`~clearsight.sweep.comparison.matching.item_identity`: scene, target, task, the
category asked, wording, condition, level, severity, the scene a shuffled control shows):

* **models** (:func:`models_of`): the items of every model that ask what the item asks;
* **a strip per arm** (:func:`strip_of`): the same model's items that ask it but for the
  condition and level, clean first, then the arm's levels clearest first (down to the run's
  last level, 1.95 m in the paper's design);
* **another run** (:func:`identity_of`, :func:`find_in`): the item of the model at the same
  place in that run's model list that asks the same (compare's matching).

An item's page names these groups from its spec alone (:func:`groups_of`); a group's members
are found only on its own page. The candidates are found by the view's own listing
(:meth:`~clearsight.faces.viewing.RunView.listing` of the cell's rows of the item's scene:
one SQL query of the side index per cell), and each candidate's stored spec is read by key and
matched by its identity, so nothing but those rows is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from clearsight.faces.viewing import Group, Identity, Member, Query, Related, RunView
from clearsight.store import RunStore
from clearsight.sweep.comparison.matching import Asked, item_identity
from clearsight.sweep.results import ARMS, level_label
from clearsight.sweep.specs import PROTOCOL

__all__ = ["find_in", "groups_of", "identity_of", "models_of", "strip_of"]

#: Most rows of one scene in one cell read (a page of the listing holding them all).
_CELL = 10**6


def _specs(run_dir: Path, keys: Sequence[str]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The stored specs of the ok sweep records of ``keys``, in their order, read by key."""
    with RunStore.open(run_dir, read_only=True) as store:
        for key in keys:
            found = store.record(key)
            if found is not None and found.protocol == PROTOCOL and found.status == "ok":
                yield key, found.spec


def _cell(asked: Asked) -> dict[str, str]:
    """The listing filters of the cell of an item that asks ``asked`` (any model)."""
    filters = {"task": str(asked.task), "wording": str(asked.wording)}
    filters["condition"] = str(asked.condition)
    if asked.condition in ARMS and asked.level_m is not None:
        filters["level"] = level_label(asked.level_m)
    if asked.severity is not None:
        filters["severity"] = str(asked.severity)
    return filters


def _keys(view: RunView, filters: Mapping[str, str], scene: object) -> list[str]:
    """The key of each item of the cell ``filters`` showing ``scene`` (the listing's rows of
    that scene, selected by the side index)."""
    rows = view.listing(Query(filters={**filters, "scene": str(scene)}, per_page=_CELL)).rows
    return [row.key for row in rows]


def _spec(run_dir: Path, key: str) -> Mapping[str, Any] | None:
    return next((spec for _, spec in _specs(run_dir, [key])), None)


def _models_title(asked: Asked) -> str:
    where = f"{asked.condition}"
    level = _cell(asked).get("level")
    where += f" {level} m" if level else ""
    return f"The same item for each model: {asked.scene} · {asked.task} · {asked.wording} · {where}"


def _strip_title(asked: Asked, model: str, arm: str, config: Mapping[str, Any]) -> str:
    levels = config.get("levels_m") or ()
    last = f"{level_label(min(float(v) for v in levels))} m" if levels else "its last level"
    start = "clean" if "clean" in config.get("controls", ()) else "its first level"
    return f"{asked.scene} · {model} · {asked.task} · {asked.wording}: {arm} from {start} to {last}"


def groups_of(run_dir: Path, config: Mapping[str, Any], key: str) -> tuple[Group, ...]:
    """The groups an item's page links to, from its spec alone (no listing read): the same
    item for each model where the run asks several, its scene's strip per arm of the run."""
    spec = _spec(run_dir, key)
    if spec is None:
        return ()
    asked, model = item_identity(spec), str(spec["model"])
    models = [Group("models", _models_title(asked))] if len(config.get("models", ())) > 1 else []
    strips = [
        Group(str(a), _strip_title(asked, model, str(a), config)) for a in config.get("arms", ())
    ]
    return (*models, *strips)


def models_of(view: RunView, run_dir: Path, models: Sequence[str], key: str) -> Related | None:
    """The item ``key`` for each model that was asked it (the run's models in their order,
    people after them); None where the run has no such item."""
    spec = _spec(run_dir, key)
    if spec is None:
        return None
    asked = item_identity(spec)
    found = {
        str(other["model"]): other_key
        for other_key, other in _specs(run_dir, _keys(view, _cell(asked), asked.scene))
        if item_identity(other) == asked
    }
    order = sorted(found, key=lambda m: (models.index(m) if m in models else len(models), m))
    return Related("models", _models_title(asked), _members(order, found))


def _members(labels: Sequence[str], keys: Mapping[str, str]) -> tuple[Member, ...]:
    return tuple(Member(label, keys[label]) for label in labels)


def _unplaced(asked: Asked) -> Asked:
    """What an item asks, but where (condition, level, severity)."""
    return asked._replace(condition=None, level_m=None, severity=None)


def strip_of(
    view: RunView, run_dir: Path, config: Mapping[str, Any], key: str, arm: str
) -> Related | None:
    """The item's scene as its model was asked it clean and at each of ``arm``'s levels,
    clearest first (module docstring); None where the run has no such item or arm."""
    spec = _spec(run_dir, key)
    if spec is None or arm not in config.get("arms", ()):
        return None
    asked, model = item_identity(spec), str(spec["model"])
    levels = sorted((float(v) for v in config.get("levels_m", ())), reverse=True)
    places = [("clean", None)] if "clean" in config.get("controls", ()) else []
    labels: dict[str, str] = {}  # each candidate's key: its column's label
    for condition, level in [*places, *((arm, level) for level in levels)]:
        cell = _cell(asked._replace(condition=condition, level_m=level, severity=None))
        label = "clean" if level is None else f"{level_label(level)} m"
        labels |= dict.fromkeys(_keys(view, {**cell, "model": model}, asked.scene), label)
    found: dict[str, str] = {}
    for other_key, other in _specs(run_dir, list(labels)):  # one read of the store
        if _unplaced(item_identity(other)) == _unplaced(asked):
            found.setdefault(labels[other_key], other_key)
    title = _strip_title(asked, model, arm, config)
    return Related(arm, title, _members(list(found), found))


def identity_of(run_dir: Path, models: Sequence[str], key: str) -> Identity | None:
    """What item ``key`` is across sweep runs: its model's place in the run's list (-1: a
    person or a model the list does not name) and what it asks (compare's matching)."""
    spec = _spec(run_dir, key)
    if spec is None:
        return None
    model = str(spec["model"])
    return (models.index(model) if model in models else -1, *item_identity(spec))


def find_in(view: RunView, run_dir: Path, models: Sequence[str], identity: Identity) -> str | None:
    """The key of this run's item of ``identity`` (:func:`identity_of` of another run's
    item): the model at the same place asked the same; None where the run has none (nor for
    a person's item: the place does not say which person)."""
    place, *fields = identity
    if not isinstance(place, int) or not 0 <= place < len(models):
        return None
    if len(fields) != len(Asked._fields):
        return None
    asked = Asked(*fields)
    filters = {**_cell(asked), "model": models[place]}
    offered = view.filters()
    if any(value not in offered.get(name, ()) for name, value in filters.items()):
        return None
    for key, spec in _specs(run_dir, _keys(view, filters, asked.scene)):
        if item_identity(spec) == asked:
            return key
    return None
