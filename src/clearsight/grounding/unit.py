"""Running one unit of a grounding run into records (inside a worker): the five item kinds of
:mod:`clearsight.grounding.specs`, each unit one kind for one model, its items batched.

A unit-level failure fails its items with the reason; an item whose model reply cannot be read
fails alone (a rerun asks again); an item that cannot be scored for a reason of its own (an
unparseable trajectory, an empty rationale to mask) is a failed record that says ``skipped``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt
from pydantic import JsonValue

from clearsight.execute.unit import KeyedItems
from clearsight.grounding.bench.pairs import (
    EditFailedError,
    inject_errors,
    judge_p_bad,
    judge_request,
)
from clearsight.grounding.confidence.elicit import Elicited, ElicitRequest, elicit
from clearsight.grounding.confidence.methods import (
    DEFAULT_READOUT,
    combine,
    get_readout,
    readout_requests,
)
from clearsight.grounding.problems.images import load_image
from clearsight.grounding.problems.problem import Problem, is_correct, normalise_answer
from clearsight.grounding.readouts import TrajectoryReadouts, VariationReadouts
from clearsight.grounding.specs import (
    EDIT,
    JUDGE,
    TRAJECTORY,
    VARIATION,
    EditSpec,
    ElicitSpec,
    JudgeSpec,
    TrajectorySpec,
    VariationSpec,
)
from clearsight.grounding.trajectories.generation import generate_trajectories, parse_generated
from clearsight.grounding.trajectories.parsing import parse_trajectory, split_at_slot
from clearsight.grounding.trajectories.templates import template_by_id
from clearsight.grounding.variation import Sampled, sample_alternatives
from clearsight.models import Backend, shared_backend
from clearsight.models.base import Response, masked_scorer
from clearsight.models.replies import checked_replies, noting_replaced
from clearsight.specs import Spec
from clearsight.store import Record
from clearsight.validate import InputError

#: What the measured model is needed for (its masked scoring; the driver checks it up front).
MASKED_PURPOSE = "trajectory grounding (confidence under masked attention)"

S = TypeVar("S", bound=Spec)


@dataclass(frozen=True)
class GroundingUnit(KeyedItems, Generic[S]):
    """Items of one kind for one model: picklable, independent."""

    kind: str
    model: str
    model_options: Mapping[str, JsonValue]
    items: tuple[S, ...]


def problem_image(problem: Problem, backend: Backend) -> npt.NDArray[np.uint8] | None:
    """The pixels of ``problem``'s image for ``backend`` (None without one, or for a backend
    that takes no images)."""
    if problem.image is None or not backend.capabilities.images:
        return None
    return load_image(problem.image)


R = TypeVar("R")


def per_item(
    unit: GroundingUnit[S],
    started: float,
    results: Sequence[R | Exception],
    read: Callable[[S, R, float], Record],
) -> list[Record]:
    """Each item's record from its result (in the unit's order), its share of the unit's time
    since ``started`` as its latency: an exception — no model reply that can be read — fails
    its item (a rerun asks again); any other result is ``read``."""
    elapsed = (time.perf_counter() - started) / unit.size
    return [
        Record.failed(spec.key, r, elapsed) if isinstance(r, Exception) else read(spec, r, elapsed)
        for spec, r in zip(unit.items, results, strict=True)
    ]


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
            readouts = trajectory_readouts(spec, spec.given, False)
        except InputError as exc:
            out[spec.key] = Record.failed(spec.key, f"skipped: {exc}", 0.0, {"text": spec.given})
            continue
        out[spec.key] = Record(spec.key, "ok", None, {"text": spec.given}, readouts, 0.0)
    if gen:
        backend = shared_backend(unit.model, unit.model_options)
        problems = [s.problem for s in gen]
        images = [problem_image(p, backend) for p in problems]
        template = template_by_id(gen[0].template.id)
        results = generate_trajectories(
            backend, problems, images, template, max_new_tokens=gen[0].max_new_tokens
        )
        elapsed = (time.perf_counter() - started) / len(gen)
        for spec, g in zip(gen, results, strict=True):
            if isinstance(g, Exception):  # no reply that can be read: a rerun asks again
                out[spec.key] = Record.failed(spec.key, g, elapsed)
                continue
            raw = noting_replaced({"text": g.text}, g.replaced)
            if g.trajectory is None:
                out[spec.key] = Record.failed(spec.key, f"skipped: {g.reason}", elapsed, raw)
            else:
                readouts = trajectory_readouts(spec, g.text, g.answer_forced)
                out[spec.key] = Record(spec.key, "ok", None, raw, readouts, elapsed)
    return [out[s.key] for s in unit.items]


def trajectory_readouts(spec: TrajectorySpec, text: str, forced: bool) -> TrajectoryReadouts:
    """A trajectory record's read-outs from its stored text: a given trajectory parsed as
    written (its written confidence kept), a generated one as the run's template reads it
    (:func:`~clearsight.grounding.trajectories.generation.parse_generated`); ``forced``: whether
    its answer was forced. InputError when the text is not a trajectory. ``clearsight verify
    --readouts`` derives a stored record's read-outs again with it."""
    written = None
    if spec.given is not None:
        slotted = split_at_slot(text)
        traj, written = parse_trajectory(slotted.body), slotted.written
    else:
        parsed = parse_generated(text, template_by_id(spec.template.id), forced)
        if parsed.trajectory is None:
            raise InputError(parsed.reason or "the text is not a trajectory")
        traj = parsed.trajectory
    return {
        "trajectory": traj.to_json(),
        "answer": normalise_answer(traj.answer, spec.problem.answer_type),
        "correct": is_correct(traj.answer, spec.problem),
        "written_confidence": written,
        "answer_forced": forced,
    }


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
    images = [problem_image(s.problem, backend) for s in unit.items]
    requests = [
        judge_request(s.problem, s.good, s.bad, s.bad_first, image)
        for s, image in zip(unit.items, images, strict=True)
    ]
    shown = [
        r if isinstance(r, Exception) else (r, image is not None)
        for r, image in zip(checked_replies(backend, requests), images, strict=True)
    ]
    return per_item(unit, started, shown, _judged)


