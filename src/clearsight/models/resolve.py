"""The options a model runs with: its preset's options for its backend
(:mod:`clearsight.models.presets`) under the options the run gives, which win, and an ``hf``
model's attention kernel filled in from its family (:mod:`clearsight.models.attention`).

:func:`resolve_options` is the one place this happens. Its result names the preset it applied
under the key ``preset``, so an item's stored options (and its key) say which preset it ran
with, and resolving a resolved mapping again changes nothing. :func:`backend_options` drops
that key for the backend; the driver records every applied preset in the run's manifest
(:func:`applied_presets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypedDict

from pydantic import JsonValue

from clearsight.models.attention import fill
from clearsight.models.presets import BACKENDS, PRESET_KEY, Preset, find_preset, presets
from clearsight.validate import InputError

__all__ = ["AppliedPreset", "applied_presets", "backend_options", "resolve_options"]


class AppliedPreset(TypedDict):
    """A preset a run applied to a model (the manifest's ``presets`` entry of the model)."""

    preset: str
    """The preset's name."""
    options: dict[str, JsonValue]
    """The options the model ran with: the preset's under the run's own."""


def _chosen(model: str, options: Mapping[str, JsonValue]) -> Preset | None:
    """The preset ``options`` name (InputError for an unknown name, or one given to a backend
    presets do not serve), else the one of ``model``'s hub id, else None."""
    prefix, _, arg = model.partition(":")  # the registry checks the prefix when it loads
    if PRESET_KEY not in options:
        return find_preset(arg) if prefix in BACKENDS and arg else None
    name = options[PRESET_KEY]
    if name is None or name == "none":
        return None
    where = f"the options of {model!r}"
    if prefix not in BACKENDS:
        raise InputError(f"{PRESET_KEY}: {name!r} in {where}: presets serve hf: and vllm: models")
    preset = find_preset(name) if isinstance(name, str) else None
    if preset is None:
        known = ", ".join(p.name for p in presets())
        raise InputError(f"unknown preset {name!r} in {where}; known presets: {known}")
    return preset


def resolve_options(
    model: str, options: Mapping[str, JsonValue] | None = None
) -> dict[str, JsonValue]:
    """The options ``model`` runs with: its preset's options for its backend (see the module
    docstring) under ``options``, which win, and ``preset`` naming the preset applied; a model
    without a preset gets ``options`` unchanged. An ``hf`` model's attention kernel, where
    neither names one, is its family's in a run that fills it in
    (:func:`clearsight.models.attention.fill`). Idempotent."""
    given = dict(options or {})
    preset = _chosen(model, given)
    if preset is None:
        if PRESET_KEY in given:
            given[PRESET_KEY] = None  # off, and stays off when resolved again
        return fill(model, given)
    backend = model.partition(":")[0]
    return fill(model, {**preset.options(backend), **given, PRESET_KEY: preset.name})


def backend_options(
    model: str, options: Mapping[str, JsonValue] | None = None
) -> dict[str, JsonValue]:
    """:func:`resolve_options` without the ``preset`` key: what the backend is given."""
    resolved = resolve_options(model, options)
    resolved.pop(PRESET_KEY, None)
    return resolved


def applied_presets(
    models: Iterable[tuple[str, Mapping[str, JsonValue]]],
) -> dict[str, AppliedPreset]:
    """Per model of ``models`` (name and the run's options) that a preset applies to: the
    preset's name and the options the model runs with (the manifest's ``presets`` entry)."""
    out: dict[str, AppliedPreset] = {}
    for model, options in models:
        resolved = resolve_options(model, options)
        name = resolved.pop(PRESET_KEY, None)
        if isinstance(name, str):  # the preset applied (None: none applies)
            out[model] = {"preset": name, "options": resolved}
    return out
