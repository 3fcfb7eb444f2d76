"""Trajectory grounding (docs/methods.md §5): plan items, run them, keep records.

Four kinds of items, each a typed spec of :mod:`clearsight.grounding.specs` (keyed by
:attr:`~clearsight.specs.Spec.key`) that the worker is handed as it is; a record is a pure
function of its spec:

1. ``grounding.trajectory`` (:class:`~clearsight.grounding.specs.TrajectorySpec`) — (problem,
   model, template, decoding): the model's own greedy trajectory, segmented; or, for a problem
   that brings a given trajectory text, that text cut at its confidence slot. Unparseable
   output fails the item with the reason.
2. ``grounding.edit`` (:class:`~clearsight.grounding.specs.EditSpec`) — (problem, axis, span,
   generator): TGS-Bench's vision / reasoning error injection on the canonical trajectory
   (model edit, checked; rule fallback). The problems of a TGS-Bench file
   (``GroundingConfig.bench``, :mod:`clearsight.grounding.bench_file`) bring their pairs.
3. ``grounding.judge`` (:class:`~clearsight.grounding.specs.JudgeSpec`, when a judge is
   configured) — (problem, pair, order, judge): which side of a TGS-Bench pair holds the error.
4. ``grounding.variation`` (:class:`~clearsight.grounding.specs.VariationSpec`, sampled
   content variation) — (problem, axis, k, own trajectory, model, sampling, seed): alternative
   k of one axis, sampled by the model (:mod:`clearsight.grounding.variation`); a rejected
   sample is kept with its reason (``accepted`` false) and not scored.
5. ``grounding.elicit`` (:class:`~clearsight.grounding.specs.ElicitSpec`) — (problem, variant,
   trajectory, share, model, read-out): one confidence read-out
   (:mod:`clearsight.grounding.readouts`; one forward pass per slot). Variants: ``self/rX``
   (own trajectory with share X of the rationale masked), ``bench/good``, ``bench/<axis>/bad``,
   ``variation/<axis>/s<k>`` (sampled) or ``variation/<axis>/alt`` (hand-written),
   ``hesitation/pre`` and ``hesitation/post`` (the first hesitation event; event k >= 1:
   ``hesitation/<k>/pre`` and ``.../post``).

The later stages are planned from the stored records of the earlier ones, with
the trajectories inside their specs, so a rerun resumes at any stage. Items are grouped into
units (one model, up to ``unit_size`` items) so a worker batches their forward passes.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import ConfigDict, Field, field_validator

from clearsight import driver
from clearsight.driver import Execution, ModelNeed, Protocol, RunSummary, Stage
from clearsight.execute import ExecutorName
from clearsight.execute.unit import KeyedItems
from clearsight.grounding.bench import (
    AXES,
    EditFailedError,
    bad_trajectory,
    inject_errors,
    judge_request,
    perturb_answer,
)
from clearsight.grounding.bench_file import bench_edits, bench_problems, load_bench
from clearsight.grounding.elicit import Elicited, ElicitRequest, elicit
from clearsight.grounding.generator import TEXT_FAMILIES, bundled_problems, load_image
from clearsight.grounding.hesitation import find_hesitations, hesitation_variant
from clearsight.grounding.hub import benchmark_record
from clearsight.grounding.problems import (
    Problem,
    is_correct,
    load_benchmark,
    load_jsonl,
    normalise_answer,
)
from clearsight.grounding.readouts import DEFAULT_READOUT, combine, get_readout, readout_requests
from clearsight.grounding.specs import (
    EDIT,
    ELICIT,
    JUDGE,
    TRAJECTORY,
    VARIATION,
    EditSpec,
    ElicitSpec,
    JudgeSpec,
    ReadoutRef,
    TrajectorySpec,
    VariationSpec,
    template_ref,
)
from clearsight.grounding.tgs import MASK_RATIOS, bench_variant, self_variant
from clearsight.grounding.trajectories import (
    Trajectory,
    generate_trajectories,
    good_trajectory,
    parse_trajectory,
    split_at_slot,
    trajectory_from_json,
)
from clearsight.grounding.variation import (
    ANSWER_TOKENS,
    TEMPERATURE,
    TOP_P,
    alternative,
    sample_alternatives,
    variation_variant,
)
from clearsight.models import Backend, shared_backend
from clearsight.models.base import Capabilities, masked_scorer
from clearsight.models.replies import checked_replies
from clearsight.provenance import RunConfig, run_manifest, source_digest
from clearsight.seeding import derive_seed, rng_for
from clearsight.specs import Spec, to_plain
from clearsight.store import Record, RunStore
from clearsight.validate import InputError, refuse_repeated_ids

if TYPE_CHECKING:
    from clearsight.execute.on_ray import RayConfig


class GroundingConfig(RunConfig):
    """A grounding run: which problems, which model, which analyses."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    # variation_mode is not here: its default changed to the paper's sampled alternatives
    added_later: ClassVar[tuple[str, ...]] = ("bench", "variation_samples", "readouts")

    model: str = Field("hf:smollm2-135m", description="Model whose confidence is measured.")
    model_options: dict[str, Any] = Field(
        default_factory=lambda: {"batch_size": 16},
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
    max_new_tokens: int = Field(96, ge=1, description="Tokens a trajectory may generate.")
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

    @field_validator("readouts")
    @classmethod
    def _known_readouts(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            get_readout(name)
        if len(set(v)) != len(v):
            raise InputError(f"a read-out is named twice in {list(v)}")
        return v

    def options_of(self, model: str | None) -> dict[str, Any]:
        """The options ``model`` (the measured model, the generator or the judge) runs with:
        ``model_options`` over its preset's (:func:`clearsight.models.presets.resolve_options`);
        none for no model (the rule-only generator)."""
        from clearsight.models.presets import resolve_options

        return {} if model is None else resolve_options(model, self.model_options)


def load_problems(config: GroundingConfig) -> list[Problem]:
    """The run's problems: bundled ones, then loaded benchmarks and JSONL files; ids unique
    (a repeated one is an InputError naming it and both sources)."""
    sources = [
        ("the bundled problems", bundled_problems(config.n_problems, config.families, config.seed))
    ]
    for name in config.benchmarks:
        if config.datasets_dir is None:
            raise InputError("benchmarks given without datasets_dir")
        loaded = load_benchmark(name, config.datasets_dir, config.limit)
        sources.append((f"benchmark {name}", loaded))
    for path in config.jsonl:
        sources.append((str(path), load_jsonl(path)[: config.limit]))
    if config.bench is not None:
        sources.append((str(config.bench), bench_problems(load_bench(config.bench))))
    refuse_repeated_ids(((p.id, where) for where, ps in sources for p in ps), "problem")
    return [p for _, ps in sources for p in ps]


# --------------------------------------------------------------------------------------------
# Units
# --------------------------------------------------------------------------------------------

S = TypeVar("S", bound=Spec)


@dataclass(frozen=True)
class GroundingUnit(KeyedItems, Generic[S]):
    """Items of one kind for one model: picklable, independent."""

    kind: str
    model: str
    model_options: Mapping[str, Any]
    items: tuple[S, ...]


def _image(problem: Problem, backend: Backend) -> Any:
    if problem.image is None or not backend.capabilities.images:
        return None
    return load_image(problem.image)


def run_unit(unit: GroundingUnit[Any]) -> list[Record]:
    """Records of one unit; a unit-level failure fails its items with the reason."""
    started = time.perf_counter()
    try:
        if unit.kind == TRAJECTORY:
            return _run_trajectories(unit, started)
        if unit.kind == EDIT:
            return _run_edits(unit, started)
        if unit.kind == JUDGE:
            return _run_judge(unit, started)
        if unit.kind == VARIATION:
            return _run_variations(unit, started)
        return _run_elicit(unit, started)
    except Exception as exc:  # recorded with its reason; the run goes on
        elapsed = (time.perf_counter() - started) / max(unit.size, 1)
        return [Record.failed(k, exc, elapsed) for k in unit.keys]


def _run_trajectories(unit: GroundingUnit[TrajectorySpec], started: float) -> list[Record]:
    out: dict[str, Record] = {}
    gen: list[TrajectorySpec] = []
    for spec in unit.items:
        if spec.given is None:
            gen.append(spec)
            continue
        try:
            slotted = split_at_slot(spec.given)
            traj = parse_trajectory(slotted.body)
        except InputError as exc:
            out[spec.key] = Record.failed(spec.key, f"skipped: {exc}", 0.0, {"text": spec.given})
            continue
        out[spec.key] = _trajectory_record(spec, spec.given, traj, False, slotted.written, 0.0)
    if gen:
        backend = shared_backend(unit.model, unit.model_options)
        problems = [s.problem for s in gen]
        images = [_image(p, backend) for p in problems]
        results = generate_trajectories(
            backend, problems, images, max_new_tokens=gen[0].max_new_tokens
        )
        elapsed = (time.perf_counter() - started) / len(gen)
        for spec, g in zip(gen, results, strict=True):
            if isinstance(g, Exception):  # no reply that can be read: a rerun asks again
                out[spec.key] = Record.failed(spec.key, g, elapsed)
            elif g.trajectory is None:
                out[spec.key] = Record.failed(
                    spec.key, f"skipped: {g.reason}", elapsed, {"text": g.text}
                )
            else:
                out[spec.key] = _trajectory_record(
                    spec, g.text, g.trajectory, g.answer_forced, None, elapsed
                )
    return [out[s.key] for s in unit.items]


def _trajectory_record(
    spec: TrajectorySpec,
    text: str,
    traj: Trajectory,
    forced: bool,
    written: int | None,
    elapsed: float,
) -> Record:
    readouts = {
        "trajectory": traj.to_json(),
        "answer": normalise_answer(traj.answer, spec.problem.answer_type),
        "correct": is_correct(traj.answer, spec.problem),
        "written_confidence": written,
        "answer_forced": forced,
    }
    return Record(spec.key, "ok", None, {"text": text}, readouts, elapsed)


def _run_edits(unit: GroundingUnit[EditSpec], started: float) -> list[Record]:
    first = unit.items[0]
    generator = None
    if first.generator is not None:
        generator = shared_backend(first.generator, first.generator_options)
    edits = inject_errors(
        generator, [(s.axis, s.span) for s in unit.items], [s.seed for s in unit.items]
    )
    elapsed = (time.perf_counter() - started) / unit.size
    records = []
    for spec, edit in zip(unit.items, edits, strict=True):
        if isinstance(edit, EditFailedError):
            records.append(Record.failed(spec.key, str(edit), elapsed))
        elif isinstance(edit, InputError):
            records.append(Record.failed(spec.key, f"skipped: {edit}", elapsed))
        else:
            readouts = {"edited": edit.edited}
            records.append(Record(spec.key, "ok", None, edit.to_json(), readouts, elapsed))
    return records


def _run_judge(unit: GroundingUnit[JudgeSpec], started: float) -> list[Record]:
    """The judge's probability that each pair's bad side (shown first or second, by seed) is
    the one with the error."""
    backend = shared_backend(unit.model, unit.model_options)
    requests = []
    for spec in unit.items:
        first, second = (spec.bad, spec.good) if spec.bad_first else (spec.good, spec.bad)
        requests.append(judge_request(spec.problem, first, second))
    replies = checked_replies(backend, requests)
    elapsed = (time.perf_counter() - started) / unit.size
    records = []
    for spec, r in zip(unit.items, replies, strict=True):
        if isinstance(r, Exception):  # no reply that can be read: a rerun asks again
            records.append(Record.failed(spec.key, r, elapsed))
            continue
        probs = r.candidate_probs or {}
        p1, p2 = float(probs.get("1", 0.0)), float(probs.get("2", 0.0))
        if p1 + p2 <= 0:
            records.append(
                Record.failed(spec.key, "the judge put no probability on 1 or 2", elapsed)
            )
            continue
        p_bad = (p1 if spec.bad_first else p2) / (p1 + p2)
        readouts = {"p_bad": p_bad, "picked_bad": p_bad > 0.5, "axis": spec.axis}
        records.append(Record(spec.key, "ok", None, r.to_json(), readouts, elapsed))
    return records


def _run_variations(unit: GroundingUnit[VariationSpec], started: float) -> list[Record]:
    """Sampled content-variation alternatives, each stored with its text; a rejected sample
    is an ok record too (``accepted`` false, the reason kept): the same seed samples the same
    text, so a rerun does not sample it again."""
    backend = shared_backend(unit.model, unit.model_options)
    images = [_image(s.problem, backend) for s in unit.items]
    results = sample_alternatives(backend, unit.items, images)
    elapsed = (time.perf_counter() - started) / unit.size
    records = []
    for spec, result in zip(unit.items, results, strict=True):
        if isinstance(result, Exception):  # no reply that can be read: a rerun asks again
            records.append(Record.failed(spec.key, result, elapsed))
            continue
        text, alt, forced = result
        readouts: dict[str, Any] = {"axis": spec.axis, "sample": spec.sample}
        readouts["answer_forced"] = forced
        if isinstance(alt, InputError):
            readouts |= {"accepted": False, "reason": str(alt), "alternative": None}
        else:
            readouts |= {"accepted": True, "reason": None, "alternative": alt.to_json()}
        records.append(Record(spec.key, "ok", None, {"text": text}, readouts, elapsed))
    return records


def _run_elicit(unit: GroundingUnit[ElicitSpec], started: float) -> list[Record]:
    """Each item's read-out: one elicitation per slot of its read-out, all of the unit's
    batched together, combined per item (:func:`clearsight.grounding.readouts.combine`)."""
    backend = shared_backend(unit.model, unit.model_options)
    planned: list[tuple[int, int] | str] = []  # per item: its requests' range, or why none
    requests: list[ElicitRequest] = []
    images: dict[str, Any] = {}
    for spec in unit.items:
        problem, traj = spec.problem, spec.trajectory
        if spec.share > 0 and not traj.rationale_spans():
            planned.append("skipped: empty rationale: there is nothing to mask")
            continue
        if problem.id not in images:
            images[problem.id] = _image(problem, backend)
        readout = get_readout(spec.readout.name if spec.readout else DEFAULT_READOUT)
        reqs = readout_requests(readout, problem, traj, spec.share, spec.seed, images[problem.id])
        planned.append((len(requests), len(requests) + len(reqs)))
        requests += reqs
    purpose = "trajectory grounding (confidence under masked attention)"
    results = elicit(masked_scorer(backend, purpose), requests) if requests else []
    elapsed = (time.perf_counter() - started) / unit.size
    records = []
    for spec, plan in zip(unit.items, planned, strict=True):
        if isinstance(plan, str):
            records.append(Record.failed(spec.key, plan, elapsed))
            continue
        readout = get_readout(spec.readout.name if spec.readout else DEFAULT_READOUT)
        got = results[plan[0] : plan[1]]
        slots = [r.to_json() if isinstance(r, Elicited) else {"failed": r.reason} for r in got]
        raw = slots[0] if len(slots) == 1 else {"slots": slots}  # one slot: stored as before
        res = combine(readout, got)
        if isinstance(res, str):
            records.append(Record.failed(spec.key, res, elapsed, raw))
        else:
            records.append(Record(spec.key, "ok", None, raw, res.to_readouts(), elapsed))
    return records


# --------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------


def plan_trajectories(config: GroundingConfig, problems: Sequence[Problem]) -> list[TrajectorySpec]:
    """Stage 1 items: one own trajectory per problem (or the given one)."""
    return [
        TrajectorySpec(
            problem=p,
            model=config.model,
            model_options=config.options_of(config.model),
            template=template_ref(),
            max_new_tokens=config.max_new_tokens,
            given=str(p.meta["trajectory"]) if p.meta and "trajectory" in p.meta else None,
        )
        for p in problems
    ]


def plan_edits(config: GroundingConfig, problems: Sequence[Problem]) -> list[EditSpec]:
    """Stage 2 items: a vision and a reasoning error per problem with a canonical solution."""
    items = []
    for p in problems:
        if not p.solution:
            continue
        good = good_trajectory(p)
        for axis, span in (("vision", good.vision), ("reasoning", good.reasoning)):
            items.append(
                EditSpec(
                    problem_id=p.id,
                    axis=axis,
                    span=span,
                    generator=config.generator,
                    generator_options=config.options_of(config.generator),
                    seed=derive_seed(config.seed, p.id, axis),
                )
            )
    return items


def _bad_sides(
    config: GroundingConfig, p: Problem, good: Trajectory, edits: dict[tuple[str, str], str]
) -> Iterator[tuple[str, Trajectory, dict[str, str]]]:
    """The TGS-Bench pairs of a problem with a solution: per axis with a bad trajectory, the
    axis, that trajectory and what made it (the answer rule)."""
    for axis in AXES:
        try:
            if (p.id, axis) in edits:  # made by the edit stage or given by a TGS-Bench file
                text, meta = edits[(p.id, axis)], {}
            elif axis == "answer":
                rng = rng_for("grounding.bench.answer", config.seed, p.id)
                text, rule = perturb_answer(good.answer, p, rng)
                meta = {"rule": rule}
            else:
                continue
        except InputError:
            continue
        yield axis, bad_trajectory(good, axis, text), meta


def plan_judge(
    config: GroundingConfig, problems: Sequence[Problem], edits: dict[tuple[str, str], str]
) -> list[JudgeSpec]:
    """One judge item per TGS-Bench pair (the bad side's position balanced by seed); none
    without a judge."""
    if config.judge is None:
        return []
    items = []
    for p in problems:
        if not p.solution:
            continue
        good = good_trajectory(p)
        for axis, bad, _ in _bad_sides(config, p, good, edits):
            items.append(
                JudgeSpec(
                    problem=p,
                    axis=axis,
                    good=good,
                    bad=bad,
                    bad_first=derive_seed(config.seed, p.id, axis, "judge") % 2 == 0,
                    judge=config.judge,
                )
            )
    return items


def plan_variations(
    config: GroundingConfig, problems: Sequence[Problem], own: dict[str, dict[str, Any]]
) -> list[VariationSpec]:
    """Sampled content variation: K alternatives per axis of each own trajectory, seeded per
    problem, axis and k (none in hand-written mode)."""
    if not config.variation or config.variation_mode != "sampled":
        return []
    items = []
    for p in problems:
        if p.id not in own:
            continue
        traj = trajectory_from_json(own[p.id]["trajectory"])
        for axis in AXES:
            for k in range(config.variation_samples):
                items.append(
                    VariationSpec(
                        problem=p,
                        axis=axis,
                        sample=k,
                        trajectory=traj,
                        model=config.model,
                        model_options=config.options_of(config.model),
                        template=template_ref(),
                        max_new_tokens=config.max_new_tokens,
                        answer_tokens=ANSWER_TOKENS,
                        temperature=TEMPERATURE,
                        top_p=TOP_P,
                        seed=derive_seed(config.seed, p.id, axis, k, "variation"),
                    )
                )
    return items


def _readout_refs(config: GroundingConfig) -> list[ReadoutRef | None]:
    """The run's read-outs as spec fields (``verbalize``: None, the key it always had)."""
    out: list[ReadoutRef | None] = []
    for name in config.readouts:
        r = get_readout(name)
        out.append(None if name == DEFAULT_READOUT else ReadoutRef(name, r.hash))
    return out


def _elicit_spec(
    config: GroundingConfig,
    p: Problem,
    variant: str,
    traj: Trajectory,
    share: float,
    meta: dict[str, str],
) -> Iterator[ElicitSpec]:
    """The item of ``variant`` under each of the run's read-outs (one masked subset: the
    seed does not depend on the read-out)."""
    for ref in _readout_refs(config):
        yield ElicitSpec(
            problem=p,
            variant=variant,
            trajectory=traj,
            share=share,
            seed=derive_seed(config.seed, p.id, variant),
            model=config.model,
            model_options=config.options_of(config.model),
            template=template_ref(),
            meta=meta,
            readout=ref,
        )


def plan_elicitations(
    config: GroundingConfig,
    problems: Sequence[Problem],
    own: dict[str, dict[str, Any]],
    edits: dict[tuple[str, str], str],
    alternatives: Mapping[tuple[str, str, int], Trajectory] | None = None,
) -> list[ElicitSpec]:
    """Elicitation items from the own trajectories (``own[problem id]`` = the read-outs of its
    stored trajectory record), the edits (``edits[(problem id, axis)]`` = edited span) and the
    sampled alternatives (``alternatives[(problem id, axis, k)]``), each under every read-out."""
    items: list[ElicitSpec] = []
    sampled = config.variation and config.variation_mode == "sampled"
    for p in problems:
        if p.id in own:
            traj = trajectory_from_json(own[p.id]["trajectory"])
            for r in config.mask_ratios:
                items += _elicit_spec(config, p, self_variant(r), traj, r, {})
            events = find_hesitations(traj) if config.hesitation else []
            for k, hes in enumerate(events):
                for side, t in (("pre", hes.pre), ("post", hes.post)):
                    variant = hesitation_variant(k, side)
                    items += _elicit_spec(config, p, variant, t, 0.0, {"marker": hes.marker})
            for axis in AXES if sampled else ():
                for k in range(config.variation_samples):
                    if (alt := (alternatives or {}).get((p.id, axis, k))) is not None:
                        items += _elicit_spec(config, p, variation_variant(axis, k), alt, 0.0, {})
        if not p.solution:
            continue
        good = good_trajectory(p)
        if config.pairs:
            items += _elicit_spec(config, p, bench_variant(None), good, 0.0, {})
            for axis, bad, meta in _bad_sides(config, p, good, edits):
                items += _elicit_spec(config, p, bench_variant(axis), bad, 0.0, meta)
        if config.variation and not sampled:
            for axis in AXES:
                try:
                    alt = alternative(p, axis)
                except InputError:
                    continue
                items += _elicit_spec(config, p, variation_variant(axis), alt, 0.0, {})
    return items


# --------------------------------------------------------------------------------------------
# A whole run
# --------------------------------------------------------------------------------------------


def _stage(kind: str, model: str, items: Sequence[Spec], config: GroundingConfig) -> Stage[Spec]:
    """One stage: its items for ``model``, pending ones in units of ``config.unit_size``."""
    size = config.unit_size
    options = config.options_of(model)

    def units(pending: Sequence[Spec]) -> list[GroundingUnit[Spec]]:
        return [
            GroundingUnit(kind, model, options, tuple(pending[i : i + size]))
            for i in range(0, len(pending), size)
        ]

    return Stage(kind, items, units, run_unit)


def _ok_readouts(store: RunStore, kind: str) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
    """The stored spec and read-outs of each ok record of ``kind`` (stored JSON: the record of
    an earlier stage or an earlier run)."""
    for rec in store.iter_records("ok", kind=kind, raw=False):
        yield rec.spec, dict(rec.readouts)


def _models(config: GroundingConfig) -> list[ModelNeed]:
    """The measured model must score candidates under a custom attention mask (TGS-self hides
    the trajectory's spans); the generator and the judge must generate."""
    needs = [
        ModelNeed(
            config.model,
            config.options_of(config.model),
            Capabilities(candidate_probs=True, attention_mask=True),
            "trajectory grounding (confidence under masked attention)",
        )
    ]
    if config.pairs and config.generator is not None:
        opts = config.options_of(config.generator)
        needs.append(ModelNeed(config.generator, opts, Capabilities(), "the TGS-Bench generator"))
    if config.judge is not None and config.pairs:
        opts = config.options_of(config.judge)
        needs.append(ModelNeed(config.judge, opts, Capabilities(), "the judge"))
    return needs


def _manifest(config: GroundingConfig, problems: list[Problem]) -> dict[str, Any]:
    template = to_plain(template_ref())
    files = [
        {
            "source": str(Path(path).resolve()),
            "sha256": source_digest(Path(path), (".jsonl", ".json")),
            "count": len(load_jsonl(path)[: config.limit]),
        }
        for path in config.jsonl
    ]
    benchmarks = [
        {"benchmark": name, **benchmark_record(name, config.datasets_dir or ".")}
        for name in config.benchmarks
    ]
    sources = {"bundled": config.n_problems, "files": files, "count": len(problems)}
    if benchmarks:  # runs without benchmarks keep the manifest they always had
        sources["benchmarks"] = benchmarks
    bench = None if config.bench is None else dict(load_bench(config.bench).manifest)
    return run_manifest(
        config.model_dump(mode="json"),
        "grounding",
        template=template,
        problems=sources,
        tgs_bench=bench,
    )


def _stages(
    config: GroundingConfig, problems: list[Problem], store: RunStore
) -> Iterator[Stage[Any]]:
    """Trajectories, then the TGS-Bench edits, the judge pass, and the elicitations planned
    from what the first two stages stored."""
    by_id = {p.id: p for p in problems}
    given = {} if config.bench is None else bench_edits(load_bench(config.bench))
    yield _stage(TRAJECTORY, config.model, plan_trajectories(config, problems), config)
    if config.pairs:
        gen_model = config.generator or config.model
        benched = {pid for pid, _ in given}  # a TGS-Bench file's problems bring their pairs
        to_edit = [p for p in problems if p.id not in benched]
        yield _stage(EDIT, gen_model, plan_edits(config, to_edit), config)
    own = {
        s["problem"]["id"]: r
        for s, r in _ok_readouts(store, TRAJECTORY)
        if s["problem"]["id"] in by_id and s["model"] == config.model
    }
    edits = {
        (s["problem_id"], s["axis"]): str(r["edited"])
        for s, r in _ok_readouts(store, EDIT)
        if s["generator"] == config.generator
    } | given
    if config.judge is not None and config.pairs:
        yield _stage(JUDGE, config.judge, plan_judge(config, problems, edits), config)
    variations = plan_variations(config, problems, own)
    if variations:
        yield _stage(VARIATION, config.model, variations, config)
    alternatives = {
        (s["problem"]["id"], s["axis"], int(s["sample"])): trajectory_from_json(r["alternative"])
        for s, r in _ok_readouts(store, VARIATION)
        if r["accepted"]
        and s["model"] == config.model
        and s["problem"]["id"] in by_id
        and s["seed"]
        == derive_seed(config.seed, s["problem"]["id"], s["axis"], s["sample"], "variation")
    }
    items = plan_elicitations(config, problems, own, edits, alternatives)
    yield _stage(ELICIT, config.model, items, config)


#: Trajectory grounding as a value for :func:`clearsight.driver.run`.
GROUNDING: Protocol[GroundingConfig, list[Problem]] = Protocol(
    "grounding", _models, load_problems, _manifest, _stages
)


def run_grounding(
    config: GroundingConfig,
    run_dir: Path,
    *,
    fresh: bool = False,
    allow_mismatch: bool = False,
    executor: ExecutorName = "serial",
    workers: int = 1,
    progress: bool = True,
    ray: RayConfig | None = None,
) -> RunSummary:
    """Plan and run the stages (``summary.stages``: each stage's summary). Resumable. The
    same as ``clearsight.driver.run(GROUNDING, config, run_dir, Execution(...))``."""
    return driver.run(
        GROUNDING,
        config,
        run_dir,
        Execution(executor, workers, ray, progress),
        fresh=fresh,
        allow_mismatch=allow_mismatch,
    )


__all__ = [
    "EDIT",
    "ELICIT",
    "JUDGE",
    "TRAJECTORY",
    "VARIATION",
    "GroundingConfig",
    "GroundingUnit",
    "load_problems",
    "run_grounding",
    "run_unit",
]
