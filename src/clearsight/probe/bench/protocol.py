"""The benchmark builder: the paper's two-stage filter (section 3.2, docs/methods.md §6).

* **Stage 1** (:func:`build_stage1`): for each question and sensor, draw 11 direct answers to
  the multiple-choice question (one request with ``n = 11`` where the backend supports it),
  count ``c`` = answers naming the gold option, keep ``1 <= c <= 5``: the sensor is sometimes
  right but unreliable. Every question's samples, parsed letters and ``c`` are stored as a
  record (protocol ``probe.build``, item :class:`~clearsight.probe.specs.BuildSpec`) so the
  filter is recomputable; ``c`` also feeds the accuracy-by-consistency analysis (Fig. 2).
* **Stage 2** (:func:`build_stage2`): keep the stage-1 questions that at least one blind person
  solved through the same interface (``clearsight serve`` sessions, stored as transcripts with
  reasoner ``human:<name>``).

Both stages write the kept instances as JSONL in :meth:`Instance.to_json` form, which
``clearsight probe run --instances FILE`` reads back (its loader inferred).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from clearsight import driver
from clearsight.driver import Execution, ModelNeed, Protocol, RunSummary, Stage
from clearsight.execute.unit import KeyedItems
from clearsight.models.base import Capabilities
from clearsight.models.resolve import resolve_options
from clearsight.paths import write_target
from clearsight.probe.config import ProbeConfig
from clearsight.probe.instances import Instance
from clearsight.probe.plan import select_instances
from clearsight.probe.readouts import BuildReadouts
from clearsight.probe.reasoner.parsing import parse_letter
from clearsight.probe.records import load_transcripts
from clearsight.probe.sensor import Sensor
from clearsight.probe.sources.load import resolve_source, source_manifest
from clearsight.probe.specs import BUILD_PROTOCOL as BUILD_PROTOCOL
from clearsight.probe.specs import BuildSpec
from clearsight.probe.strategies.direct import DIRECT, direct_question
from clearsight.probe.transcript import PROTOCOL
from clearsight.provenance import run_manifest
from clearsight.seeding import derive_seed
from clearsight.store import Record, RunStore
from clearsight.validate import InputError

SAMPLES: Final = 11
KEEP: Final = (1, 5)


class BuildConfig(BaseModel):
    """A benchmark build (``clearsight build``): which questions, which stage, and what the
    stage filters them with. Where the kept questions (and stage 1's samples) go is the
    command's, not the configuration's."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    stage: Literal[1, 2] = Field(1, description="1: sensor consistency filter; 2: human-solved.")
    instances: str = Field(
        "bundled", description="bundled, or a JSONL, JSON, Parquet or Arrow file or directory."
    )
    dataset: str = Field(
        "bundled", description="Loader name, or jsonl; left out: inferred as for a probe run."
    )
    instance_ids: tuple[str, ...] | None = Field(
        None, description="Only these instance ids (default: all)."
    )
    sensor: str = Field("perceiver", description="Sensor model (stage 1).")
    sensor_options: dict[str, JsonValue] = Field(
        default_factory=dict, description="Options of the sensor's backend (stage 1)."
    )
    samples: int = Field(SAMPLES, ge=1, description="Direct samples per question (stage 1).")
    keep: tuple[int, int] = Field(
        KEEP, description="Stage 1 keeps a question when keep[0] <= c <= keep[1]."
    )
    temperature: float = Field(1.0, ge=0.0, description="The sensor's sampling temperature.")
    seed: int = Field(0, description="Seed of the sampling (each question's derived from it).")
    sessions: tuple[Path, ...] = Field(
        (), description="Run directories with human sessions (stage 2)."
    )

    @model_validator(mode="before")
    @classmethod
    def _resolve_source(cls, data: Any) -> Any:
        """The dataset resolved from the source (:func:`resolve_source`)."""
        return resolve_source(data)


@dataclass(frozen=True)
class Stage1Result:
    """One question's direct answers from one sensor and whether it is kept."""

    instance: Instance
    sensor: str
    samples: tuple[str, ...]
    letters: tuple[str | None, ...]
    c: int
    kept: bool


def consistency_count(letters: Sequence[str | None], gold: str) -> int:
    """c: how many direct answers name the gold option."""
    return sum(letter == gold for letter in letters)


@dataclass(frozen=True)
class BuildUnit(KeyedItems):
    """One question for one sensor: picklable, so a process pool can run it."""

    items: tuple[BuildSpec, ...]

    @property
    def model(self) -> str:
        return self.items[0].sensor


def _spec(instance: Instance, config: BuildConfig, template_hash: str) -> BuildSpec:
    """A stage-1 item: the question, the sensor and how it is sampled."""
    return BuildSpec(
        instance=instance,
        sensor=config.sensor,
        sensor_options=resolve_options(config.sensor, config.sensor_options),
        samples=config.samples,
        temperature=config.temperature,
        prompt=template_hash,
        seed=config.seed,
    )


def run_unit(unit: BuildUnit) -> list[Record]:
    """The sensor's direct answers to each question of ``unit`` and their count ``c``."""
    records = []
    for spec in unit.items:
        key, inst = spec.key, spec.instance
        started = time.perf_counter()
        try:
            sensor = Sensor(
                spec.sensor,
                spec.sensor_options,
                k=spec.samples,
                judge="exact",
                temperature=spec.temperature,
            )
            prompt = direct_question(inst)
            texts, _ = sensor.sample(inst, prompt, spec.samples, derive_seed(key), max_new_tokens=8)
        except Exception as exc:  # recorded with its reason; the build goes on
            records.append(Record.failed(key, exc, time.perf_counter() - started))
            continue
        letters = [parse_letter(t, inst.letters, inst.options) for t in texts]
        readouts: BuildReadouts = {
            "letters": letters,
            "c": consistency_count(letters, inst.gold),
            "id": inst.id,
        }
        raw = {"samples": list(texts)}
        records.append(Record(key, "ok", None, raw, readouts, time.perf_counter() - started))
    return records


def _models(config: BuildConfig) -> list[ModelNeed]:
    options = resolve_options(config.sensor, config.sensor_options)
    return [ModelNeed(config.sensor, options, Capabilities(), "build's sensor")]


def _plan(config: BuildConfig) -> list[BuildSpec]:
    """Every stage-1 item: one per question of the selection."""
    selection = ProbeConfig(
        instances=config.instances, dataset=config.dataset, instance_ids=config.instance_ids
    )
    template_hash = DIRECT.prompt_hash()
    return [_spec(inst, config, template_hash) for inst in select_instances(selection)]


def _manifest(config: BuildConfig, items: list[BuildSpec]) -> dict[str, object]:
    source = source_manifest(config.instances, config.dataset, len(items))
    return run_manifest(config.model_dump(mode="json"), BUILD_PROTOCOL, instances=source)


def _units(pending: Sequence[BuildSpec]) -> list[BuildUnit]:
    """One unit per pending question."""
    return [BuildUnit((spec,)) for spec in pending]


def _stages(config: BuildConfig, items: list[BuildSpec], store: RunStore) -> Iterator[Stage[Any]]:
    yield Stage(BUILD_PROTOCOL, items, _units, run_unit)


#: Build stage 1 as a value for :func:`clearsight.driver.run`: a run of its own, or records
#: added to a probe run (its consistency counts then feed the run's Fig. 2).
BUILD: Protocol[BuildConfig, list[BuildSpec]] = Protocol(
    BUILD_PROTOCOL, _models, _plan, _manifest, _stages, adds_to=(PROTOCOL, BUILD_PROTOCOL)
)


def build_stage1(
    config: BuildConfig, run_dir: Path, execution: Execution | None = None
) -> tuple[RunSummary, list[Stage1Result]]:
    """Stage 1 (see the module docstring) into ``run_dir`` through the driver (what is stored
    is not asked again), then every question's result, in the selection's order, with
    ``kept`` for ``keep[0] <= c <= keep[1]``. A question whose sampling failed is absent from
    the results and counted in the summary."""
    lo, hi = config.keep
    if not 0 <= lo <= hi <= config.samples:
        raise InputError(f"keep range {config.keep} must lie within 0..{config.samples}")
    summary = driver.run(BUILD, config, run_dir, execution)
    items = _plan(config)
    with RunStore.open(run_dir, read_only=True) as store:
        read = store.iter_records("ok", kind=BUILD_PROTOCOL, readouts=BuildReadouts)
        done = {r.key: r for r in read}
    results = []
    for spec in items:
        if spec.key not in done:
            continue
        r = done[spec.key]
        c = int(r.readouts["c"])
        results.append(
            Stage1Result(
                spec.instance,
                config.sensor,
                tuple(r.raw["samples"]),
                tuple(r.readouts["letters"]),
                c,
                lo <= c <= hi,
            )
        )
    return summary, results


def build_stage2(instances: Iterable[Instance], runs: Sequence[Path]) -> list[Instance]:
    """The instances at least one person (reasoner ``human:<name>``) solved in the given run
    directories."""
    solved = {
        t.instance_id
        for run in runs
        for t in load_transcripts(run)
        if t.reasoner.startswith("human:") and t.correct
    }
    return [i for i in instances if i.id in solved]


def write_instances(instances: Iterable[Instance], path: Path) -> Path:
    """Instances as JSONL (one :meth:`Instance.to_json` per line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (json.dumps(i.to_json(), ensure_ascii=False) + "\n" for i in instances)
    write_target(path).write_text("".join(lines))
    return path
