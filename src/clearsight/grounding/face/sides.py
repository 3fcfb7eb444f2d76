"""A grounding run's items side by side in ``clearsight view``, and its other records as
items: the grounding view's (:class:`~clearsight.grounding.view.GroundingRunView`) groups,
matching across runs and pages of own trajectories and judge verdicts.

* **variants** (:func:`variants_of`): the same model's elicitations of one problem, every
  variant, in the curves' order;
* **another run** (:func:`identity_of`, :func:`find_in`): an elicitation matched as
  ``clearsight compare`` matches two runs' elicitations
  (:func:`~clearsight.grounding.compare.elicitation_identity`: problem, variant, read-out),
  found through the view's own listing of its variant (one query of the side index), narrowed
  to its problem, each candidate read by key and kept where its identity matches;
* **an own trajectory's page** (:func:`trajectory_detail`, kind ``grounding.trajectory``): the
  problem and gold, the trajectory span by span (vision, reasoning, answer), the answer read
  from it and whether it is right, the confidence a given trajectory wrote, whether the answer
  was forced;
* **a judge verdict's page** (:func:`judge_detail`, kind ``grounding.judge``): the pair's two
  solutions as the judge was shown them, each a bar with the probability the judge put on it
  holding the error (the bad one marked as the gold, the one it picked as its answer), the edit
  as a word diff of the axis's span, the good and the bad trajectory;
* **a problem's records** (:func:`records_of`): its own trajectory and judge verdicts, a group
  every elicitation of the problem (and each of these records) links to, so each elicitation's
  page reaches the trajectory it was cut from. They are found by one read of the run's records
  of these two kinds (a run holds one of each per problem and axis, far fewer than its
  elicitations), their specs only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from clearsight.faces.viewing import (
    Bar,
    Detail,
    Group,
    Identity,
    Member,
    Query,
    Related,
    RunView,
    Section,
    Span,
    as_groups,
    named,
)
from clearsight.grounding.compare import elicitation_identity
from clearsight.grounding.specs import ELICIT, JUDGE, TRAJECTORY
from clearsight.store import RunStore, StoredRecord
from clearsight.view.index import record_of

__all__ = [
    "find_in",
    "group_of",
    "groups_of",
    "identity_of",
    "judge_detail",
    "other_detail",
    "records_of",
    "trajectory_detail",
    "variants_of",
]

#: Most rows of one variant's listing read to find a problem in it.
_CELL = 10**6


def _spec(run_dir: Path, key: str) -> Mapping[str, Any] | None:
    found = record_of(run_dir, key, ELICIT)
    return None if found is None or found.status != "ok" else found.spec


def variants_of(
    run_dir: Path,
    key: str,
    siblings: Callable[[str, str], Mapping[str, str]],
    order: Callable[[str], Any],
) -> tuple[Related, ...]:
    """The same model's elicitations of the problem of ``key`` (``siblings(model, problem)``:
    variant -> key), in the curves' ``order``; none where the problem has one."""
    spec = _spec(run_dir, key)
    if spec is None:
        return ()
    problem = str(spec["problem"]["id"])
    found = siblings(str(spec["model"]), problem)
    if len(found) < 2:
        return ()
    members = tuple(Member(variant, found[variant]) for variant in sorted(found, key=order))
    return (Related("variants", f"Every variant of problem {problem}", members),)


def identity_of(run_dir: Path, key: str) -> Identity | None:
    """The problem, variant and read-out of elicitation ``key`` (compare's matching)."""
    spec = _spec(run_dir, key)
    return None if spec is None else elicitation_identity(spec)


def find_in(view: RunView, run_dir: Path, identity: Identity) -> str | None:
    """This run's elicitation of another grounding run's ``identity``: among the
    elicitations of its variant, the one of its problem and read-out; None where none."""
    variant = identity[1] if len(identity) == 3 else None
    if variant not in view.filters()["variant"]:
        return None
    for row in view.listing(Query(filters={"variant": str(variant)}, per_page=_CELL)).rows:
        if row.labels["problem"] == str(identity[0]):
            spec = _spec(run_dir, row.key)
            if spec is not None and elicitation_identity(spec) == identity:
                return row.key
    return None


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


#: The same model's elicitations of a problem (model, problem -> variant -> key), and a
#: variant's place on its curve.
Siblings = Callable[[str, str], Mapping[str, str]]
Order = Callable[[str], Any]


def _found(run_dir: Path, key: str, siblings: Siblings, order: Order) -> Iterable[Related]:
    """The item's groups with their members: its problem's variants, then its records (both
    few, so found at once)."""
    yield from variants_of(run_dir, key, siblings, order)
    records = records_of(run_dir, key)
    if records is not None:
        yield records


def groups_of(run_dir: Path, key: str, siblings: Siblings, order: Order) -> tuple[Group, ...]:
    """The groups the page of ``key`` links to (variants, records)."""
    return as_groups(_found(run_dir, key, siblings, order))


def group_of(
    run_dir: Path, key: str, name: str, siblings: Siblings, order: Order
) -> Related | None:
    """The group ``name`` of ``key`` with its members (None: no such group)."""
    return named(_found(run_dir, key, siblings, order), name)
