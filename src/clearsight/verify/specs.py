"""What a re-ask is: one finished item asked again, stored as its own item kind beside it.

A re-ask (:class:`ReaskSpec`, kind ``verify``) names the item it repeats by key (``of``, of
kind ``of_kind``), the model spec and options it was asked with, the size of the batches it
went in and the seed that drew the sample and shuffled it. Its key is the content hash of
those, so a re-ask never overwrites the record it repeats (nor another verify's), and a
``clearsight verify`` with the same settings finds its finished re-asks and asks only the rest.
The typed item it repeats travels with it to the worker (``item``) but is not stored: the
original item is in the run under ``of``. Two answers differ beyond :data:`DEFAULT_TOLERANCE`
unless a verify states another. A re-ask's read-outs are those of the kind it repeats
(:class:`ReaskReadouts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, TypedDict

from clearsight.specs import Options, Spec

__all__ = ["DEFAULT_TOLERANCE", "VERIFY_KIND", "ReaskReadouts", "ReaskSpec"]

#: The item kind of a re-ask.
VERIFY_KIND = "verify"

#: The |Δ| of a probability, a confidence or a JSD beyond which two answers to an item differ,
#: by default (stated with every result; ``--tolerance``).
DEFAULT_TOLERANCE = 1e-4


class ReaskReadouts(TypedDict, total=False):
    """A re-ask's read-outs: those of the kind it repeats, as that kind stores them — a sweep
    answer's (:class:`~clearsight.sweep.readouts.SweepReadouts`) or an elicitation's
    (:class:`~clearsight.grounding.readouts.ElicitReadouts`), the kinds verify re-asks
    (:mod:`clearsight.verify.kinds`). Which keys a record holds follows ``of_kind``, so none is
    required here: the check is that a re-ask holds no key those kinds do not store."""

    chance: float
    n_options: int
    answer: str | None
    internal_conf: float | None
    verbal_conf: float | None
    letter_mass: float | None
    verbal_parsed: bool
    letter_probs: dict[str, float]
    abstained: bool
    correct: bool
    expected: float
    probs: list[float]
    mass: float
    readout: str
    distributions: dict[str, list[float]]
    confidences: dict[str, float]
    coverage: float


@dataclass(frozen=True)
class ReaskSpec(Spec):
    """One finished item asked again (see the module docstring)."""

    kind: ClassVar[str] = VERIFY_KIND
    readout_type = ReaskReadouts
    parts: ClassVar[tuple[str, ...]] = ("model_options",)
    stored: ClassVar[tuple[str, ...] | None] = (
        "of",
        "of_kind",
        "model",
        "model_options",
        "batch_size",
        "seed",
    )

    of: str
    """Key of the item asked again."""
    of_kind: str
    """Its item kind (``sweep``)."""
    model: str
    model_options: Options
    batch_size: int
    """Requests per call to the model (the batch this re-ask went in)."""
    seed: int
    """Seed of the sample and of the shuffled order the re-asks went in."""
    item: Any = field(default=None, compare=False)
    """The typed item asked again (not stored)."""
