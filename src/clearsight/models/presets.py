"""Presets: the recommended backend options of the models the three protocols were first run
with (Qwen3-VL, InternVL3.5, Gemma 3n, SmolVLM2, the probe's reasoners, ...), kept as data in
``presets.yaml`` beside this module and listed by ``clearsight models``.

A preset applies to a model named through ``hf:`` or ``vllm:`` by its hub id
(``hf:Qwen/Qwen3-VL-8B-Instruct``), or to any ``hf:``/``vllm:`` model whose options say
``preset: NAME`` (a local copy, ``hf:/data/qwen3-vl-8b``); ``preset: none`` turns presets off.
This module holds the presets as data (:func:`presets`, :func:`find_preset`); the options a
model runs with are resolved from them by :func:`clearsight.models.resolve.resolve_options`.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from clearsight.validate import InputError, invalid_options

__all__ = ["BACKENDS", "PRESET_KEY", "Preset", "find_preset", "presets"]

#: The options key that names a preset (a preset's name, or ``none``) and records the applied one.
PRESET_KEY = "preset"
#: The backends presets hold options for.
BACKENDS = ("hf", "vllm")
_FILE = Path(__file__).with_name("presets.yaml")


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
