"""The probe protocol (docs/methods.md §6): plan the conversations, run them, keep
the transcripts.

A probe item is one conversation: (instance, strategy, reasoner, sensor, consistency signal,
run). Its spec (:class:`~clearsight.probe.specs.ConversationSpec`, or
:class:`~clearsight.probe.specs.DirectSpec` for the baseline) holds everything that determines
it (the instance itself, the models and their options, K, the judge, the budget T, decoding,
the strategy prompt's content hash) and its key is the spec's content hash, so a rerun skips
finished conversations. Each item is its own unit: a run killed at any moment loses only the
conversations in flight. Workers keep the reasoner and the sensor loaded between units (one copy
per process). Strategy ``direct`` is the VLM-direct baseline: the sensor answers the
multiple-choice question itself, one sample per run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from clearsight import driver
from clearsight.driver import Execution, ModelNeed, Protocol, RunSummary, Stage
from clearsight.execute import ExecutorName
from clearsight.models.base import Capabilities
from clearsight.models.presets import resolve_options
from clearsight.probe.instances import (
    Instance,
    load_instances,
    resolve_source,
    source_manifest,
)
from clearsight.probe.reasoner import STRATEGIES, LoopSettings, prompt_hash
from clearsight.probe.specs import ConversationSpec, DirectSpec, PlannedSpec
from clearsight.probe.transcript import PROTOCOL, Transcript, transcript_record
from clearsight.probe.uot import UOT, SearchSettings
from clearsight.provenance import RunConfig, named_once, refuse_unknown_models, run_manifest
from clearsight.seeding import content_hash, rng_for
from clearsight.store import Record, RunStore
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.execute.on_ray import RayConfig

Strategy = Literal["direct", "react", "uot", "uot_prompt", "bp"]
SignalName = Literal["true", "none", "random"]


class ProbeConfig(RunConfig):
    """Everything that determines a probe run's transcripts (docs/methods.md §6)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    added_later: ClassVar[tuple[str, ...]] = ("uot",)

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
    reasoner_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Backend options per reasoner spec."
    )
    strategies: tuple[Strategy, ...] = Field(
        ("direct", "react", "bp"),
        description="Strategies: direct (VLM only), react, uot (the Uncertainty-of-Thoughts "
        "search), uot_prompt (UoT as a system prompt only), bp.",
    )
    uot: SearchSettings | None = Field(
        None,
        description="The UoT search: depth, candidates, replies, sharpness, max_new_tokens "
        "(left out: depth 1, 3 candidates, 2 simulated replies each, lambda 0.4).",
    )
    sensor: str = Field("perceiver", description="The sensor VLM by spec (any image backend).")
    sensor_options: dict[str, Any] = Field(
        default_factory=dict, description="Backend options of the sensor."
    )
    k: int = Field(5, ge=1, le=50, description="K, sensor samples per query.")
    judge: str = Field(
        "embedding",
        description="Semantic-equivalence judge behind u: embedding, embedding:<t>, exact, "
        "llm:<model spec>.",
    )
    runs: int = Field(5, ge=1, le=50, description="R, runs per instance (cross-run ECE).")
    budget: int = Field(100, ge=1, description="T, the most turns of a conversation.")
    signals: tuple[SignalName, ...] = Field(
        ("true",),
        description="Consistency signal shown to the reasoner: true u, none, random (ablation).",
    )
    temperature: float = Field(1.0, ge=0.0, description="Decoding temperature of both models.")
    max_new_tokens: int = Field(128, ge=8, description="Most tokens a reasoner turn generates.")
    sensor_max_new_tokens: int = Field(48, ge=1, description="Most tokens of a sensor sample.")
    context_chars: int = Field(
        24_000, ge=200, description="Most characters of a reasoner prompt (context overflow)."
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
    def _resolve_source(cls, data: Any) -> Any:
        """The dataset resolved from the source (:func:`resolve_source`)."""
        return resolve_source(data)


def select_instances(config: ProbeConfig) -> list[Instance]:
    """The instances of a run, filtered by ids and categories, at most ``limit``."""
    from clearsight.probe.instances import instances_from_jsonl

    if config.dataset == "bundled":
        items = load_instances(config.instances, "bundled")
    elif config.dataset == "jsonl":
        items = instances_from_jsonl(config.instances)
    else:
        items = load_instances(config.instances, config.dataset)
    if config.instance_ids is not None:
        wanted = set(config.instance_ids)
        unknown = wanted - {i.id for i in items}
        if unknown:
            raise InputError(f"unknown instance ids: {sorted(unknown)[:5]}")
        items = [i for i in items if i.id in wanted]
    if config.categories is not None:
        items = [i for i in items if i.category in config.categories]
    if config.limit is not None:
        items = items[: config.limit]
    if not items:
        raise InputError("no instances selected: nothing to probe")
    return items


# --------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeUnit:
    """One conversation to run: picklable, independent of every other unit."""

    spec: PlannedSpec

    @property
    def key(self) -> str:
        """The conversation's key (its records' key, and the seed of its random streams)."""
        return self.spec.key

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.spec.key,)

    @property
    def size(self) -> int:
        return 1

    @property
    def model(self) -> str:
        """Any Ray replica runs a conversation (its reasoner and sensor load in the worker)."""
        return ""

    @property
    def cost(self) -> float:
        """Direct answers are one call; conversations many."""
        return float(self.spec.budget) if isinstance(self.spec, ConversationSpec) else 1.0


