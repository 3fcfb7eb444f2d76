"""The probe's configuration: everything that determines a probe run's transcripts.

docs/methods.md §6. :class:`ProbeConfig` names the instances (the bundled set, a local copy or
a hub snapshot, :mod:`~clearsight.probe.sources.load`), the reasoners and the sensor with their
backend options, the strategies (:mod:`~clearsight.probe.strategies`), K, the judge behind u,
R runs, the budget T, the consistency signals shown and the decoding; the command line and
YAML files are read into it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, JsonValue, field_validator, model_validator

from clearsight.probe.reasoner.uot_search import SearchSettings
from clearsight.probe.sources.load import resolve_source
from clearsight.probe.specs import Signal
from clearsight.provenance import RunConfig, named_once, refuse_unknown_models

#: The strategies a run may name (the table of values is
#: :data:`clearsight.probe.strategies.STRATEGIES`; a test keeps the two the same).
StrategyName = Literal["direct", "react", "uot", "uot_prompt", "bp"]


class ProbeConfig(RunConfig):
    """Everything that determines a probe run's transcripts (docs/methods.md §6)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    added_later: ClassVar[tuple[str, ...]] = ("uot", "judge_model")

    instances: str = Field(
        "bundled",
        description="'bundled' (the questions on the bundled photos), or a local dataset copy: "
        "a JSONL, JSON, Parquet or Arrow file or a directory of them (see docs/probe.md).",
    )
    dataset: str = Field(
        "bundled",
        description="Which loader reads `instances`: seedbench, figureqa, mmstar, cvqa, "
        "reasonvqa, or 'jsonl' for instances in clearsight's own JSON form; left out, it is "
        "'bundled' for the bundled set and inferred from the file otherwise (jsonl when its "
        "rows are clearsight's own, else an error asking for it).",
    )
    instance_ids: tuple[str, ...] | None = Field(
        None, description="Only these instance ids (default: all)."
    )
    categories: tuple[str, ...] | None = Field(
        None, description="Only instances of these categories (default: all)."
    )
    limit: int | None = Field(None, ge=1, description="At most this many instances, in order.")
    reasoners: tuple[str, ...] = Field(
        ("hf:smollm2-135m",), description="Reasoner models by spec (any text backend)."
    )
    reasoner_options: dict[str, dict[str, JsonValue]] = Field(
        default_factory=dict, description="Backend options per reasoner spec."
    )
    strategies: tuple[StrategyName, ...] = Field(
        ("direct", "react", "uot", "bp"),
        description="Strategies: direct (VLM only), react, uot (the Uncertainty-of-Thoughts "
        "search, the paper's UoT), uot_prompt (UoT's idea as a system prompt only, without "
        "the search: not the paper's), bp. Default: the paper's three strategies and its "
        "VLM-direct baseline.",
    )
    uot: SearchSettings | None = Field(
        None,
        description="The UoT search and its stop rule: depth, candidates, replies, sharpness, "
        "max_new_tokens, max_queries, commit_posterior (left out: depth 1, 3 candidates, 2 "
        "simulated replies each, lambda 0.4, at most 10 queries, commit at one option left; "
        "clearsight's reading, the paper names none of them).",
    )
    sensor: str = Field("perceiver", description="The sensor VLM by spec (any image backend).")
    sensor_options: dict[str, JsonValue] = Field(
        default_factory=dict, description="Backend options of the sensor."
    )
    k: int = Field(5, ge=1, le=50, description="K, sensor samples per query.")
    judge_model: str | None = Field(
        None,
        description="A text model that judges semantic equivalence (any text backend): with "
        "it and no `judge`, u is judged by the LLM judge llm:<judge_model>, the paper's kind "
        "of judge.",
    )
    judge: str = Field(
        "embedding",
        description="Semantic-equivalence judge behind u: embedding, embedding:<t>, exact, "
        "llm:<model spec>. Left out: llm:<judge_model> where a judge model is configured (the "
        "paper's kind of judge), else embedding (clearsight's cheap alternative, named as such "
        "in the manifest and the report).",
    )
    runs: int = Field(5, ge=1, le=50, description="R, runs per instance (cross-run ECE).")
    budget: int = Field(100, ge=1, description="T, the most turns of a conversation.")
    signals: tuple[Signal, ...] = Field(
        ("true",),
        description="Consistency signal shown to the reasoner: true u, none, random (ablation).",
    )
    temperature: float = Field(1.0, ge=0.0, description="Decoding temperature of both models.")
    max_new_tokens: int | None = Field(
        None,
        ge=8,
        description="Most tokens a reasoner turn generates; unset: the reasoner's preset's "
        "probe_turn_tokens, else 1024 (clearsight's choice: the paper gives no cap).",
    )
    sensor_max_new_tokens: int | None = Field(
        None,
        ge=1,
        description="Most tokens of a sensor sample; unset: the sensor's preset's "
        "probe_sample_tokens, else 256 (clearsight's choice; the paper's replies run to ~90).",
    )
    context_tokens: int | None = Field(
        None,
        ge=256,
        description="The reasoners' context window in tokens (a conversation that outgrows it "
        "ends, 'context'); unset: each reasoner's preset's context_tokens, else its "
        "checkpoint's max_position_embeddings, else 8192 (clearsight's). Checked in "
        "characters: (window - turn tokens) x 3.",
    )
    seed: int = Field(0, description="Run seed (mixed into every item's random streams).")

    @field_validator("signals", mode="before")
    @classmethod
    def _yaml_true(cls, value: Any) -> Any:
        """``true`` as YAML writes it unquoted (a boolean) is the signal ``"true"``."""
        if isinstance(value, list | tuple):
            return [("true" if v is True else v) for v in value]
        return value

    @model_validator(mode="after")
    def _options_of_reasoners(self) -> ProbeConfig:
        named_once(self.reasoners, "reasoners")
        refuse_unknown_models(self.reasoner_options, self.reasoners, "reasoner_options")
        return self

    @model_validator(mode="before")
    @classmethod
    def _judge_of_the_judge_model(cls, data: Any) -> Any:
        """The LLM judge ``llm:<judge_model>`` where a judge model is configured and no
        ``judge`` is given (the paper judges u by an LLM of semantic equivalence); an explicit
        ``judge`` wins, so the embedding judge stays a choice."""
        if isinstance(data, dict) and data.get("judge_model") and data.get("judge") is None:
            return {**data, "judge": f"llm:{data['judge_model']}"}
        return data

    @model_validator(mode="before")
    @classmethod
    def _resolve_source(cls, data: Any) -> Any:
        """The dataset resolved from the source (:func:`resolve_source`)."""
        return resolve_source(data)
