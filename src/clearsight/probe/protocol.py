"""The probe protocol (docs/methods.md §6): plan the conversations, run them, keep the
transcripts.

:data:`PROBE` is the protocol as a value for :func:`clearsight.driver.run`: the models it needs
(the sensor, every reasoner, an LLM judge), its plan (:func:`~clearsight.probe.plan.plan_probe`:
one item per conversation, keyed by its spec), its manifest, its one stage (each item its own
unit, :mod:`~clearsight.probe.unit`) and the fingerprint that lets a finished run return before
its models load. :func:`run_probe` runs it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from clearsight import driver
from clearsight.driver import ModelNeed, Protocol, RunOptions, RunSummary, Stage
from clearsight.models.base import Capabilities
from clearsight.models.resolve import resolve_options
from clearsight.probe.config import ProbeConfig
from clearsight.probe.judges import judge_manifest
from clearsight.probe.plan import plan_probe
from clearsight.probe.reasoner.limits import limits_manifest
from clearsight.probe.reasoner.uot_search import SearchSettings
from clearsight.probe.sources.load import source_manifest
from clearsight.probe.specs import PlannedSpec
from clearsight.probe.strategies import prompt_hash, strategy_named
from clearsight.probe.transcript import PROTOCOL
from clearsight.probe.unit import probe_units, run_probe_unit, stream_probe_unit
from clearsight.provenance import run_manifest
from clearsight.store import RunStore

if TYPE_CHECKING:
    pass


def _models(config: ProbeConfig) -> list[ModelNeed]:
    """The sensor, every reasoner and an LLM judge: each must load and generate text (a run
    of strategies without a reasoner asks no reasoner and judges nothing)."""
    sensor_options = resolve_options(config.sensor, config.sensor_options)
    needs = [ModelNeed(config.sensor, sensor_options, Capabilities(), "the sensor")]
    if any(strategy_named(s).reasoned for s in config.strategies):
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


def _manifest(config: ProbeConfig, specs: list[PlannedSpec]) -> dict[str, object]:
    """The run's manifest: its config, the strategies' prompt hashes, the instance source,
    every model's generation limits with where each comes from
    (:func:`~clearsight.probe.reasoner.limits.limits_manifest`) and the judge behind u named
    as the paper's kind or as clearsight's (:func:`~clearsight.probe.judges.judge_manifest`);
    with strategy ``uot``, its search's settings and stop rule."""
    count = len({s.instance.id for s in specs})
    return run_manifest(
        config.model_dump(mode="json"),
        PROTOCOL,
        prompt_hashes={s: prompt_hash(s) for s in config.strategies},
        instances=source_manifest(config.instances, config.dataset, count),
        limits=limits_manifest(config),
        judge=judge_manifest(config.judge),
        **_search_manifest(config),
    )


def _search_manifest(config: ProbeConfig) -> dict[str, object]:
    """The UoT search's effective settings and their sentence, where the run plans it."""
    if "uot" not in config.strategies:
        return {}
    settings = config.uot or SearchSettings()
    return {"uot": {"settings": settings.to_json(), "statement": settings.statement()}}


def _stages(config: ProbeConfig, specs: list[PlannedSpec], store: RunStore) -> Iterator[Stage[Any]]:
    yield Stage(PROTOCOL, specs, probe_units, run_probe_unit, stream_probe_unit)


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
    run_dir: Path | str,
    **options: Unpack[RunOptions],
) -> RunSummary:
    """Plan the conversations, store the items, run what is not finished; an interrupted run
    resumes where it stopped. With one process, every turn is stored as it happens (an
    unfinished conversation is a failed record, redone by a rerun); a process pool stores each
    conversation when it ends. Either way a killed run loses only the conversations in
    flight. The same as
    ``driver.run_with(PROBE, config, run_dir, **options)``."""
    return driver.run_with(PROBE, config, run_dir, **options)
