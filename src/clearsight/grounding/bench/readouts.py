"""A TGS-Bench build's read-outs: what each of its four stages' records stores, typed (one
``TypedDict`` per kind of :mod:`clearsight.grounding.bench.specs`, registered there).

Every build item ends as an outcome (:mod:`clearsight.grounding.bench.unit`): ``kept``, and the
rejection ``reason`` (None where kept), beside what the stage read. A stage that rejects before
it reads anything stores the outcome alone, so what it reads is ``NotRequired``.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

__all__ = ["CheckReadouts", "GoodReadouts", "Outcome", "PairEditReadouts", "ValidateReadouts"]


class Outcome(TypedDict):
    """Whether the item was kept, and why not (None: kept)."""

    kept: bool
    reason: str | None


class GoodReadouts(Outcome):
    """A generated good trajectory: its spans (None: the generation was no trajectory)."""

    trajectory: dict[str, str] | None


class CheckReadouts(Outcome):
    """The answer check: the trajectory's answer normalised; where it is right, the good
    trajectory with the gold answer and, where a judge was asked, its P(correct)."""

    answer: str | None
    good: NotRequired[dict[str, str]]
    p_correct: NotRequired[float]


class PairEditReadouts(Outcome):
    """A one-error edit of one axis: the edited text, who made it (``injector``: the rule or the
    generator), the rule, the model's refusal (None: none), and the similarity to the good span."""

    edited: NotRequired[str]
    injector: NotRequired[str]
    rule: NotRequired[str | None]
    model_refused: NotRequired[str | None]
    similarity: NotRequired[float]


class ValidateReadouts(Outcome):
    """A pair's validation: the judge's P(bad) where a judge was asked (None otherwise), and
    ``judge_saw_image`` (true) only where the judge was shown the problem's image."""

    judge_p_bad: float | None
    judge_saw_image: NotRequired[bool]