def plan_probe(config: ProbeConfig) -> list[PlannedSpec]:
    """Every conversation: instances x strategies x runs x reasoners x signals (direct: one
    per instance and run)."""
    instances = select_instances(config)
    for s in config.strategies:
        if s not in STRATEGIES:
            raise InputError(f"unknown strategy {s!r}")
    specs: list[PlannedSpec] = []
    search = (config.uot or SearchSettings()).model_dump()
    sensor_options = resolve_options(config.sensor, config.sensor_options)
    reasoner_options = {
        r: resolve_options(r, config.reasoner_options.get(r, {})) for r in config.reasoners
    }
    for inst in instances:
        for strategy in config.strategies:
            for run in range(config.runs):
                if strategy == "direct":
                    specs.append(
                        DirectSpec(
                            instance=inst,
                            sensor=config.sensor,
                            sensor_options=sensor_options,
                            sensor_max_new_tokens=config.sensor_max_new_tokens,
                            temperature=config.temperature,
                            seed=config.seed,
                            run=run,
                            prompt=prompt_hash("direct"),
                        )
                    )
                    continue
                specs += [
                    ConversationSpec(
                        instance=inst,
                        sensor=config.sensor,
                        sensor_options=sensor_options,
                        sensor_max_new_tokens=config.sensor_max_new_tokens,
                        temperature=config.temperature,
                        seed=config.seed,
                        strategy=strategy,
                        reasoner=reasoner,
                        reasoner_options=reasoner_options[reasoner],
                        k=config.k,
                        judge=config.judge,
                        budget=config.budget,
                        signal=signal,
                        run=run,
                        max_new_tokens=config.max_new_tokens,
                        context_chars=config.context_chars,
                        prompt=prompt_hash(strategy),
                        search=search if strategy == UOT else None,
                    )
                    for reasoner in config.reasoners
                    for signal in config.signals
                ]
    return specs


# --------------------------------------------------------------------------------------------
# Running a unit (inside a worker)
# --------------------------------------------------------------------------------------------

_CACHE: dict[str, Any] = {}


def _cached(kind: str, parts: Sequence[Any], make: Any) -> Any:
    key = content_hash([kind, *parts])
    if key not in _CACHE:
        _CACHE[key] = make()
    return _CACHE[key]


def _sensor(spec: PlannedSpec) -> Any:
    """The spec's sensor, one per process and settings (a direct answer judges exactly)."""
    from clearsight.probe.sensor import Sensor

    judge = spec.judge if isinstance(spec, ConversationSpec) else "exact"
    parts = [
        spec.sensor,
        spec.sensor_options,
        spec.k,
        judge,
        spec.temperature,
        spec.sensor_max_new_tokens,
    ]
    return _cached(
        "sensor",
        parts,
        lambda: Sensor(
            spec.sensor,
            spec.sensor_options,
            spec.k,
            judge=judge,
            temperature=spec.temperature,
            max_new_tokens=spec.sensor_max_new_tokens,
        ),
    )


def _reasoner(spec: ConversationSpec) -> Any:
    from clearsight.models import shared_backend

    return shared_backend(spec.reasoner, spec.reasoner_options)


def run_probe_unit(
    unit: ProbeUnit, on_turn: Callable[[Transcript], None] | None = None
) -> list[Record]:
    """The record of one conversation (a failure to set it up fails the item with its
    reason; failures inside a conversation are part of its transcript). ``on_turn`` sees the
    unfinished transcript after every turn."""
    from clearsight.probe.reasoner import run_conversation, run_direct

    started = time.perf_counter()
    spec = unit.spec
    try:
        sensor = _sensor(spec)
        rng = rng_for(unit.key)
        meta = {"key": unit.key}
        if isinstance(spec, ConversationSpec):
            settings = LoopSettings(
                spec.strategy,
                budget=spec.budget,
                signal=spec.signal,
                temperature=spec.temperature,
                max_new_tokens=spec.max_new_tokens,
                context_chars=spec.context_chars,
                search=None if spec.search is None else SearchSettings(**spec.search),
            )
            transcript = run_conversation(
                spec.instance,
                _reasoner(spec),
                sensor,
                settings,
                rng=rng,
                reasoner_name=spec.reasoner,
                run=spec.run,
                meta=meta,
                on_turn=on_turn,
            )
        else:  # the direct baseline
            transcript = run_direct(spec.instance, sensor, rng=rng, run=spec.run, meta=meta)
    except Exception as exc:  # recorded with its reason; the run goes on
        return [Record.failed(unit.key, exc, time.perf_counter() - started)]
    elapsed = time.perf_counter() - started
    return [transcript_record(transcript, unit.key, elapsed_s=elapsed)]


