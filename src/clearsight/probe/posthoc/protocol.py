"""The probe's post-hoc analyses with an LLM judge, as a protocol added to a probe run.

Two kinds of item (:class:`~clearsight.probe.specs.BeliefSpec`,
:class:`~clearsight.probe.specs.QueryTypeSpec`), each keyed by the transcript, the judge and the
prompt's hash, so a rerun only does what is missing (docs/methods.md §6, the paper's §4.4-4.5):

* **belief probe** (``probe.belief``): for every finished conversation of the belief-state
  strategy and of people (``human:<name>``), the belief over the options after each sensor
  reply (:func:`~clearsight.probe.posthoc.belief.belief_probe`). The paper's read-out (``stated``,
  App. I) replays a model's conversation with **its own reasoner** (the conversation's spec and
  backend options), its next reasoning step in context; a person cannot be replayed, so
  people's conversations are read by ``judge_model``. The item names who replayed it
  (``judge``) and the read-out; ``letters`` is the cheap read-out of earlier runs (``judge_model``
  for every conversation, letter probabilities where it scores candidates), whose items keep
  their keys;
* **query types** (``probe.qtype``): for every conversation with queries, each query's type
  (:func:`~clearsight.probe.posthoc.querytypes.classify_queries`).

Direct answers and conversations without a query have nothing to analyse. The records join the
transcripts in the same run; the run's manifest stays the probe's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from clearsight import driver
from clearsight.driver import Execution, ModelNeed, Protocol, RunSummary, Stage
from clearsight.execute.unit import KeyedItems
from clearsight.models.base import Capabilities
from clearsight.probe.readouts import BeliefReadouts, QueryTypeReadouts
from clearsight.probe.specs import BELIEF_PROTOCOL as BELIEF_PROTOCOL
from clearsight.probe.specs import QTYPE_PROTOCOL as QTYPE_PROTOCOL
from clearsight.probe.specs import AnalysisSpec, BeliefSpec, QueryTypeSpec
from clearsight.probe.transcript import PROTOCOL, Transcript
from clearsight.seeding import content_hash
from clearsight.store import Record, RunStore
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.probe.posthoc.belief import BeliefReadout, TraceJson
    from clearsight.probe.posthoc.querytypes import ClassifiedQuery, QueryReadout

#: The analyses, in the order their stages run.
ANALYSES: tuple[type[AnalysisSpec], ...] = (BeliefSpec, QueryTypeSpec)


@dataclass(frozen=True)
class AnalysisConfig:
    """Which analyses to run and the judge that runs them."""

    judge_model: str = "hf:smollm2-135m"
    """The LLM judge: any text backend that generates."""
    judge_options: Mapping[str, JsonValue] = field(default_factory=dict)
    """Options of the judge's backend."""
    belief: bool = True
    """Run the belief probe (belief-state conversations and people's)."""
    belief_readout: BeliefReadout = "stated"
    """``stated``: the paper's, each model conversation replayed by its own reasoner, the
    distribution it writes parsed; ``letters``: ``judge_model`` for all, its letter
    probabilities where it scores candidates (the cheap read-out of earlier runs)."""
    query_types: bool = True
    """Classify every conversation's queries."""
    query_type_readout: QueryReadout = "judge"
    """``judge``: the paper's judge, a rationale and a JSON label with a confidence;
    ``scores``: the cheap option, the type names' candidate probabilities."""

    def __post_init__(self) -> None:
        if self.belief_readout not in ("stated", "letters"):
            raise InputError(f"belief read-out {self.belief_readout!r}: one of stated, letters")
        if self.query_type_readout not in ("judge", "scores"):
            raise InputError(
                f"query-type read-out {self.query_type_readout!r}: one of judge, scores"
            )


@dataclass(frozen=True)
class AnalysisUnit(KeyedItems):
    """One analysis of one transcript (``transcript``: its finished record, parsed): picklable,
    so a process pool can run it."""

    items: tuple[AnalysisSpec, ...]
    transcript: Transcript
    judge_options: dict[str, JsonValue]

    @property
    def model(self) -> str:
        return self.items[0].judge


def prompt_hashes(config: AnalysisConfig) -> dict[str, str]:
    """Each analysis's prompt hash: a changed prompt is a new item, not a stale record."""
    from clearsight.probe.reasoner.prompts import prompts

    strategies = prompts()["strategies"]
    judged = config.query_type_readout == "judge"
    return {
        BELIEF_PROTOCOL: content_hash(strategies["assess"]),
        QTYPE_PROTOCOL: content_hash(strategies["query_type_judge" if judged else "query_type"]),
    }


def _kinds(config: AnalysisConfig, transcript: Transcript) -> list[str]:
    """The analyses a transcript gets."""
    if transcript.strategy == "direct" or transcript.queries == 0:
        return []
    kinds = []
    if config.belief and transcript.strategy in ("bp", "human"):
        kinds.append(BELIEF_PROTOCOL)
    if config.query_types:
        kinds.append(QTYPE_PROTOCOL)
    return kinds


