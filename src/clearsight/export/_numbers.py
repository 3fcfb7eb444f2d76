"""A run's summary numbers per model, as its card gives them: each protocol's
:class:`~clearsight.faces.card.Number` (the estimate, its 95 % bootstrap interval, a censoring
bound) with the direction that makes it better, as the board ranks it
(:func:`clearsight.card.board.better`: ``high``, ``low`` or ``zero`` for W, whose best is no
gap between confidence and accuracy). A number the board does not rank, whose bound says it
has no value (``undefined``, ``undetermined``), is not exported either."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.export._source import ExportRun
    from clearsight.faces.card import Number

__all__ = ["Metric", "ModelNumbers", "run_numbers"]


@dataclass(frozen=True)
class Metric:
    """One number of one model: the card's :class:`Number` and its direction ``best``."""

    number: Number
    best: str

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95 % interval, None where either bound is not finite."""
        low, high = self.number.low, self.number.high
        return (low, high) if math.isfinite(low) and math.isfinite(high) else None


@dataclass(frozen=True)
class ModelNumbers:
    """A model's numbers in a run (only those with a finite estimate)."""

    model: str
    metrics: tuple[Metric, ...]


def _valued(number: Number, no_value: tuple[str, ...]) -> bool:
    """Whether ``number`` has a value: a finite estimate, no bound among ``no_value``."""
    return math.isfinite(number.estimate) and number.bound not in no_value


def run_numbers(
    run: ExportRun, n_boot: int, seed: int, model: str | None = None
) -> list[ModelNumbers]:
    """Per model of the run, its card numbers (``n_boot`` draws, ``seed``); only ``model``'s
    where it is given. A run whose section names no model (one model's run: trajectory
    grounding, the probe) takes ``model``, or the one model its cost table names; an InputError
    where neither says which, or where the run has no such model."""
    from clearsight.card.board import _UNRANKED, better

    section = run.face.need(run.face.card, "summary numbers")(run.run_dir, n_boot, seed)
    found = dict(section.by_model)
    if section.numbers:
        models = [] if section.cost is None else sorted(set(section.cost["model"].dropna()))
        name = model or (models[0] if len(models) == 1 else None)
        if name is None:
            raise InputError(
                f"the numbers of {run.run_dir} name no model: give the model they are of "
                "(--model NAME)"
            )
        found[name] = (*found.get(name, ()), *section.numbers)
    if model is not None:
        if model not in found:
            raise InputError(
                f"{run.run_dir} has no numbers of model {model!r}: it has {list(found)}"
            )
        found = {model: found[model]}
    return [
        ModelNumbers(
            name,
            tuple(Metric(n, better(n.key)) for n in numbers if _valued(n, _UNRANKED)),
        )
        for name, numbers in found.items()
    ]
