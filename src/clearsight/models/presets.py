"""Presets: the recommended backend options of the models the three protocols were first run
with (Qwen3-VL, InternVL3.5, Gemma 3n, SmolVLM2, the probe's reasoners, ...), kept as data in
``presets.yaml`` beside this module and listed by ``clearsight models``.

A preset applies to a model named through ``hf:`` or ``vllm:`` by its hub id
(``hf:Qwen/Qwen3-VL-8B-Instruct``), or to any ``hf:``/``vllm:`` model whose options say
``preset: NAME`` (a local copy, ``hf:/data/qwen3-vl-8b``); ``preset: none`` turns presets off.
:func:`resolve_options` is the one place this happens: the preset's options for the backend,
then the options the run gives, which win. Its result names the preset it applied under the
key ``preset``, so an item's stored options (and its key) say which preset it ran with, and
resolving a resolved mapping again changes nothing. :func:`backend_options` drops that key
for the backend; the driver records every applied preset in the run's manifest
(:func:`applied_presets`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from clearsight.models.attention import fill
from clearsight.validate import InputError, invalid_options

__all__ = [
    "PRESET_KEY",
    "AppliedPreset",
    "Preset",
    "applied_presets",
    "backend_options",
    "find_preset",
    "presets",
    "resolve_options",
]

#: The options key that names a preset (a preset's name, or ``none``) and records the applied one.
PRESET_KEY = "preset"
#: The backends presets hold options for.
BACKENDS = ("hf", "vllm")
_FILE = Path(__file__).with_name("presets.yaml")


class AppliedPreset(TypedDict):
    """A preset a run applied to a model (the manifest's ``presets`` entry of the model)."""

    preset: str
    """The preset's name."""
    options: dict[str, JsonValue]
    """The options the model ran with: the preset's under the run's own."""


class Preset(BaseModel):
    """One model's recommended settings (the fields are described in ``presets.yaml``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    hub_id: str | None
    family: str
    model_type: str
    """The checkpoint config's ``model_type``: the family the ``hf`` backend's rules key on
    (``clearsight plan`` counts vision encodes by it before the checkpoint is downloaded)."""
    kind: Literal["vlm", "text"]
    protocols: tuple[Literal["sweep", "grounding", "probe"], ...]
    params_b: float = Field(gt=0)
    backend: Literal["hf", "vllm"]
    hf: dict[str, JsonValue]
    vllm: dict[str, JsonValue]
    trajectory_tokens: int | None = Field(None, ge=1)
    """Tokens the model's own grounding trajectory may generate by default (None: its
    backend's default, :func:`clearsight.grounding.trajectories.templates.trajectory_tokens`)."""
    probe_turn_tokens: int | None = Field(None, ge=8)
    """Tokens a probe reasoner turn of the model may generate (None: the probe's default,
    :mod:`clearsight.probe.reasoner.limits`)."""
    probe_sample_tokens: int | None = Field(None, ge=1)
    """Tokens a probe sensor sample of the model may generate (None: the probe's default)."""
    note: str = ""

    @field_validator("hf")
    @classmethod
    def _hf_options(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """Only options the ``hf`` backend accepts, with values it accepts."""
        from clearsight.models.hf_options import parse_options

        parse_options(value)
        return value

    @field_validator("vllm")
    @classmethod
    def _vllm_options(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """Only options the ``vllm`` backend accepts, with values it accepts."""
        from clearsight.models.vllm import VLLMOptions

        try:
            VLLMOptions.model_validate(value)
        except ValidationError as exc:
            raise invalid_options(exc, "vllm backend options") from exc
        return value

    @property
    def gpu_gib(self) -> int:
        """GPU memory in GiB a run with the ``hf`` options needs, estimated (not measured):
        ``ceil(1.2 * W + 2)`` with ``W = params_b * 1e9 * 2 / 2**30`` the bfloat16 weights —
        a fifth more for one batch's activations and key-value cache, 2 GiB of CUDA context."""
        weights = self.params_b * 1e9 * 2 / 2**30
        return math.ceil(1.2 * weights + 2)

    @property
    def context_tokens(self) -> int | None:
        """The context window the preset serves the model with (its vLLM ``max_model_len``;
        None where it gives none): the probe's limit on a reasoner's prompt."""
        value = self.vllm.get("max_model_len")
        return value if isinstance(value, int) else None

    def options(self, backend: str) -> dict[str, JsonValue]:
        """The preset's options for ``backend`` (``hf`` or ``vllm``)."""
        return dict(self.hf if backend == "hf" else self.vllm)


@cache
def presets() -> tuple[Preset, ...]:
    """Every preset in ``presets.yaml``, in its order (read and checked once per process)."""
    import yaml

    doc = yaml.safe_load(_FILE.read_text(encoding="utf-8"))
    try:
        return tuple(Preset(name=name, **fields) for name, fields in doc.items())
    except (ValidationError, InputError) as exc:  # a packaging fault, not a user's
        raise RuntimeError(f"{_FILE} holds a bad preset: {exc}") from exc


def find_preset(name: str) -> Preset | None:
    """The preset called ``name`` or the one whose hub id is ``name``, else None."""
    for preset in presets():
        if name in (preset.name, preset.hub_id):
            return preset
    return None


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
