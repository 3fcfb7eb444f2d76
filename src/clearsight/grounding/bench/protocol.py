"""Building TGS-Bench for any problem set (paper §4.2, §6.1, App. B.1): the build as a protocol.

``clearsight build-bench`` runs :data:`BUILD_BENCH` with :func:`clearsight.driver.run`, four
resumable stages whose every item is kept with its outcome (a rejection is an ``ok`` record
with ``kept: false`` and its ``reason``; a failed record is a real failure, e.g. a backend
error):

1. ``tgs_bench.good`` (``GoodSpec``) — the generator's own trajectory for a problem, in the
   trajectory template's tagged format with the build's generator prompt
   (``data/tgs_bench.yaml``), greedy, segmented as in a grounding run. Rejected: no answer.
2. ``tgs_bench.check`` (``CheckSpec``) — the answer check: kept only if the parsed answer
   matches the gold under the problem's answer normaliser, and, with a judge, if the judge puts
   more probability on "Yes" than on "No" when asked whether the trajectory is correct. A kept
   trajectory's answer is written as the gold, so that the answer pair differs in its value
   only.
3. ``tgs_bench.edit`` (``PairEditSpec``) — the one-error edit per axis: vision (one false
   observation) and reasoning (one logical or arithmetic error) by the generator, checked by
   :func:`~clearsight.grounding.bench.pairs.check_edit`, with the rule fallback of
   :func:`~clearsight.grounding.bench.pairs.inject_errors` (which injector made it and why the
   model's edit was refused are kept); answer by
   :func:`~clearsight.grounding.bench.pairs.perturb_answer` of the gold.
4. ``tgs_bench.validate`` (``ValidateSpec``) — the assembled pair validated as in a
   grounding run: it differs from the good trajectory on its axis only, vision/reasoning by a
   checked edit (similarity >= 0.9, length within 10 %), answer by a different normalised
   value; with a judge, the judge's probability that the bad side holds the error is kept
   (the paper's independent-judge validation reports, it does not filter).

Here: the configuration, the planning of each stage from the outcomes of the one before, and
the protocol value; the items and prompts are in :mod:`clearsight.grounding.bench.specs`, the
units' running in :mod:`clearsight.grounding.bench.unit`.
:func:`~clearsight.grounding.bench.results.collect_bench` reads the outcome of every item into a
:class:`~clearsight.grounding.bench.file.TgsBench` whose manifest states the sources and their
hashes, the counts, retention per benchmark and axis (kept / attempted), the rejection reasons
and the injectors; :func:`~clearsight.grounding.bench.file.write_bench` writes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from clearsight import driver
from clearsight.driver import ModelNeed, Protocol, RunOptions, RunSummary, Stage
from clearsight.grounding.bench.pairs import AXES, bad_trajectory
from clearsight.grounding.bench.readouts import CheckReadouts, GoodReadouts, PairEditReadouts
from clearsight.grounding.bench.specs import (
    CHECK,
    EDIT,
    GOOD,
    VALIDATE,
    CheckSpec,
    GoodSpec,
    PairEditSpec,
    ValidateSpec,
    generator_ref,
    prompts,
)
from clearsight.grounding.bench.unit import run_unit
from clearsight.grounding.config import GroundingConfig
from clearsight.grounding.plan import load_problems
from clearsight.grounding.problems.bundled import TEXT_FAMILIES
from clearsight.grounding.problems.hub import benchmark_record
from clearsight.grounding.problems.problem import Problem
from clearsight.grounding.trajectories.written import trajectory_from_json
from clearsight.grounding.unit import GroundingUnit
from clearsight.models.base import Capabilities
from clearsight.provenance import run_manifest, source_digest
from clearsight.seeding import content_hash, derive_seed
from clearsight.specs import Spec
from clearsight.store import RunStore

if TYPE_CHECKING:
    pass

__all__ = ["BUILD_BENCH", "BuildBenchConfig", "run_build_bench"]


class BuildBenchConfig(BaseModel):
    """A TGS-Bench build: which problems (the sources a grounding run takes), which generator
    and judge. Where the pool is written is the command's, not the configuration's."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    generator: str = Field("hf:smollm2-135m", description="Model writing the good trajectories.")
    generator_options: dict[str, JsonValue] = Field(
        default_factory=lambda: dict[str, JsonValue](batch_size=16),
        description="Backend options of the generator and the judge.",
    )
    judge: str | None = Field(
        None, description="Model accepting good trajectories and judging pairs; None: none."
    )
    n_problems: int = Field(200, ge=0, description="Bundled problems to generate.")
    families: tuple[str, ...] = Field(TEXT_FAMILIES, description="Bundled problem families.")
    seed: int = Field(0, description="Seed of problem generation and of the edits.")
    datasets_dir: str | None = Field(None, description="Directory with benchmark copies.")
    benchmarks: tuple[str, ...] = Field((), description="Benchmarks to load from datasets_dir.")
    jsonl: tuple[str, ...] = Field((), description="JSONL files of normalised problems.")
    limit: int | None = Field(None, ge=1, description="Problems per loaded benchmark at most.")
    max_new_tokens: int = Field(128, ge=1, description="Tokens a good trajectory may generate.")
    unit_size: int = Field(32, ge=1, description="Items per work unit (batched together).")

    def sources(self) -> GroundingConfig:
        """The problem sources as a grounding run's configuration reads them."""
        keys = ("n_problems", "families", "seed", "datasets_dir", "benchmarks", "jsonl", "limit")
        return GroundingConfig(**{k: getattr(self, k) for k in keys})


