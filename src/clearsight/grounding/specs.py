"""The items of trajectory grounding as typed specs (one class per item kind).

Each class is what a worker gets and what the store keeps (:meth:`~clearsight.specs.Spec.to_json`,
keyed by :attr:`~clearsight.specs.Spec.key`); :mod:`clearsight.grounding.protocol` plans and
runs them. A :class:`~clearsight.grounding.problems.problem.Problem` is stored as its
:meth:`~clearsight.grounding.problems.problem.Problem.to_json`, a
:class:`~clearsight.grounding.trajectories.trajectory.Trajectory` as its three texts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

from pydantic import JsonValue

from clearsight.grounding.problems.problem import Problem
from clearsight.grounding.readouts import (
    EditReadouts,
    ElicitReadouts,
    JudgeReadouts,
    TrajectoryReadouts,
    VariationReadouts,
)
from clearsight.grounding.trajectories.trajectory import Template, Trajectory, default_template
from clearsight.specs import OMIT_NONE, Spec

__all__ = [
    "EDIT",
    "ELICIT",
    "JUDGE",
    "TRAJECTORY",
    "VARIATION",
    "EditSpec",
    "ElicitSpec",
    "JudgeSpec",
    "ReadoutRef",
    "TemplateRef",
    "TrajectorySpec",
    "VariationSpec",
    "template_ref",
]

TRAJECTORY = "grounding.trajectory"
EDIT = "grounding.edit"
ELICIT = "grounding.elicit"
JUDGE = "grounding.judge"
VARIATION = "grounding.variation"


@dataclass(frozen=True)
class TemplateRef:
    """The trajectory template an item is planned with, by id and content hash (an edited
    template makes new items)."""

    id: str
    hash: str


@lru_cache(maxsize=8)
def template_ref(template: Template | None = None) -> TemplateRef:
    """A template's reference (default: the canonical template's)."""
    t = template or default_template()
    return TemplateRef(t.id, t.hash)


@dataclass(frozen=True)
class ReadoutRef:
    """The calibration read-out an elicitation is scored with, by name and content hash
    (:mod:`clearsight.grounding.confidence.methods`; an edited read-out makes new items)."""

    name: str
    hash: str


@dataclass(frozen=True)
class TrajectorySpec(Spec):
    """The measured model's own greedy trajectory for a problem, segmented; or, for a problem
    that brings one (``given``), that text cut at its confidence slot."""

    kind: ClassVar[str] = TRAJECTORY
    readout_type = TrajectoryReadouts

    problem: Problem
    model: str
    model_options: Mapping[str, JsonValue]
    template: TemplateRef
    max_new_tokens: int
    given: str | None = field(default=None, metadata=OMIT_NONE)
    """The problem's own trajectory text (``meta["trajectory"]``), read instead of generated."""


@dataclass(frozen=True)
class EditSpec(Spec):
    """One TGS-Bench error injected into a canonical trajectory's vision or reasoning span (the
    generator's edit, checked; the rule's where it fails)."""

    kind: ClassVar[str] = EDIT
    readout_type = EditReadouts

    problem_id: str
    axis: str
    """``vision`` or ``reasoning``."""
    span: str
    """The canonical text of that span."""
    generator: str | None
    """The model that edits (None: the rule only)."""
    generator_options: Mapping[str, JsonValue]
    seed: int


@dataclass(frozen=True)
class JudgeSpec(Spec):
    """A judge's verdict on one TGS-Bench pair: which of the two trajectories holds the
    error."""

    kind: ClassVar[str] = JUDGE
    readout_type = JudgeReadouts

    problem: Problem
    axis: str
    """The axis on which ``bad`` differs from ``good``."""
    good: Trajectory
    bad: Trajectory
    bad_first: bool
    """Whether the bad trajectory is shown as solution 1 (balanced by seed)."""
    judge: str


@dataclass(frozen=True)
class ElicitSpec(Spec):
    """One 11-way confidence read-out at the confidence slot after ``trajectory``, with share
    ``share`` of its rationale tokens hidden from the slot."""

    kind: ClassVar[str] = ELICIT
    readout_type = ElicitReadouts

    problem: Problem
    variant: str
    """``self/rX``, ``bench/good``, ``bench/<axis>/bad``, ``variation/<axis>/alt``,
    ``hesitation/pre`` or ``hesitation/post`` (event k >= 1: ``hesitation/<k>/pre``, ...)."""
    trajectory: Trajectory
    share: float
    seed: int
    """Seed of the masked subset of rationale tokens."""
    model: str
    model_options: Mapping[str, JsonValue]
    template: TemplateRef
    meta: Mapping[str, str]
    """What the report needs about the variant (the answer rule, the hesitation marker)."""
    readout: ReadoutRef | None = field(default=None, metadata=OMIT_NONE)
    """The read-out; None: ``verbalize``, the template's own slot (the items of runs made
    before read-outs were selectable keep their keys)."""


@dataclass(frozen=True)
class VariationSpec(Spec):
    """Sampled alternative ``sample`` of one axis of the model's own ``trajectory`` (paper
    App. A.1.3): the text from that axis's tag on, sampled with ``temperature`` / ``top_p``
    from a generator seeded by ``seed`` (a vision or reasoning sample without an answer is
    continued greedily from the answer tag)."""

    kind: ClassVar[str] = VARIATION
    readout_type = VariationReadouts

    problem: Problem
    axis: str
    sample: int
    trajectory: Trajectory
    model: str
    model_options: Mapping[str, JsonValue]
    template: TemplateRef
    max_new_tokens: int
    answer_tokens: int
    """Tokens of an answer alternative, and of the greedy answer continuing a vision or
    reasoning sample that reached no answer."""
    temperature: float
    top_p: float
    seed: int