# --------------------------------------------------------------------------------------------
# A whole run
# --------------------------------------------------------------------------------------------


def _models(config: ProbeConfig) -> list[ModelNeed]:
    """The sensor, every reasoner and an LLM judge: each must load and generate text (a
    direct-only run asks no reasoner and judges nothing)."""
    sensor_options = resolve_options(config.sensor, config.sensor_options)
    needs = [ModelNeed(config.sensor, sensor_options, Capabilities(), "the sensor")]
    if any(s != "direct" for s in config.strategies):
        needs += [
            ModelNeed(
                r,
                resolve_options(r, config.reasoner_options.get(r, {})),
                Capabilities(),
                "a reasoner",
            )
            for r in config.reasoners
        ]
        if config.judge.startswith("llm:"):  # the judge of u, loaded with no options of its own
            judge = config.judge.removeprefix("llm:")
            needs.append(ModelNeed(judge, resolve_options(judge), Capabilities(), "the judge"))
    return needs


def _manifest(config: ProbeConfig, specs: list[PlannedSpec]) -> dict[str, Any]:
    count = len({s.instance.id for s in specs})
    return run_manifest(
        config.model_dump(mode="json"),
        PROTOCOL,
        prompt_hashes={s: prompt_hash(s) for s in config.strategies},
        instances=source_manifest(config.instances, config.dataset, count),
    )


def _stream_unit(unit: ProbeUnit, write: Callable[[list[Record]], None]) -> list[Record]:
    """:func:`run_probe_unit` in the writer's process: every turn is stored as it happens (an
    unfinished transcript is a 'failed' record that a rerun redoes)."""

    def store_turn(partial: Transcript) -> None:
        if partial.committed is None:
            write([transcript_record(partial, unit.key, finished=False)])

    return run_probe_unit(unit, store_turn)


def _units(pending: Sequence[PlannedSpec]) -> list[ProbeUnit]:
    """One unit per pending conversation."""
    return [ProbeUnit(spec) for spec in pending]


def _stages(config: ProbeConfig, specs: list[PlannedSpec], store: RunStore) -> Iterator[Stage[Any]]:
    yield Stage(PROTOCOL, specs, _units, run_probe_unit, _stream_unit)


#: Version of the probe's planner: raise it when the same config plans other conversations.
PLAN_VERSION = 1


def _fingerprint(config: ProbeConfig) -> list[Any]:
    """What the plan is a function of: the planner's version, the config, the instance
    source's sha256 (the manifest's) and the strategies' prompt hashes. A finished run with the
    same fingerprint returns before its models load (about 9 s for SmolLM2 and the perceiver
    here)."""
    source = source_manifest(config.instances, config.dataset, 0)["sha256"]
    prompts = {s: prompt_hash(s) for s in config.strategies}
    return [PLAN_VERSION, config.model_dump(mode="json"), source, prompts]


#: Active reasoning through a noisy sensor as a value for :func:`clearsight.driver.run`.
PROBE: Protocol[ProbeConfig, list[PlannedSpec]] = Protocol(
    PROTOCOL, _models, plan_probe, _manifest, _stages, fingerprint=_fingerprint
)


def run_probe(
    config: ProbeConfig,
    run_dir: Path,
    *,
    fresh: bool = False,
    allow_mismatch: bool = False,
    executor: ExecutorName = "serial",
    workers: int = 1,
    progress: bool = True,
    ray: RayConfig | None = None,
) -> RunSummary:
    """Plan the conversations, store the items, run what is not finished; an interrupted run
    resumes where it stopped. With one process, every turn is stored as it happens (an
    unfinished conversation is a failed record, redone by a rerun); a process pool stores each
    conversation when it ends. Either way a killed run loses only the conversations in
    flight. The same as ``clearsight.driver.run(PROBE, config, run_dir, Execution(...))``."""
    return driver.run(
        PROBE,
        config,
        run_dir,
        Execution(executor, workers, ray, progress),
        fresh=fresh,
        allow_mismatch=allow_mismatch,
    )