# --------------------------------------------------------------------------------------------
# Planning: each stage from the outcomes of the one before
# --------------------------------------------------------------------------------------------

R = TypeVar("R", bound=Mapping[str, Any])

Outcomes = Mapping[str, Mapping[str, Any]]
"""Read-outs of the ok records by key."""


def plan_good(config: BuildBenchConfig, problems: Sequence[Problem]) -> list[GoodSpec]:
    """Stage 1 items: one generated trajectory per problem."""
    opts = config.generator_options
    ref = generator_ref()
    return [GoodSpec(p, config.generator, opts, ref, config.max_new_tokens) for p in problems]


def plan_check(
    config: BuildBenchConfig, goods: Sequence[GoodSpec], done: Outcomes
) -> list[CheckSpec]:
    """Stage 2 items: the trajectories stage 1 produced."""
    opts = config.generator_options if config.judge else {}
    return [
        CheckSpec(s.problem, trajectory_from_json(done[s.key]["trajectory"]), config.judge, opts)
        for s in goods
        if done.get(s.key, {}).get("kept")
    ]


def plan_edits(
    config: BuildBenchConfig, checks: Sequence[CheckSpec], done: Outcomes
) -> list[PairEditSpec]:
    """Stage 3 items: an edit per axis of each trajectory stage 2 kept."""
    out = []
    for s in checks:
        if not done.get(s.key, {}).get("kept"):
            continue
        good = trajectory_from_json(done[s.key]["good"])
        for axis in AXES:
            seed = derive_seed(config.seed, s.problem.id, axis)
            opts = config.generator_options
            out.append(PairEditSpec(s.problem, axis, good, config.generator, opts, seed))
    return out


def plan_validate(
    config: BuildBenchConfig, edits: Sequence[PairEditSpec], done: Outcomes
) -> list[ValidateSpec]:
    """Stage 4 items: the pairs stage 3 made."""
    out = []
    opts = config.generator_options if config.judge else {}
    for s in edits:
        if not done.get(s.key, {}).get("kept"):
            continue
        bad = bad_trajectory(s.good, s.axis, str(done[s.key]["edited"]))
        first = derive_seed(config.seed, s.problem.id, s.axis, "judge") % 2 == 0
        out.append(ValidateSpec(s.problem, s.axis, s.good, bad, first, config.judge, opts))
    return out


def done_outcomes(store: RunStore, kind: str, readouts: type[R]) -> dict[str, R]:
    """The read-outs of the ok records of stage ``kind``, by key, read as ``readouts`` (the
    stage's registered type, :mod:`clearsight.grounding.bench.readouts`)."""
    read = store.iter_records("ok", kind=kind, raw=False, readouts=readouts)
    return {rec.key: rec.readouts for rec in read}