def run_unit(unit: AnalysisUnit) -> list[Record]:
    """The judge's analysis of one transcript as a record (failed with its reason)."""
    from clearsight.models import shared_backend
    from clearsight.probe.posthoc.belief import belief_probe, belief_summary
    from clearsight.probe.posthoc.querytypes import classify_queries

    started = time.perf_counter()
    (spec,) = unit.items
    key, transcript = spec.key, unit.transcript
    raw: TraceJson | list[ClassifiedQuery]
    readouts: BeliefReadouts | QueryTypeReadouts
    try:
        backend = shared_backend(spec.judge, unit.judge_options)
        if isinstance(spec, BeliefSpec):
            stated = spec.readout == "stated"
            trace = belief_probe(transcript, backend, readout="stated" if stated else "letters")
            raw, readouts = trace.to_json(), belief_summary(transcript, trace)
        else:
            judged = isinstance(spec, QueryTypeSpec) and spec.readout == "judge"
            queries = classify_queries(transcript, backend, "judge" if judged else "scores")
            raw, readouts = queries, {"types": [q["type"] for q in queries]}
    except Exception as exc:  # recorded with its reason; the run goes on
        return [Record.failed(key, exc, time.perf_counter() - started)]
    return [Record(key, "ok", None, raw, readouts, time.perf_counter() - started)]


def _models(config: AnalysisConfig) -> list[ModelNeed]:
    return [
        ModelNeed(
            config.judge_model,
            config.judge_options,
            Capabilities(generate=True),
            "the probe's post-hoc analyses (the judge generates)",
        )
    ]


def _belief_judge(
    config: AnalysisConfig, transcript: Transcript, conversation: Mapping[str, Any]
) -> tuple[str, dict[str, Any], str | None]:
    """Who replays a conversation for the belief probe, with which backend options, and the
    item's read-out field: with ``stated`` the conversation's own reasoner (its options from
    the conversation's spec; a person's conversation goes to ``judge_model``), with
    ``letters`` ``judge_model`` and no field (the items of earlier runs)."""
    if config.belief_readout == "letters":
        return config.judge_model, dict(config.judge_options), None
    if transcript.reasoner.startswith("human:"):
        return config.judge_model, dict(config.judge_options), "stated"
    return transcript.reasoner, dict(conversation.get("reasoner_options") or {}), "stated"


def _stages(
    config: AnalysisConfig, hashes: dict[str, str], store: RunStore
) -> Iterator[Stage[Any]]:
    """One stage per analysis, over the run's finished transcripts (each parsed once)."""
    records = {r.key: r for r in store.iter_records("ok", kind=PROTOCOL) if r.raw}
    finished = {key: Transcript.from_json(r.raw) for key, r in records.items()}
    options: dict[str, dict[str, JsonValue]] = {}

    def units(pending: Sequence[AnalysisSpec]) -> list[AnalysisUnit]:
        return [
            AnalysisUnit((spec,), finished[spec.transcript], options[spec.key]) for spec in pending
        ]

    judged = config.query_type_readout == "judge"
    for cls in ANALYSES:
        items: list[AnalysisSpec] = []
        for key, transcript in finished.items():
            if cls.kind not in _kinds(config, transcript):
                continue
            if cls is BeliefSpec:
                judge, opts, readout = _belief_judge(config, transcript, records[key].spec)
                item: AnalysisSpec = BeliefSpec(
                    transcript=key, judge=judge, prompt=hashes[cls.kind], readout=readout
                )
            else:
                extra = {"readout": "judge"} if judged else {}
                judge, opts = config.judge_model, dict(config.judge_options)
                item = cls(transcript=key, judge=judge, prompt=hashes[cls.kind], **extra)
            options[item.key] = opts
            items.append(item)
        if items:
            yield Stage(cls.kind, items, units, run_unit)


#: The post-hoc analyses as a value for :func:`clearsight.driver.run` (added to a probe run).
ANALYSIS: Protocol[AnalysisConfig, dict[str, str]] = Protocol(
    "probe.analysis", _models, prompt_hashes, None, _stages, adds_to=(PROTOCOL,)
)


def run_probe_analysis(
    run_dir: Path,
    config: AnalysisConfig | None = None,
    execution: Execution | None = None,
) -> RunSummary:
    """Run the analyses ``config`` asks for on the probe run in ``run_dir`` (what is stored is
    not redone); ``summary.stages[kind].ok`` counts each kind's new results. The same as
    ``clearsight.driver.run(ANALYSIS, config, run_dir, execution)``."""
    return driver.run(ANALYSIS, config or AnalysisConfig(), run_dir, execution)
