"""A grounding run's other records as items of ``clearsight view``: the measured model's own
trajectories (kind ``grounding.trajectory``) and the judge's verdicts on TGS-Bench pairs (kind
``grounding.judge``), beside the elicitations.

* **an own trajectory's page** (:func:`trajectory_detail`): the problem and gold, the trajectory
  span by span (vision, reasoning, answer), the answer read from it and whether it is right,
  the confidence a given trajectory wrote, whether the answer was forced;
* **a judge verdict's page** (:func:`judge_detail`): the pair's two solutions as the judge was
  shown them, each a bar with the probability the judge put on it holding the error (the bad
  one marked as the gold, the one it picked as its answer), the edit as a word diff of the
  axis's span, the good and the bad trajectory;
* **a problem's records** (:func:`records_of`): its own trajectory and judge verdicts, a
  :class:`~clearsight.faces.viewing.Related` group every elicitation of the problem (and each
  of these records) links to, so each elicitation's page reaches the trajectory it was cut
  from. They are found by one read of the run's records of these two kinds (a run holds one
  of each per problem and axis, far fewer than its elicitations), their specs only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from clearsight.faces.viewing import Bar, Detail, Member, Related, Section, Span
from clearsight.grounding.specs import ELICIT, JUDGE, TRAJECTORY
from clearsight.store import RunStore, StoredRecord

__all__ = ["judge_detail", "other_detail", "records_of", "trajectory_detail"]

#: The parts of a trajectory, in order.
_PARTS = ("vision", "reasoning", "answer")


def _spans(trajectory: Mapping[str, Any] | None) -> tuple[Span, ...]:
    trajectory = trajectory or {}
    return tuple(Span(str(trajectory.get(part, "")), part) for part in _PARTS)


def _text(value: Any) -> str:
    return "" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _problem_labels(spec: Mapping[str, Any]) -> dict[str, str]:
    problem = spec.get("problem") or {}
    return {
        "problem": str(problem.get("id", "")),
        "benchmark": str(problem.get("benchmark", "")),
        "gold": str(problem.get("gold", "")),
    }


def trajectory_detail(found: StoredRecord) -> Detail:
    """An own trajectory's page (module docstring)."""
    spec, out = found.spec, found.readouts
    labels = {"record": "own trajectory", "model": str(spec.get("model", ""))}
    labels |= _problem_labels(spec)
    names = ("answer", "correct", "written_confidence", "answer_forced")
    return Detail(
        key=found.key,
        labels=labels,
        prompt=str((spec.get("problem") or {}).get("question", "")),
        bars=(),
        values={name: _text(out.get(name)) for name in names},
        raw_text=json.dumps(found.raw, indent=1, default=str),
        sections=(Section("Own trajectory", _spans(out.get("trajectory"))),),
        image=False,
    )


def judge_detail(found: StoredRecord, diff: Callable[[str, str], tuple[Span, ...]]) -> Detail:
    """A judge verdict's page (module docstring); ``diff``: the word diff of two texts."""
    spec, out = found.spec, found.readouts
    axis = str(out.get("axis") or spec.get("axis", ""))
    p_bad = out.get("p_bad")
    sides = ("bad", "good") if spec.get("bad_first") else ("good", "bad")
    bars = tuple(
        Bar(
            f"solution {n} ({side})",
            None if p_bad is None else float(p_bad if side == "bad" else 1.0 - p_bad),
            out.get("picked_bad") == (side == "bad"),
            side == "bad",
        )
        for n, side in enumerate(sides, start=1)
    )
    good, bad = spec.get("good") or {}, spec.get("bad") or {}
    labels = {"record": "judge verdict", "judge": str(spec.get("judge", "")), "axis": axis}
    labels |= _problem_labels(spec)
    sections = (
        Section(
            f"The edit of the {axis} span (good -> bad)",
            diff(good.get(axis, ""), bad.get(axis, "")),
        ),
        Section("Good trajectory", _spans(good)),
        Section("Bad trajectory", _spans(bad)),
    )
    return Detail(
        key=found.key,
        labels=labels,
        prompt=str((spec.get("problem") or {}).get("question", "")),
        bars=bars,
        values={name: _text(out.get(name)) for name in ("p_bad", "picked_bad")},
        raw_text=json.dumps(found.raw, indent=1, default=str),
        sections=sections,
        image=False,
    )


def other_detail(
    run_dir: Path, key: str, diff: Callable[[str, str], tuple[Span, ...]]
) -> Detail | None:
    """The page of ``key`` where it is an ok own trajectory or judge verdict (None else)."""
    with RunStore.open(run_dir, read_only=True) as store:
        found = store.record(key)
    if found is None or found.status != "ok":
        return None
    if found.protocol == TRAJECTORY:
        return trajectory_detail(found)
    return judge_detail(found, diff) if found.protocol == JUDGE else None


def _owner(store: RunStore, key: str) -> StoredRecord | None:
    """The record of ``key`` where it is an elicitation, an own trajectory or a verdict."""
    found = store.record(key)
    return found if found is not None and found.protocol in (ELICIT, TRAJECTORY, JUDGE) else None


def records_of(run_dir: Path, key: str) -> Related | None:
    """The own trajectory and judge verdicts of the problem of ``key`` (module docstring),
    ``key`` first where it is an elicitation; None where the problem has none."""
    with RunStore.open(run_dir, read_only=True) as store:
        own = _owner(store, key)
        if own is None:
            return None
        problem, model = str(own.spec["problem"]["id"]), str(own.spec.get("model", ""))
        members = [
            Member("own trajectory", r.key)
            for r in store.iter_records("ok", kind=TRAJECTORY, raw=False)
            if str(r.spec["problem"]["id"]) == problem and str(r.spec.get("model", "")) == model
        ]
        members += [
            Member(f"judge · {r.readouts.get('axis', '')}", r.key)
            for r in store.iter_records("ok", kind=JUDGE, raw=False)
            if str(r.spec["problem"]["id"]) == problem
        ]
    if not members:
        return None
    if own.protocol == ELICIT:
        members.insert(0, Member(f"elicitation · {own.spec['variant']}", key))
    title = f"Problem {problem}: its own trajectory and judge verdicts"
    return Related("records", title, tuple(members))
