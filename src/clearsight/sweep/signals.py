"""The sweep's signals as values: accuracy and the awareness signals paired with it.

A :class:`Signal` says once what every table, crossing, W, headline and figure needs of it: the
name its rows carry, the read-out column of a record its per-record value comes from, the
wordings (and models) it is read in, the floor its crossing falls towards, the column of the
sweep table holding its mean, its label and unit on the page, and the kind of wording the
headline reads it in. :data:`SIGNALS` lists them in the order the tables show them. The
crossings' signal groups, values and floors, the headline's widths and the page's labels
iterate them; some figures, the confidence tables' column pairs and the card's rows still name
their signals.

The signals (docs/methods.md §4): ``accuracy``, the share correct (abstentions count as not
correct); ``internal_conf``, the letter read-out's probability of its best content option
(letter wordings, never a person's); ``verbal_conf``, the stated confidence — a verbalized
wording's parsed number, or a person's slider in any wording; ``abstain``, the share of answers
that pick the abstain option (wordings that offer one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

import pandas as pd

from clearsight.sweep.results import confidence_signal, offers_abstain

__all__ = [
    "ACCURACY",
    "AWARENESS",
    "SIGNALS",
    "Signal",
    "by_name",
    "signal_values",
    "signals_for",
]

#: What a crossing of the signal falls towards: the blank-image accuracy (chance without a
#: blank control), chance 1/k (k the content options), or 1.0 (every answer abstains).
Floor = Literal["blank", "chance", "one"]


@dataclass(frozen=True)
class Signal:
    """One signal of the sweep (see the module docstring).

    ``name``: the ``signal`` its rows carry in every table; ``column``: the column of a run's
    records frame holding its per-record value; ``reads``: whether a (model, wording) yields
    it; ``floor``: what its crossing falls towards (:data:`Floor`); ``mean_column``: the sweep
    table's column holding its mean per condition; ``label`` and ``unit``: how the page names
    it; ``headline_wording``: the kind of wording the headline reads it in (``letter``, the
    model's first letter wording, or ``verbal``, its first verbalized one)."""

    name: str
    column: str
    reads: Callable[[str, str], bool]
    floor: Floor
    mean_column: str
    label: str
    unit: str
    headline_wording: Literal["letter", "verbal"] = "letter"

    @property
    def floor_source(self) -> str:
        """The floor as the crossing tables name it (accuracy names its own per row)."""
        return {"one": "all abstain", "chance": "1/k", "blank": "blank"}[self.floor]


ACCURACY: Final = Signal(
    name="accuracy",
    column="correct",
    reads=lambda model, wording: True,
    floor="blank",
    mean_column="accuracy",
    label="accuracy",
    unit="share correct",
)
#: The awareness signals, in the order the tables and the headline show them.
AWARENESS: Final[tuple[Signal, ...]] = (
    Signal(
        name="internal_conf",
        column="internal_conf",
        reads=lambda model, wording: confidence_signal(model, wording) == "internal_conf",
        floor="chance",
        mean_column="internal_conf",
        label="internal confidence",
        unit="probability",
    ),
    Signal(
        name="verbal_conf",
        column="verbal_conf",
        reads=lambda model, wording: confidence_signal(model, wording) == "verbal_conf",
        floor="chance",
        mean_column="verbal_conf",
        label="verbalized confidence",
        unit="stated probability",
        headline_wording="verbal",
    ),
    Signal(
        name="abstain",
        column="abstained",
        reads=lambda model, wording: offers_abstain(wording),
        floor="one",
        mean_column="abstain_rate",
        label="abstain rate",
        unit="share abstaining",
    ),
)
#: Every signal: the accuracy first, then the awareness signals.
SIGNALS: Final[tuple[Signal, ...]] = (ACCURACY, *AWARENESS)
_BY_NAME: Final = {s.name: s for s in SIGNALS}


def by_name(name: str) -> Signal:
    """The signal called ``name`` (KeyError for another name)."""
    return _BY_NAME[name]


def signals_for(wording: str, model: str = "") -> tuple[str, ...]:
    """The names of the signals a (model, wording) yields, in :data:`SIGNALS`' order: the
    accuracy, its one confidence read-out and, where the wording offers it, the abstain rate."""
    return tuple(s.name for s in SIGNALS if s.reads(model, wording))


def signal_values(records: pd.DataFrame, name: str) -> pd.Series:
    """The per-record value of the signal ``name`` (NaN where the record has none)."""
    return records[by_name(name).column].astype(float)
