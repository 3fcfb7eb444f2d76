"""A run's section of a card: its numbers (:class:`Number`, each with its 95 % interval and the
text the page shows), what its models cost, its figure and its full report.

Each protocol makes its own section from its analysis (its face's ``card``); the card
(:mod:`clearsight.card`) lays the sections out without knowing whose they are. ``card.json``
holds every number under the key the page shows it by (:class:`NumberJSON`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from clearsight.pages.html import fmt_ci
from clearsight.pages.plots import error_bars, png, pyplot

if TYPE_CHECKING:
    import pandas as pd

    from clearsight.pages.output import Appendix, ReportPaths

__all__ = ["CardSection", "Number", "NumberJSON", "as_float", "ci_number", "number_bars"]


class NumberJSON(TypedDict):
    """A :class:`Number` as card.json holds it: the bounds and the estimate are null where
    they are not finite (no crossing, W left open)."""

    key: str
    estimate: float | None
    low: float | None
    high: float | None
    text: str
    bound: str
    n: int


@dataclass(frozen=True)
class Number:
    """One card number: its key exactly as the page shows it (``fog V*_acc``, ``TGS-self``,
    ``probe accuracy``, ...), the estimate with its 95 % interval, a censoring or bound flag
    where the estimate is one, the text the page shows and the items it rests on."""

    key: str
    estimate: float
    low: float
    high: float
    text: str
    bound: str = ""
    n: int = 0

    def to_json(self) -> NumberJSON:
        """The number as card.json holds it (NaN as null)."""
        return {
            "key": self.key,
            "estimate": _finite(self.estimate),
            "low": _finite(self.low),
            "high": _finite(self.high),
            "text": self.text,
            "bound": self.bound,
            "n": self.n,
        }


def _finite(value: float) -> float | None:
    """A JSON value: a float that is not finite becomes null."""
    return value if math.isfinite(value) else None


def as_float(value: Any) -> float:
    """A float, NaN for what is none (a missing crossing, an empty cell)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out


def ci_number(key: str, est: Any, low: Any, high: Any, n: int, digits: int = 3) -> Number:
    """A plain estimate with its interval, shown as 'est [low, high]'."""
    e, lo, hi = as_float(est), as_float(low), as_float(high)
    return Number(key, e, lo, hi, fmt_ci(e, lo, hi, digits), n=n)


@dataclass(frozen=True)
class CardSection:
    """One run's part of a card: ``title`` (its figure's caption), ``numbers`` (those of the
    run's own model) and ``by_model`` (a run of several models: each model's), ``cost`` (the
    run's cost table, :func:`clearsight.store.run_cost`), ``figure`` (PNG; None: the card
    draws the numbers as bars) and ``write_report`` (writes the run's full report, with the
    appendix the card gives, from the analysis the section was read from)."""

    title: str
    numbers: tuple[Number, ...] = ()
    by_model: Mapping[str, tuple[Number, ...]] = field(default_factory=dict)
    cost: pd.DataFrame | None = None
    figure: bytes | None = None
    write_report: Callable[[Appendix], ReportPaths] | None = None


def number_bars(numbers: Sequence[Number], title: str) -> bytes | None:
    """The numbers as bars with their 95 % intervals (one small panel)."""
    shown = [n for n in numbers if math.isfinite(n.estimate)]
    if not shown:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 3.1))
    est = [n.estimate for n in shown]
    err = error_bars(est, [n.low for n in shown], [n.high for n in shown])
    ax.bar(range(len(shown)), est, yerr=err, capsize=3, color="#4c72b0")
    ax.axhline(0, color="#888", lw=0.8)
    ax.set_xticks(range(len(shown)), [n.key for n in shown], rotation=20, ha="right", fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)
    return png(fig)