def _judged(spec: JudgeSpec, reply: tuple[Response, bool], elapsed: float) -> Record:
    """A verdict's record: p(bad), whether it is over one half, the axis and — only where the
    judge was shown the problem's image — ``saw_image`` (a text-only judge's records, and those
    of runs made before the judge could see images, lack it)."""
    r, saw_image = reply
    p_bad = judge_p_bad(r.candidate_probs or {}, spec.bad_first)
    if p_bad is None:
        return Record.failed(spec.key, "the judge put no probability on 1 or 2", elapsed)
    readouts: dict[str, object] = {"p_bad": p_bad, "picked_bad": p_bad > 0.5, "axis": spec.axis}
    if saw_image:
        readouts["saw_image"] = True
    return Record(spec.key, "ok", None, r.to_json(), readouts, elapsed)


def _run_variations(unit: GroundingUnit[VariationSpec], started: float) -> list[Record]:
    """Sampled content-variation alternatives, each stored with its text; a rejected sample
    is an ok record too (``accepted`` false, the reason kept): the same seed samples the same
    text, so a rerun does not sample it again."""
    backend = shared_backend(unit.model, unit.model_options)
    images = [problem_image(s.problem, backend) for s in unit.items]
    return per_item(unit, started, sample_alternatives(backend, unit.items, images), _sampled)


def _sampled(spec: VariationSpec, result: Sampled, elapsed: float) -> Record:
    text, alt, forced, replaced = result
    refused = isinstance(alt, InputError)
    readouts: VariationReadouts = {
        "axis": spec.axis,
        "sample": spec.sample,
        "answer_forced": forced,
        "accepted": not refused,
        "reason": str(alt) if refused else None,
        "alternative": None if isinstance(alt, InputError) else alt.to_json(),
    }
    raw = noting_replaced({"text": text}, replaced)
    return Record(spec.key, "ok", None, raw, readouts, elapsed)


def _run_elicit(unit: GroundingUnit[ElicitSpec], started: float) -> list[Record]:
    """Each item's read-out: one elicitation per slot of its read-out, all of the unit's
    batched together, combined per item
    (:func:`clearsight.grounding.confidence.methods.combine`)."""
    backend = shared_backend(unit.model, unit.model_options)
    planned: list[tuple[int, int] | str] = []  # per item: its requests' range, or why none
    requests: list[ElicitRequest] = []
    images: dict[str, npt.NDArray[np.uint8] | None] = {}
    for spec in unit.items:
        problem, traj = spec.problem, spec.trajectory
        template = template_by_id(spec.template.id)
        if spec.share > 0 and not traj.rationale_spans(template):
            planned.append("skipped: empty rationale: there is nothing to mask")
            continue
        if problem.id not in images:
            images[problem.id] = problem_image(problem, backend)
        readout = get_readout(spec.readout.name if spec.readout else DEFAULT_READOUT)
        image = images[problem.id]
        reqs = readout_requests(readout, problem, traj, spec.share, spec.seed, image, template)
        planned.append((len(requests), len(requests) + len(reqs)))
        requests += reqs
    results = elicit(masked_scorer(backend, MASKED_PURPOSE), requests) if requests else []
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
