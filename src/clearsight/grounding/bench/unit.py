"""Running one unit of a TGS-Bench build (:mod:`clearsight.grounding.bench.protocol`) into records:
the
generator's good trajectories, the answer check (and the judge's acceptance), the one-error
edits per axis, and the pairs' validation. Every item ends as an outcome — an ``ok`` record with
``kept`` and the rejection ``reason`` — or, when a model reply cannot be read, a failed record
(a rerun asks again)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from clearsight.grounding.bench.pairs import (
    EditFailedError,
    check_edit,
    inject_errors,
    judge_p_bad,
    judge_request,
    perturb_answer,
    similarity,
)
from clearsight.grounding.bench.specs import (
    CHECK,
    EDIT,
    GOOD,
    VALIDATE,
    CheckSpec,
    GoodSpec,
    PairEditSpec,
    ValidateSpec,
    accept_request,
    generator_template,
)
from clearsight.grounding.problems.problem import is_correct, normalise_answer
from clearsight.grounding.trajectories.generation import Generated, generate_trajectories
from clearsight.grounding.unit import GroundingUnit, per_item, problem_image
from clearsight.models import shared_backend
from clearsight.models.base import Backend, Request
from clearsight.models.replies import checked_replies, noting_replaced
from clearsight.seeding import rng_for
from clearsight.store import Record
from clearsight.validate import InputError


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
        [problem_image(p, backend) for p in problems],
        template=generator_template(),
        max_new_tokens=unit.items[0].max_new_tokens,
    )
    return per_item(unit, started, results, _good)


def _good(spec: GoodSpec, g: Generated, elapsed: float) -> Record:
    traj = None if g.trajectory is None else g.trajectory.to_json()
    reason = None if g.reason is None else f"no trajectory: {g.reason}"
    raw = noting_replaced({"text": g.text, "answer_forced": g.answer_forced}, g.replaced)
    return _outcome(spec.key, traj is not None, reason, elapsed, raw, trajectory=traj)


def _judge_probs(
    unit: GroundingUnit[Any], asked: Sequence[Any], requests: Callable[[Backend], list[Request]]
) -> list[dict[str, float] | Exception]:
    """The judge's candidate probabilities for the items ``asked``, their ``requests`` made
    for its backend (one that takes images is shown them), or the exception that says why a
    reply cannot be read (none, and no model loaded, where nothing is asked)."""
    if not asked:
        return []
    first = unit.items[0]
    backend = shared_backend(first.judge, first.judge_options)
    return [
        r if isinstance(r, Exception) else dict(r.candidate_probs or {})
        for r in checked_replies(backend, requests(backend))
    ]


def _run_check(unit: GroundingUnit[CheckSpec], started: float) -> list[Record]:
    right = {s.key for s in unit.items if is_correct(s.trajectory.answer, s.problem)}
    asked = [s for s in unit.items if s.key in right and s.judge is not None]
    verdicts = dict(
        zip(
            (s.key for s in asked),
            _judge_probs(
                unit, asked, lambda _: [accept_request(s.problem, s.trajectory) for s in asked]
            ),
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
            raw = noting_replaced({"model_attempt": e.model_attempt}, e.replaced)
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
    seen: dict[str, bool] = {}

    def requests(backend: Backend) -> list[Request]:
        images = [problem_image(s.problem, backend) for s in asked]
        seen.update((s.key, image is not None) for s, image in zip(asked, images, strict=True))
        return [
            judge_request(s.problem, s.good, s.bad, s.bad_first, image)
            for s, image in zip(asked, images, strict=True)
        ]

    replies = _judge_probs(unit, asked, requests)
    verdicts = dict(zip((s.key for s in asked), replies, strict=True))
    elapsed = (time.perf_counter() - started) / unit.size
    out = []
    for spec in unit.items:
        p_bad = None
        if spec.key in verdicts:
            probs = verdicts[spec.key]
            if isinstance(probs, Exception):  # no reply that can be read: a rerun asks again
                out.append(Record.failed(spec.key, probs, elapsed))
                continue
            p_bad = judge_p_bad(probs, spec.bad_first)
            if p_bad is None:
                none = f"{spec.judge}: the judge put no probability on 1 or 2"
                out.append(Record.failed(spec.key, none, elapsed))
                continue
        why = faults[spec.key]
        saw = {"judge_saw_image": True} if seen.get(spec.key) else {}
        out.append(_outcome(spec.key, why is None, why, elapsed, judge_p_bad=p_bad, **saw))
    return out
