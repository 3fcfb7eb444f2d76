"""Which trajectory template a model writes in, and how long it may write (the run's choice).

The templates are data: the canonical tagged one (``data/template.json``, named ``canonical``)
and the model-native ones (``data/native_templates.yaml``: ``think``, the paper's Qwen3-VL
think-block template; ``vlcal``, VL-Calibration's vision / reasoning / answer blocks). A run's
``trajectory_template`` is ``native`` (each model in its own family's template: the paper's for
Qwen3-VL and VL-Calibration, clearsight's choice of ``think`` for InternVL, the canonical one
where its family has none), ``canonical``, or a template's name
(:func:`choose_template`). A native family is found from the model's preset name, then its
preset's family, then the ``model_type`` of a local checkpoint's ``config.json`` (the data
file's ``native`` table).

An own trajectory may generate ``max_new_tokens``; where the run gives none, the model's
default is its preset's ``trajectory_tokens``, else its backend's (the data file's
``generation`` table) — room for a free-form rationale to finish (:func:`trajectory_tokens`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any, TypedDict, cast

import yaml
from pydantic import JsonValue

from clearsight.grounding.trajectories.trajectory import Template, default_template, template_of
from clearsight.validate import InputError

#: The run's choice that picks each model's own family template.
NATIVE = "native"
#: The name of the canonical tagged template.
CANONICAL = "canonical"


class _NativeTable(TypedDict):
    """Which template is a model's own, by its preset's name, its family or its checkpoint's
    ``model_type``."""

    presets: dict[str, str]
    families: dict[str, str]
    model_types: dict[str, str]


class _TemplatesFile(TypedDict):
    """``data/native_templates.yaml``: the templates' fields (and ``source``) by name, the
    native table, and the default generation length per backend."""

    templates: dict[str, dict[str, str | list[str]]]
    native: _NativeTable
    generation: dict[str, int]


@lru_cache(maxsize=1)
def _data() -> _TemplatesFile:
    """The bundled templates' data file, read once."""
    text = files("clearsight.grounding").joinpath("data/native_templates.yaml").read_text()
    return cast(_TemplatesFile, yaml.safe_load(text))


@lru_cache(maxsize=1)
def templates() -> dict[str, Template]:
    """Every bundled trajectory template by name (``canonical`` first)."""
    out = {CANONICAL: default_template()}
    for name, fields in _data()["templates"].items():
        out[str(name)] = template_of({k: v for k, v in fields.items() if k != "source"})
    return out


def template_sources() -> dict[str, str]:
    """Where each bundled template comes from (the data file's ``source``)."""
    out = {CANONICAL: "the toolkit's tagged template (Observation / Reasoning / Answer lines)"}
    out |= {str(n): str(f["source"]) for n, f in _data()["templates"].items()}
    return out


def get_template(name: str) -> Template:
    """The bundled template ``name``; InputError naming the known ones otherwise."""
    known = templates()
    if name not in known:
        raise InputError(f"unknown trajectory template {name!r} (known: {', '.join(known)})")
    return known[name]


def template_by_id(template_id: str) -> Template:
    """The bundled template whose ``id`` is ``template_id`` (an item's stored reference)."""
    for t in templates().values():
        if t.id == template_id:
            return t
    raise InputError(f"no bundled trajectory template has the id {template_id!r}")


def check_choice(choice: str) -> str:
    """``choice`` when it is ``native`` or a bundled template's name; InputError otherwise."""
    if choice != NATIVE:
        get_template(choice)
    return choice


@dataclass(frozen=True)
class Chosen:
    """The template a model runs with: its name, the template, and why (for the manifest)."""

    name: str
    template: Template
    reason: str


def _model_type(model: str) -> str | None:
    """The ``model_type`` of a local checkpoint's ``config.json`` (``hf:<dir>``,
    ``vllm:<dir>``), None for anything else."""
    prefix, _, arg = model.partition(":")
    if prefix not in ("hf", "vllm") or not arg:
        return None
    path = Path(arg).expanduser() / "config.json"
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def native_template(model: str, options: Mapping[str, JsonValue]) -> Chosen:
    """``model``'s own family template (its preset's name, its preset's family, its
    checkpoint's ``model_type``), or the canonical one with the reason it has none."""
    from clearsight.models.presets import PRESET_KEY, find_preset

    table = _data()["native"]
    name = options.get(PRESET_KEY)
    preset = find_preset(name) if isinstance(name, str) else None
    if preset is not None and preset.name in table["presets"]:
        found = table["presets"][preset.name]
        return Chosen(found, get_template(found), f"native: preset {preset.name}")
    if preset is not None and preset.family in table["families"]:
        found = table["families"][preset.family]
        return Chosen(found, get_template(found), f"native: family {preset.family}")
    model_type = _model_type(model)
    if model_type is not None and model_type in table["model_types"]:
        found = table["model_types"][model_type]
        return Chosen(found, get_template(found), f"native: model_type {model_type}")
    if preset is not None:
        family = f"family {preset.family}"
    elif model_type is not None:
        family = f"model_type {model_type}"
    else:
        family = f"{model} (no preset, no local config.json)"
    reason = f"canonical: no native template for {family}"
    return Chosen(CANONICAL, default_template(), reason)


def choose_template(choice: str, model: str, options: Mapping[str, JsonValue]) -> Chosen:
    """The template ``model`` (with its resolved ``options``) runs with under the run's
    ``choice``: ``native`` (:func:`native_template`) or a named template."""
    if choice == NATIVE:
        return native_template(model, options)
    return Chosen(choice, get_template(choice), "chosen")


def trajectory_tokens(model: str, options: Mapping[str, JsonValue], given: int | None) -> int:
    """The tokens an own trajectory of ``model`` may generate: ``given`` when the run sets it,
    else its preset's ``trajectory_tokens``, else its backend's default (module docstring)."""
    if given is not None:
        return given
    from clearsight.models.presets import PRESET_KEY, find_preset

    name = options.get(PRESET_KEY)
    preset = find_preset(name) if isinstance(name, str) else None
    if preset is not None and preset.trajectory_tokens is not None:
        return preset.trajectory_tokens
    table = _data()["generation"]
    return int(table.get(model.partition(":")[0], table["default"]))


def template_statement(manifest: Mapping[str, Any]) -> str:
    """What a run's manifest says of its own trajectories' template, as the report states it:
    the template, why, and the generation length (a run made before the template was a choice
    ran the canonical one)."""
    t = manifest.get("trajectory")
    if not isinstance(t, Mapping):
        return "canonical (the only template when this run was made)"
    return (
        f"{t.get('template')} (choice {t.get('choice')}; {t.get('reason')}); own trajectories "
        f"up to {t.get('max_new_tokens')} new tokens"
    )


__all__ = [
    "CANONICAL",
    "NATIVE",
    "Chosen",
    "check_choice",
    "choose_template",
    "get_template",
    "native_template",
    "template_by_id",
    "template_sources",
    "template_statement",
    "templates",
    "trajectory_tokens",
]
