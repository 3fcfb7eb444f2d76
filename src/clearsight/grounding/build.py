"""Building TGS-Bench for any problem set (paper §4.2, §6.1, App. B.1): the build as a protocol.

``clearsight build-bench`` runs :data:`BUILD_BENCH` with :func:`clearsight.driver.run`, four
resumable stages whose every item is kept with its outcome (a rejection is an ``ok`` record
with ``kept: false`` and its ``reason``; a failed record is a real failure, e.g. a backend
error):

1. ``tgs_bench.good`` (:class:`GoodSpec`) — the generator's own trajectory for a problem, in the
   trajectory template's tagged format with the build's generator prompt
   (``data/tgs_bench.yaml``), greedy, segmented as in a grounding run. Rejected: no answer.
2. ``tgs_bench.check`` (:class:`CheckSpec`) — the answer check: kept only if the parsed answer
   matches the gold under the problem's answer normaliser, and, with a judge, if the judge puts
   more probability on "Yes" than on "No" when asked whether the trajectory is correct. A kept
   trajectory's answer is written as the gold, so that the answer pair differs in its value
   only.
3. ``tgs_bench.edit`` (:class:`PairEditSpec`) — the one-error edit per axis: vision (one false
   observation) and reasoning (one logical or arithmetic error) by the generator, checked by
   :func:`~clearsight.grounding.bench.check_edit`, with the rule fallback of
   :func:`~clearsight.grounding.bench.inject_errors` (which injector made it and why the
   model's edit was refused are kept); answer by
   :func:`~clearsight.grounding.bench.perturb_answer` of the gold.
4. ``tgs_bench.validate`` (:class:`ValidateSpec`) — the assembled pair validated as in a
   grounding run: it differs from the good trajectory on its axis only, vision/reasoning by a
   checked edit (similarity >= 0.9, length within 10 %), answer by a different normalised
   value; with a judge, the judge's probability that the bad side holds the error is kept
   (the paper's independent-judge validation reports, it does not filter).

:func:`collect_bench` reads the outcome of every item into a
:class:`~clearsight.grounding.bench_file.TgsBench` whose manifest states the sources and their
hashes, the counts, retention per benchmark and axis (kept / attempted), the rejection reasons
and the injectors; :func:`~clearsight.grounding.bench_file.write_bench` writes it.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import yaml
from pydantic import BaseModel, ConfigDict, Field

from clearsight import driver
from clearsight.driver import Execution, ModelNeed, Protocol, RunSummary, Stage
from clearsight.grounding.bench import (
    AXES,
    EditFailedError,
    bad_trajectory,
    check_edit,
    inject_errors,
    judge_request,
    perturb_answer,
    similarity,
)
from clearsight.grounding.bench_file import BenchItem, BenchPair, TgsBench
from clearsight.grounding.generator import TEXT_FAMILIES
from clearsight.grounding.hub import benchmark_record
from clearsight.grounding.problems import Problem, is_correct, normalise_answer
from clearsight.grounding.protocol import GroundingConfig, GroundingUnit, _image, load_problems
from clearsight.grounding.specs import TemplateRef
from clearsight.grounding.trajectories import (
    Template,
    Trajectory,
    default_template,
    generate_trajectories,
    trajectory_from_json,
)
from clearsight.models import shared_backend
from clearsight.models.base import Capabilities, Message, Request
from clearsight.models.replies import checked_replies
from clearsight.provenance import run_manifest, source_digest
from clearsight.seeding import content_hash, derive_seed, rng_for
from clearsight.specs import OMIT_NONE, Spec
from clearsight.store import Record, RunStore
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.execute import ExecutorName
    from clearsight.execute.on_ray import RayConfig

__all__ = [
    "BUILD_BENCH",
    "CHECK",
    "EDIT",
    "GOOD",
    "VALIDATE",
    "BuildBenchConfig",
    "CheckSpec",
    "GoodSpec",
    "PairEditSpec",
    "ValidateSpec",
    "collect_bench",
    "read_bench",
    "run_build_bench",
    "run_unit",
]

GOOD = "tgs_bench.good"
CHECK = "tgs_bench.check"
EDIT = "tgs_bench.edit"
VALIDATE = "tgs_bench.validate"


class BuildBenchConfig(BaseModel):
    """A TGS-Bench build: which problems (the sources a grounding run takes), which generator
    and judge. Where the pool is written is the command's, not the configuration's."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    generator: str = Field("hf:smollm2-135m", description="Model writing the good trajectories.")
    generator_options: dict[str, Any] = Field(
        default_factory=lambda: {"batch_size": 16},
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
# Prompts
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def prompts() -> dict[str, str]:
    """The build's prompts, ``data/tgs_bench.yaml``."""
    text = files("clearsight.grounding").joinpath("data/tgs_bench.yaml").read_text()
    doc: dict[str, str] = yaml.safe_load(text)
    return doc


@lru_cache(maxsize=1)
def generator_template() -> Template:
    """The trajectory template with the generator prompt as its user turn (the same tags)."""
    doc = prompts()
    return dataclasses.replace(default_template(), id=doc["id"], user=doc["generator"])


def generator_ref() -> TemplateRef:
    """The generator template by id and hash (an edited prompt makes new items)."""
    t = generator_template()
    return TemplateRef(t.id, t.hash)


def accept_request(problem: Problem, trajectory: Trajectory) -> Request:
    """The judge's request: is this trajectory correct? Candidates "Yes" and "No"."""
    text, _ = trajectory.render()
    solution = text.rsplit("\n", 1)[0]  # without the confidence slot
    prompt = prompts()["judge_accept"].replace("{question}", problem.question)
    prompt = prompt.replace("{solution}", solution)
    return Request((Message.user(prompt),), candidates=("Yes", "No"), generate=False)


# --------------------------------------------------------------------------------------------
# Items
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GoodSpec(Spec):
    """The generator's trajectory for a problem (stage 1)."""

    kind: ClassVar[str] = GOOD

    problem: Problem
    generator: str
    generator_options: Mapping[str, Any]
    template: TemplateRef
    max_new_tokens: int


@dataclass(frozen=True)
class CheckSpec(Spec):
    """The answer check of a generated trajectory, and the judge's acceptance (stage 2)."""

    kind: ClassVar[str] = CHECK

    problem: Problem
    trajectory: Trajectory
    judge: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    judge_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class PairEditSpec(Spec):
    """The one error on ``axis`` of a kept good trajectory (stage 3)."""

    kind: ClassVar[str] = EDIT

    problem: Problem
    axis: str
    good: Trajectory
    generator: str
    generator_options: Mapping[str, Any]
    seed: int


@dataclass(frozen=True)
class ValidateSpec(Spec):
    """The validation of one assembled pair (stage 4)."""

    kind: ClassVar[str] = VALIDATE

    problem: Problem
    axis: str
    good: Trajectory
    bad: Trajectory
    bad_first: bool
    """Where the judge is shown the bad side (balanced by seed)."""
    judge: str | None = dataclasses.field(default=None, metadata=OMIT_NONE)
    judge_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Running units
# --------------------------------------------------------------------------------------------


def _outcome(
    key: str, kept: bool, reason: str | None, elapsed: float, raw: Any = None, **out: Any
) -> Record:
    """An item's outcome as an ok record: ``kept``, the rejection ``reason`` and read-outs."""
    return Record(key, "ok", None, raw or {}, {"kept": kept, "reason": reason, **out}, elapsed)


def run_unit(unit: GroundingUnit[Any]) -> list[Record]:
    """Records of one unit; a unit-level failure fails its items with the reason."""
    started = time.perf_counter()
    run: dict[str, Callable[[GroundingUnit[Any], float], list[Record]]] = {
        GOOD: _run_good,
        CHECK: _run_check,
        EDIT: _run_edit,
        VALIDATE: _run_validate,
    }
    try:
        return run[unit.kind](unit, started)
    except Exception as exc:  # recorded with its reason; the run goes on
        elapsed = (time.perf_counter() - started) / max(unit.size, 1)
        return [Record.failed(k, exc, elapsed) for k in unit.keys]


def _run_good(unit: GroundingUnit[GoodSpec], started: float) -> list[Record]:
    backend = shared_backend(unit.model, unit.model_options)
    problems = [s.problem for s in unit.items]
    results = generate_trajectories(
        backend,
        problems,
        [_image(p, backend) for p in problems],
        template=generator_template(),
        max_new_tokens=unit.items[0].max_new_tokens,
    )
    elapsed = (time.perf_counter() - started) / unit.size
    out = []
    for spec, g in zip(unit.items, results, strict=True):
        if isinstance(g, Exception):  # no reply that can be read: a rerun asks again
            out.append(Record.failed(spec.key, g, elapsed))
            continue
        traj = None if g.trajectory is None else g.trajectory.to_json()
        reason = None if g.reason is None else f"no trajectory: {g.reason}"
        raw = {"text": g.text, "answer_forced": g.answer_forced}
        out.append(_outcome(spec.key, traj is not None, reason, elapsed, raw, trajectory=traj))
    return out


def _judge_probs(
    unit: GroundingUnit[Any], requests: list[Request]
) -> list[dict[str, float] | Exception]:
    """The judge's candidate probabilities for each request, or the exception that says why its
    reply cannot be read (none without requests)."""
    if not requests:
        return []
    first = unit.items[0]
    backend = shared_backend(first.judge, first.judge_options)
    return [
        r if isinstance(r, Exception) else dict(r.candidate_probs or {})
        for r in checked_replies(backend, requests)
    ]


def _run_check(unit: GroundingUnit[CheckSpec], started: float) -> list[Record]:
    right = {s.key for s in unit.items if is_correct(s.trajectory.answer, s.problem)}
    asked = [s for s in unit.items if s.key in right and s.judge is not None]
    verdicts = dict(
        zip(
            (s.key for s in asked),
            _judge_probs(unit, [accept_request(s.problem, s.trajectory) for s in asked]),
            strict=True,
        )
    )
    elapsed = (time.perf_counter() - started) / unit.size
    out = []
    for spec in unit.items:
        p = spec.problem
        got = normalise_answer(spec.trajectory.answer, p.answer_type)
        good = dataclasses.replace(spec.trajectory, answer=p.gold).to_json()
        if spec.key not in right:
            gold = normalise_answer(p.gold, p.answer_type)
            why = f"wrong answer: {got!r} where the gold is {gold!r}"
            out.append(_outcome(spec.key, False, why, elapsed, answer=got))
            continue
        if spec.key not in verdicts:
            out.append(_outcome(spec.key, True, None, elapsed, answer=got, good=good))
            continue
        probs = verdicts[spec.key]
        if isinstance(probs, Exception):  # no reply that can be read: a rerun asks again
            out.append(Record.failed(spec.key, probs, elapsed))
            continue
        yes, no = float(probs.get("Yes", 0.0)), float(probs.get("No", 0.0))
        if yes + no <= 0:
            why = f"{spec.judge}: the judge put no probability on Yes or No"
            out.append(Record.failed(spec.key, why, elapsed))
            continue
        p_yes = yes / (yes + no)
        refused = None if p_yes > 0.5 else f"judge rejected: P(correct) = {p_yes:.3f}"
        out.append(
            _outcome(
                spec.key, refused is None, refused, elapsed, answer=got, good=good, p_correct=p_yes
            )
        )
    return out


def _run_edit(unit: GroundingUnit[PairEditSpec], started: float) -> list[Record]:
    spans = [s for s in unit.items if s.axis != "answer"]
    made: dict[str, Any] = {}
    empty = {s.key for s in spans if not getattr(s.good, s.axis).strip()}
    todo = [s for s in spans if s.key not in empty]
    if todo:
        generator = shared_backend(unit.model, unit.model_options)
        edits = inject_errors(
            generator, [(s.axis, getattr(s.good, s.axis)) for s in todo], [s.seed for s in todo]
        )
        made = dict(zip((s.key for s in todo), edits, strict=True))
    elapsed = (time.perf_counter() - started) / unit.size
    out = []
    for spec in unit.items:
        if spec.axis == "answer":
            rng = rng_for("tgs_bench.answer", spec.seed)
            try:
                text, rule = perturb_answer(spec.problem.gold, spec.problem, rng)
            except InputError as exc:
                out.append(_outcome(spec.key, False, f"no answer rule: {exc}", elapsed))
                continue
            edit = {"edited": text, "injector": "rule", "rule": rule, "model_refused": None}
            sim = similarity(spec.good.answer, text)
            out.append(_outcome(spec.key, True, None, elapsed, similarity=sim, **edit))
        elif spec.key in empty:
            why = f"no edit: the good trajectory's {spec.axis} part is empty"
            out.append(_outcome(spec.key, False, why, elapsed))
        elif isinstance(e := made[spec.key], EditFailedError):  # a rerun asks again
            out.append(Record.failed(spec.key, str(e), elapsed))
        elif isinstance(e, InputError):
            out.append(_outcome(spec.key, False, f"no edit: {e}", elapsed))
        else:
            keep = ("edited", "injector", "rule", "model_refused", "similarity")
            raw = {"model_attempt": e.model_attempt}
            out.append(
                _outcome(spec.key, True, None, elapsed, raw, **{k: getattr(e, k) for k in keep})
            )
    return out


def _pair_fault(spec: ValidateSpec) -> str | None:
    """Why a pair fails validation (None: it passes)."""
    g, b = spec.good.to_json(), spec.bad.to_json()
    changed = [s for s in g if g[s] != b[s]]
    if changed != [spec.axis]:
        return f"not a one-axis pair: it differs on {', '.join(changed) or 'nothing'}"
    if spec.axis == "answer":
        p = spec.problem
        same = normalise_answer(b["answer"], p.answer_type) == normalise_answer(
            p.gold, p.answer_type
        )
        return "answer unchanged: the bad answer normalises to the gold" if same else None
    why = check_edit(g[spec.axis], b[spec.axis])
    return None if why is None else f"edit check: {why}"


def _run_validate(unit: GroundingUnit[ValidateSpec], started: float) -> list[Record]:
    faults = {s.key: _pair_fault(s) for s in unit.items}
    asked = [s for s in unit.items if s.judge is not None and faults[s.key] is None]
    requests = []
    for s in asked:
        first, second = (s.bad, s.good) if s.bad_first else (s.good, s.bad)
        requests.append(judge_request(s.problem, first, second))
    verdicts = dict(zip((s.key for s in asked), _judge_probs(unit, requests), strict=True))
    elapsed = (time.perf_counter() - started) / unit.size
    out = []
    for spec in unit.items:
        p_bad = None
        if spec.key in verdicts:
            probs = verdicts[spec.key]
            if isinstance(probs, Exception):  # no reply that can be read: a rerun asks again
                out.append(Record.failed(spec.key, probs, elapsed))
                continue
            p1, p2 = float(probs.get("1", 0.0)), float(probs.get("2", 0.0))
            if p1 + p2 <= 0:
                none = f"{spec.judge}: the judge put no probability on 1 or 2"
                out.append(Record.failed(spec.key, none, elapsed))
                continue
            p_bad = (p1 if spec.bad_first else p2) / (p1 + p2)
        why = faults[spec.key]
        out.append(_outcome(spec.key, why is None, why, elapsed, judge_p_bad=p_bad))
    return out


# --------------------------------------------------------------------------------------------
# Planning: each stage from the outcomes of the one before
# --------------------------------------------------------------------------------------------

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


def _done(store: RunStore, kind: str) -> dict[str, Mapping[str, Any]]:
    return {rec.key: rec.readouts for rec in store.iter_records("ok", kind=kind, raw=False)}


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
    checks = plan_check(config, goods, _done(store, GOOD))
    yield _stage(CHECK, judge, checks, config)
    edits = plan_edits(config, checks, _done(store, CHECK))
    yield _stage(EDIT, config.generator, edits, config)
    yield _stage(VALIDATE, judge, plan_validate(config, edits, _done(store, EDIT)), config)


def _models(config: BuildBenchConfig) -> list[ModelNeed]:
    """The generator must generate; the judge must score candidates."""
    opts = dict(config.generator_options)
    needs = [ModelNeed(config.generator, opts, Capabilities(), "the TGS-Bench generator")]
    if config.judge is not None:
        judge_needs = Capabilities(generate=False, candidate_probs=True)
        needs.append(ModelNeed(config.judge, opts, judge_needs, "the TGS-Bench judge"))
    return needs


def _load(config: BuildBenchConfig) -> list[Problem]:
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


def _manifest(config: BuildBenchConfig, problems: list[Problem]) -> dict[str, Any]:
    return run_manifest(
        config.model_dump(mode="json"),
        BUILD_BENCH.name,
        template=dataclasses.asdict(generator_ref()),
        prompts_hash=content_hash(prompts()),
        sources=source_entries(config, problems),
    )


#: The TGS-Bench build as a value for :func:`clearsight.driver.run`.
BUILD_BENCH: Protocol[BuildBenchConfig, list[Problem]] = Protocol(
    "grounding.build-bench", _models, _load, _manifest, _stages
)


# --------------------------------------------------------------------------------------------
# The pool
# --------------------------------------------------------------------------------------------


def reason_kind(reason: str) -> str:
    """A rejection reason without its particulars: the text before the first ": " with
    numbers written as ``#`` (``"edit check: character similarity 0.81 < 0.9"`` ->
    ``"edit check"``; ``"character similarity 0.81 < 0.9"`` -> ``"character similarity # < #"``)."""
    head = reason.split(": ", 1)[0]
    return re.sub(r"-?\d+(?:\.\d+)?%?", "#", head)


@dataclass
class _Tally:
    """What the manifest counts while the pool is read."""

    counts: dict[str, Counter[str]] = dataclasses.field(default_factory=dict)
    rejections: dict[str, Counter[str]] = dataclasses.field(default_factory=dict)
    injectors: dict[str, Counter[str]] = dataclasses.field(default_factory=dict)
    refused: dict[str, Counter[str]] = dataclasses.field(default_factory=dict)
    judged: dict[str, list[float]] = dataclasses.field(default_factory=dict)

    def count(self, bench: str, what: str) -> None:
        for b in (bench, "all"):
            self.counts.setdefault(b, Counter())[what] += 1

    def reject(self, stage: str, reason: str | None) -> None:
        self.rejections.setdefault(stage, Counter())[reason_kind(reason or "no record")] += 1


def _good_outcome(
    config: BuildBenchConfig, p: Problem, done: Mapping[str, Outcomes], tally: _Tally
) -> tuple[CheckSpec, Trajectory] | None:
    """The kept good trajectory of a problem and its check item, or None (counted)."""
    good = plan_good(config, [p])[0]
    g = done[GOOD].get(good.key)
    if not g or not g["kept"]:
        tally.reject("good", g["reason"] if g else "no record: the item failed or did not run")
        return None
    check = plan_check(config, [good], done[GOOD])[0]
    c = done[CHECK].get(check.key)
    if not c or not c["kept"]:
        tally.reject("check", c["reason"] if c else "no record: the item failed or did not run")
        return None
    tally.count(p.benchmark, "good")
    return check, trajectory_from_json(c["good"])


def _pairs(
    config: BuildBenchConfig, check: CheckSpec, done: Mapping[str, Outcomes], tally: _Tally
) -> dict[str, BenchPair]:
    pairs = {}
    for edit in plan_edits(config, [check], done[CHECK]):
        e = done[EDIT].get(edit.key)
        if not e or not e["kept"]:
            tally.reject(edit.axis, e["reason"] if e else "no record: the item failed")
            continue
        check_of = plan_validate(config, [edit], done[EDIT])[0]
        v = done[VALIDATE].get(check_of.key)
        if not v or not v["kept"]:
            tally.reject(edit.axis, v["reason"] if v else "no record: the item failed")
            continue
        tally.injectors.setdefault(edit.axis, Counter())[str(e["injector"])] += 1
        if e["model_refused"]:
            refused = tally.refused.setdefault(edit.axis, Counter())
            refused[reason_kind(str(e["model_refused"]))] += 1
        if v["judge_p_bad"] is not None:
            tally.judged.setdefault(edit.axis, []).append(float(v["judge_p_bad"]))
        pairs[edit.axis] = BenchPair(
            check_of.bad,
            str(e["injector"]),
            e["rule"],
            e["model_refused"],
            float(e["similarity"]),
            v["judge_p_bad"],
        )
        tally.count(check.problem.benchmark, edit.axis)
    return pairs


def collect_bench(
    config: BuildBenchConfig, problems: Sequence[Problem], store: RunStore
) -> TgsBench:
    """The pool a build's store holds: the items with at least one kept pair, and the manifest
    (sources, counts, retention = kept / attempted per benchmark and axis, rejection reasons
    by stage or axis, injectors and the model edits' refusal reasons, judge identification)."""
    done = {kind: _done(store, kind) for kind in (GOOD, CHECK, EDIT, VALIDATE)}
    tally = _Tally()
    items = []
    for p in problems:
        tally.count(p.benchmark, "attempted")
        kept = _good_outcome(config, p, done, tally)
        if kept is None:
            continue
        pairs = _pairs(config, kept[0], done, tally)
        if pairs:
            items.append(BenchItem(p, kept[1], pairs))
    counts = {b: {k: c[k] for k in ("attempted", "good", *AXES)} for b, c in tally.counts.items()}
    retention = {b: {k: c[k] / c["attempted"] for k in ("good", *AXES)} for b, c in counts.items()}
    manifest = {
        "generator": config.generator,
        "generator_options": config.generator_options,
        "judge": config.judge,
        "seed": config.seed,
        "template": dataclasses.asdict(generator_ref()),
        "prompts_hash": content_hash(prompts()),
        "sources": source_entries(config, problems),
        "counts": counts,
        "retention": retention,
        "rejections": {k: dict(v) for k, v in tally.rejections.items()},
        "injectors": {k: dict(v) for k, v in tally.injectors.items()},
        "model_edits_refused": {k: dict(v) for k, v in tally.refused.items()},
        "judge_picked_bad": {
            a: {"n": len(v), "share": sum(x > 0.5 for x in v) / len(v)}
            for a, v in tally.judged.items()
        },
    }
    return TgsBench(tuple(items), manifest)


def run_build_bench(
    config: BuildBenchConfig,
    run_dir: Path,
    *,
    fresh: bool = False,
    allow_mismatch: bool = False,
    executor: ExecutorName = "serial",
    workers: int = 1,
    progress: bool = True,
    ray: RayConfig | None = None,
) -> RunSummary:
    """Run the build's stages into ``run_dir`` (resumable); :func:`read_bench` reads the pool.
    The same as ``clearsight.driver.run(BUILD_BENCH, config, run_dir, Execution(...))``."""
    return driver.run(
        BUILD_BENCH,
        config,
        run_dir,
        Execution(executor, workers, ray, progress),
        fresh=fresh,
        allow_mismatch=allow_mismatch,
    )


def read_bench(config: BuildBenchConfig, run_dir: Path) -> TgsBench:
    """The pool of a build run (write it with
    :func:`~clearsight.grounding.bench_file.write_bench`)."""
    problems = _load(config)
    with RunStore.open(run_dir, read_only=True) as store:
        store.expect_protocol(BUILD_BENCH.name)
        return collect_bench(config, problems, store)
