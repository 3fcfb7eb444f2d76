"""Planning a probe run: its configuration into conversations, each its own unit.

A probe item is one conversation: (instance, strategy, reasoner, sensor, consistency signal,
run). Its spec (:class:`~clearsight.probe.specs.ConversationSpec`, or
:class:`~clearsight.probe.specs.DirectSpec` for a strategy without a reasoner) holds everything
that determines it (the instance itself, the models and their options, K, the judge, the budget
T, decoding, the strategy prompt's content hash, a searching strategy's settings) and its key is
the spec's content hash, so a rerun skips finished conversations. Each item is its own unit
(:class:`ProbeUnit`): a run killed at any moment loses only the conversations in flight.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from pydantic import JsonValue

from clearsight.models.resolve import resolve_options
from clearsight.probe.config import ProbeConfig
from clearsight.probe.instances import Instance
from clearsight.probe.reasoner.limits import context_chars, sample_tokens, turn_tokens
from clearsight.probe.reasoner.uot_search import SearchSettings
from clearsight.probe.sources.load import instances_from_jsonl, load_instances
from clearsight.probe.specs import ConversationSpec, DirectSpec, PlannedSpec
from clearsight.probe.strategies import strategy_named
from clearsight.probe.strategies.base import Strategy
from clearsight.validate import InputError


def select_instances(config: ProbeConfig) -> list[Instance]:
    """The instances of a run, filtered by ids and categories, at most ``limit``."""
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


@dataclass(frozen=True)
class _Options:
    """The backend options of the sensor and of each reasoner and their generation limits
    (:mod:`clearsight.probe.reasoner.limits`: each reasoner's turn tokens and prompt characters, the
    sensor's sample tokens), resolved once per plan."""

    sensor: Mapping[str, Any]
    reasoners: Mapping[str, Mapping[str, Any]]
    turns: Mapping[str, int]
    context: Mapping[str, int]
    sample_tokens: int

    @staticmethod
    def of(config: ProbeConfig) -> _Options:
        sensor = resolve_options(config.sensor, config.sensor_options)
        reasoners = {
            r: resolve_options(r, config.reasoner_options.get(r, {})) for r in config.reasoners
        }
        turns = {r: turn_tokens(r, o, config.max_new_tokens).value for r, o in reasoners.items()}
        context = {
            r: context_chars(r, o, config.context_tokens, turns[r]).value
            for r, o in reasoners.items()
        }
        sample = sample_tokens(config.sensor, sensor, config.sensor_max_new_tokens).value
        return _Options(sensor, reasoners, turns, context, sample)


class _Common(TypedDict):
    """The fields every planned item of one instance, strategy and run shares."""

    instance: Instance
    sensor: str
    sensor_options: Mapping[str, JsonValue]
    sensor_max_new_tokens: int
    temperature: float
    seed: int
    run: int
    prompt: str


def _conversations(
    config: ProbeConfig, options: _Options, instance: Instance, strategy: Strategy, run: int
) -> list[PlannedSpec]:
    """The items of one instance, strategy and run: the sensor's direct answer for a strategy
    without a reasoner, else one conversation per reasoner and signal."""
    common: _Common = {
        "instance": instance,
        "sensor": config.sensor,
        "sensor_options": options.sensor,
        "sensor_max_new_tokens": options.sample_tokens,
        "temperature": config.temperature,
        "seed": config.seed,
        "run": run,
        "prompt": strategy.prompt_hash(),
    }
    if not strategy.reasoned:
        return [DirectSpec(**common)]
    search = (config.uot or SearchSettings()).model_dump() if strategy.searches else None
    return [
        ConversationSpec(
            **common,
            strategy=strategy.name,
            reasoner=reasoner,
            reasoner_options=options.reasoners[reasoner],
            k=config.k,
            judge=config.judge,
            budget=config.budget,
            signal=signal,
            max_new_tokens=options.turns[reasoner],
            context_chars=options.context[reasoner],
            search=search,
        )
        for reasoner in config.reasoners
        for signal in config.signals
    ]


def plan_probe(config: ProbeConfig) -> list[PlannedSpec]:
    """Every conversation: instances x strategies x runs x reasoners x signals (a strategy
    without a reasoner: one per instance and run)."""
    instances = select_instances(config)
    strategies = [strategy_named(s) for s in config.strategies]
    options = _Options.of(config)
    return [
        spec
        for inst in instances
        for strategy in strategies
        for run in range(config.runs)
        for spec in _conversations(config, options, inst, strategy, run)
    ]
