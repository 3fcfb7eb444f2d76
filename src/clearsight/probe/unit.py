"""Running one probe unit (inside a worker): a conversation, or the sensor's direct answer.

Workers keep the reasoner and the sensor loaded between units (one copy per process, keyed by
their settings). A conversation's randomness comes from its key
(:func:`~clearsight.seeding.rng_for`), so it is the same in any worker and on a rerun. A failure
to set a conversation up fails its item with the reason; failures inside a conversation are
part of its transcript.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from clearsight.probe.plan import ProbeUnit
from clearsight.probe.reasoner.loop import LoopSettings, run_conversation
from clearsight.probe.reasoner.uot_search import SearchSettings
from clearsight.probe.records import transcript_record
from clearsight.probe.sensor import Sensor
from clearsight.probe.specs import ConversationSpec, PlannedSpec
from clearsight.probe.strategies.direct import run_direct
from clearsight.probe.transcript import Transcript
from clearsight.seeding import content_hash, rng_for
from clearsight.store import Record

if TYPE_CHECKING:
    from clearsight.models.base import Backend

#: The sensors this process has made, by their settings.
_SENSORS: dict[str, Sensor] = {}


def _sensor(spec: PlannedSpec) -> Sensor:
    """The spec's sensor, one per process and settings (a direct answer judges exactly)."""
    judge = spec.judge if isinstance(spec, ConversationSpec) else "exact"
    parts = [
        spec.sensor,
        spec.sensor_options,
        spec.k,
        judge,
        spec.temperature,
        spec.sensor_max_new_tokens,
    ]
    key = content_hash(["sensor", *parts])
    if key not in _SENSORS:
        _SENSORS[key] = Sensor(
            spec.sensor,
            spec.sensor_options,
            spec.k,
            judge=judge,
            temperature=spec.temperature,
            max_new_tokens=spec.sensor_max_new_tokens,
        )
    return _SENSORS[key]


def _reasoner(spec: ConversationSpec) -> Backend:
    """The spec's reasoner, shared by the units of this process."""
    from clearsight.models import shared_backend

    return shared_backend(spec.reasoner, spec.reasoner_options)


def _settings(spec: ConversationSpec) -> LoopSettings:
    """How the spec's conversation runs."""
    return LoopSettings(
        spec.strategy,
        budget=spec.budget,
        signal=spec.signal,
        temperature=spec.temperature,
        max_new_tokens=spec.max_new_tokens,
        context_chars=spec.context_chars,
        search=None if spec.search is None else SearchSettings(**spec.search),
    )


def _transcript(unit: ProbeUnit, on_turn: Callable[[Transcript], None] | None = None) -> Transcript:
    """The unit's conversation (or direct answer), run."""
    spec, sensor, rng = unit.spec, _sensor(unit.spec), rng_for(unit.key)
    meta = {"key": unit.key}
    if not isinstance(spec, ConversationSpec):  # no reasoner: the sensor answers itself
        return run_direct(spec.instance, sensor, rng=rng, run=spec.run, meta=meta)
    settings = _settings(spec)
    return run_conversation(
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


def _load(unit: ProbeUnit) -> None:
    """Load the unit's models — the sensor with its judge, and a conversation's reasoner —
    before its clock starts, so a record's seconds (Table 8's seconds per conversation) exclude
    model loading, which happens once per process."""
    _sensor(unit.spec).load()
    if isinstance(unit.spec, ConversationSpec):
        _reasoner(unit.spec)


def run_probe_unit(
    unit: ProbeUnit, on_turn: Callable[[Transcript], None] | None = None
) -> list[Record]:
    """The record of one conversation (a failure to set it up fails the item with its
    reason; failures inside a conversation are part of its transcript); its seconds begin
    once the models are loaded. ``on_turn`` sees the unfinished transcript after every turn."""
    started = time.perf_counter()
    try:
        _load(unit)
        started = time.perf_counter()
        transcript = _transcript(unit, on_turn)
    except Exception as exc:  # recorded with its reason; the run goes on
        return [Record.failed(unit.key, exc, time.perf_counter() - started)]
    elapsed = time.perf_counter() - started
    return [transcript_record(transcript, unit.key, elapsed_s=elapsed)]


def stream_probe_unit(unit: ProbeUnit, write: Callable[[list[Record]], None]) -> list[Record]:
    """:func:`run_probe_unit` in the writer's process: every turn is stored as it happens (an
    unfinished transcript is a 'failed' record that a rerun redoes)."""

    def store_turn(partial: Transcript) -> None:
        if partial.committed is None:
            write([transcript_record(partial, unit.key, finished=False)])

    return run_probe_unit(unit, store_turn)


def probe_units(pending: Sequence[PlannedSpec]) -> list[ProbeUnit]:
    """One unit per pending conversation."""
    return [ProbeUnit(spec) for spec in pending]
