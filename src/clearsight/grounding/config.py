"""The configuration of a grounding run (docs/methods.md §5): which problems, which model,
which analyses (:class:`GroundingConfig`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import ConfigDict, Field, JsonValue, field_validator

from clearsight.grounding.confidence.methods import DEFAULT_READOUT, get_readout
from clearsight.grounding.problems.bundled import TEXT_FAMILIES
from clearsight.grounding.tgs import MASK_RATIOS
from clearsight.provenance import RunConfig
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.grounding.trajectories.templates import Chosen


class GroundingConfig(RunConfig):
    """A grounding run: which problems, which model, which analyses."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    # variation_mode is not here: its default changed to the paper's sampled alternatives
    added_later: ClassVar[tuple[str, ...]] = ("bench", "variation_samples", "readouts")

    model: str = Field("hf:smollm2-135m", description="Model whose confidence is measured.")
    model_options: dict[str, JsonValue] = Field(
        default_factory=lambda: dict[str, JsonValue](batch_size=16),
        description="Backend options of the model (hf: batch_size, device, dtype, ...).",
    )
    generator: str | None = Field(
        "hf:smollm2-135m",
        description="Model that injects vision/reasoning errors for TGS-Bench; None: rule only.",
    )
    n_problems: int = Field(200, ge=0, description="Bundled problems to generate.")
    families: tuple[str, ...] = Field(TEXT_FAMILIES, description="Bundled problem families.")
    seed: int = Field(0, description="Seed of problem generation, masking subsets and edits.")
    datasets_dir: str | None = Field(
        None, description="Directory with local copies of the paper's benchmarks."
    )
    benchmarks: tuple[str, ...] = Field((), description="Benchmarks to load from datasets_dir.")
    jsonl: tuple[str, ...] = Field((), description="JSONL files of normalised problems.")
    limit: int | None = Field(None, ge=1, description="Problems per loaded benchmark at most.")
    bench: str | None = Field(
        None,
        description="A TGS-Bench file (clearsight build-bench): its problems join the run and "
        "its pairs are scored instead of pairs built from the problems' solutions.",
    )
    trajectory_template: str = Field(
        "native",
        description="Template of the model's own trajectories (data/native_templates.yaml): "
        "native (the model family's own — think for Qwen3-VL and VL-Calibration's vlcal, "
        "the paper's; think for InternVL, clearsight's choice — scored as written; "
        "canonical where the family has none), canonical (the tagged "
        "Observation/Reasoning/Answer template, re-rendered), "
        "think or vlcal.",
    )
    max_new_tokens: int | None = Field(
        None,
        ge=1,
        description="Tokens an own trajectory may generate; unset: the model's default (its "
        "preset's trajectory_tokens, else its backend's: hf 1024, vllm and openai 2048).",
    )
    mask_ratios: tuple[float, ...] = Field(MASK_RATIOS, description="Masking-curve shares r.")
    pairs: bool = Field(True, description="Build and score TGS-Bench pairs.")
    variation: bool = Field(True, description="Score content-variation alternatives.")
    variation_mode: Literal["sampled", "handwritten"] = Field(
        "sampled",
        description="sampled: K alternatives per axis sampled from the model's own trajectory "
        "(the paper); handwritten: the canonical solution's one alternative (deterministic).",
    )
    variation_samples: int = Field(5, ge=1, description="Sampled alternatives per axis (K).")
    readouts: tuple[str, ...] = Field(
        (DEFAULT_READOUT,),
        min_length=1,
        description="Calibration read-outs scored side by side (data/readouts.yaml): "
        "verbalize, ptrue, steerconf, conftuner, rlcr, vlcal; the first is the report's main.",
    )
    hesitation: bool = Field(True, description="Score hesitation events in own trajectories.")
    judge: str | None = Field(
        None,
        description="Model asked which side of each vision/reasoning/answer pair holds the "
        "error (the paper's independent-judge validation); None: no judge pass.",
    )
    unit_size: int = Field(32, ge=1, description="Items per work unit (batched together).")
    n_boot: int = Field(5000, ge=100, description="Bootstrap draws of the report's intervals.")

    @field_validator("mask_ratios")
    @classmethod
    def _shares(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if not all(0.0 <= r <= 1.0 for r in v) or len(set(v)) != len(v):
            raise ValueError("must be distinct shares in [0, 1]")
        return v

    @field_validator("trajectory_template")
    @classmethod
    def _known_template(cls, v: str) -> str:
        from clearsight.grounding.trajectories.templates import check_choice

        return check_choice(v)

    @field_validator("readouts")
    @classmethod
    def _known_readouts(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            get_readout(name)
        if len(set(v)) != len(v):
            raise InputError(f"a read-out is named twice in {list(v)}")
        return v

    def options_of(self, model: str | None) -> dict[str, JsonValue]:
        """The options ``model`` (the measured model, the generator or the judge) runs with:
        ``model_options`` over its preset's (:func:`clearsight.models.resolve.resolve_options`);
        none for no model (the rule-only generator)."""
        from clearsight.models.resolve import resolve_options

        return {} if model is None else resolve_options(model, self.model_options)

    def template(self) -> Chosen:
        """The template the measured model's own trajectories are written in (the
        ``trajectory_template`` choice resolved for its family)."""
        from clearsight.grounding.trajectories.templates import choose_template

        return choose_template(self.trajectory_template, self.model, self.options_of(self.model))

    def trajectory_tokens(self) -> int:
        """The tokens an own trajectory may generate (``max_new_tokens``, else the model's
        default)."""
        from clearsight.grounding.trajectories.templates import trajectory_tokens

        return trajectory_tokens(self.model, self.options_of(self.model), self.max_new_tokens)
