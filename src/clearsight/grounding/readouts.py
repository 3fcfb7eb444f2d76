"""Trajectory grounding's read-outs: what each item kind's record stores beside its raw output,
typed (one ``TypedDict`` per kind of :mod:`clearsight.grounding.specs`, registered there as its
spec's ``readout_type``).

* an own trajectory (``grounding.trajectory``): :class:`TrajectoryReadouts`, made by
  :func:`~clearsight.grounding.unit.trajectory_readouts`;
* a TGS-Bench edit (``grounding.edit``): :class:`EditReadouts`;
* the judge's verdict on a pair (``grounding.judge``): :class:`JudgeReadouts`;
* an elicited confidence (``grounding.elicit``): :class:`ElicitReadouts`, made by
  :meth:`~clearsight.grounding.confidence.methods.ReadoutResult.to_readouts`;
* a sampled content-variation alternative (``grounding.variation``): :class:`VariationReadouts`.

The keys are the ones these records were always stored with; a key that runs made before it
existed lack is ``NotRequired``, so those runs still read.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

__all__ = [
    "EditReadouts",
    "ElicitReadouts",
    "JudgeReadouts",
    "TrajectoryReadouts",
    "VariationReadouts",
]


class TrajectoryReadouts(TypedDict):
    """An own trajectory: its spans (:meth:`~clearsight.grounding.trajectories.trajectory.
    Trajectory.to_json`), its answer normalised (None: none read) and whether it is right, the
    confidence a given trajectory wrote (None for a generated one) and whether the answer was
    forced."""

    trajectory: dict[str, str]
    answer: str | None
    correct: bool
    written_confidence: float | None
    answer_forced: bool


class EditReadouts(TypedDict):
    """A TGS-Bench edit: the span as edited."""

    edited: str


class JudgeReadouts(TypedDict):
    """The judge's verdict on a pair: the probability it puts on the bad side, whether that is
    over one half, and the pair's axis; ``saw_image`` (true) only where the judge was shown the
    problem's image (absent: it read the text only)."""

    p_bad: float
    picked_bad: bool
    axis: str
    saw_image: NotRequired[bool]


class ElicitReadouts(TypedDict):
    """An elicited confidence: the read-out's confidence (``expected``), its first slot's 11-way
    distribution and mass, and — since read-outs became selectable — the read-out's name, every
    slot's distribution and confidence, and the mass on the candidates (``coverage``)."""

    expected: float
    probs: list[float]
    mass: float
    readout: NotRequired[str]
    distributions: NotRequired[dict[str, list[float]]]
    confidences: NotRequired[dict[str, float]]
    coverage: NotRequired[float]


class VariationReadouts(TypedDict):
    """A sampled alternative of one axis: the axis and sample number, whether it was accepted
    (with the alternative trajectory) or why not, and whether its answer was forced (left out
    by runs made before it was stored)."""

    axis: str
    sample: int
    accepted: bool
    reason: str | None
    alternative: dict[str, Any] | None
    answer_forced: NotRequired[bool]