def _stage(kind: str, model: str, items: Sequence[Spec], config: BuildBenchConfig) -> Stage[Spec]:
    size = config.unit_size
    opts = config.generator_options

    def units(pending: Sequence[Spec]) -> list[GroundingUnit[Spec]]:
        return [
            GroundingUnit(kind, model, opts, tuple(pending[i : i + size]))
            for i in range(0, len(pending), size)
        ]

    return Stage(kind, items, units, run_unit)


def _stages(
    config: BuildBenchConfig, problems: list[Problem], store: RunStore
) -> Iterator[Stage[Any]]:
    judge = config.judge or config.generator
    goods = plan_good(config, problems)
    yield _stage(GOOD, config.generator, goods, config)
    checks = plan_check(config, goods, done_outcomes(store, GOOD, GoodReadouts))
    yield _stage(CHECK, judge, checks, config)
    edits = plan_edits(config, checks, done_outcomes(store, CHECK, CheckReadouts))
    yield _stage(EDIT, config.generator, edits, config)
    validate = plan_validate(config, edits, done_outcomes(store, EDIT, PairEditReadouts))
    yield _stage(VALIDATE, judge, validate, config)


def _models(config: BuildBenchConfig) -> list[ModelNeed]:
    """The generator must generate; the judge must score candidates."""
    opts = dict(config.generator_options)
    needs = [ModelNeed(config.generator, opts, Capabilities(), "the TGS-Bench generator")]
    if config.judge is not None:
        judge_needs = Capabilities(generate=False, candidate_probs=True)
        needs.append(ModelNeed(config.judge, opts, judge_needs, "the TGS-Bench judge"))
    return needs


def load_build_problems(config: BuildBenchConfig) -> list[Problem]:
    """The build's problems, read from its sources as a grounding run reads them."""
    return load_problems(config.sources())


def source_entries(config: BuildBenchConfig, problems: Sequence[Problem]) -> list[dict[str, Any]]:
    """Each source benchmark of the build: its name, where it came from, the sha256 of the
    file read (bundled: none, the generator's parameters say it) and of its problems' JSON
    forms, and its count."""
    read = {name: benchmark_record(name, config.datasets_dir or ".") for name in config.benchmarks}
    by_bench: dict[str, list[Problem]] = {}
    for p in problems:
        by_bench.setdefault(p.benchmark, []).append(p)
    jsonl_of = {p.id: path for path in config.jsonl for p in load_problems(_only_file(path))}
    out = []
    for bench, ps in by_bench.items():
        source = jsonl_of.get(ps[0].id)
        entry: dict[str, Any] = {"benchmark": bench, "count": len(ps)}
        if bench in read:
            entry.update(read[bench])
        elif source is None:
            entry["origin"] = f"bundled (n={config.n_problems}, seed={config.seed})"
        else:
            entry["origin"] = str(Path(source).resolve())
            entry["file_sha256"] = source_digest(Path(source), (".jsonl", ".json"))
        entry["problems_sha256"] = content_hash([p.to_json() for p in ps])
        out.append(entry)
    return out


def _only_file(path: str | Path) -> GroundingConfig:
    return GroundingConfig(n_problems=0, jsonl=(str(path),))


def _manifest(config: BuildBenchConfig, problems: list[Problem]) -> dict[str, object]:
    return run_manifest(
        config.model_dump(mode="json"),
        BUILD_BENCH.name,
        template=dataclasses.asdict(generator_ref()),
        prompts_hash=content_hash(prompts()),
        sources=source_entries(config, problems),
    )


#: The TGS-Bench build as a value for :func:`clearsight.driver.run`.
BUILD_BENCH: Protocol[BuildBenchConfig, list[Problem]] = Protocol(
    "grounding.build-bench", _models, load_build_problems, _manifest, _stages
)


def run_build_bench(
    config: BuildBenchConfig,
    run_dir: Path | str,
    **options: Unpack[RunOptions],
) -> RunSummary:
    """Run the build's stages into ``run_dir`` (resumable);
    :func:`~clearsight.grounding.bench.results.read_bench` reads the pool. The same as
    ``driver.run_with(BUILD_BENCH, config, run_dir, **options)``."""
    return driver.run_with(BUILD_BENCH, config, run_dir, **options)
