"""The sweep's signals as values: accuracy and the awareness signals paired with it.

A :class:`Signal` says once what every table, crossing, W, headline and figure needs of it: the
name its rows carry, the read-out column of a record its per-record value comes from, the
wordings (and models) it is read in, the floor its crossing falls towards, the column of the
sweep table holding its mean, its label, short header and unit on the page, its colour, line and
marker in every figure, whether it is a confidence (scored by calibration and selective
prediction), and the kind of wording the headline and the figures read it in. :data:`SIGNALS`
lists them in the order the tables show them. The crossings' signal groups, values and floors,
the sweep and controls tables' means, the headline's widths, the confidence tables' columns,
the figures' curves and the page's labels iterate them.

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
    "CONFIDENCES",
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
    it; ``short``: its column header in the wide tables; ``colour``, ``line`` and ``marker``:
    how every figure draws it (``hollow``: open markers); ``confidence``: a confidence that
    ranks the answers (calibration, selective prediction, reliability diagrams);
    ``headline_wording``: the kind of wording the headline and the figures read it in
    (``letter``, the model's first letter wording, or ``verbal``, its first verbalized one);
    ``every_wording``: the figures draw it in each letter wording that reads it, not only the
    first."""

    name: str
    column: str
    reads: Callable[[str, str], bool]
    floor: Floor
    mean_column: str
    label: str
    short: str
    unit: str
    colour: str
    line: str
    marker: str
    hollow: bool = False
    confidence: bool = False
    headline_wording: Literal["letter", "verbal"] = "letter"
    every_wording: bool = False

    @property
    def rises(self) -> bool:
        """Whether the signal rises towards its floor (the abstain rate towards 1.0) rather
        than falling (accuracy and confidences): the side its clean value must start on for
        a crossing to mean anything was lost."""
        return self.floor == "one"

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
    short="acc",
    unit="share correct",
    colour="#000000",  # colour-blind-safe Okabe–Ito hues, the same in every figure
    line="-",
    marker="o",
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
        short="internal conf",
        unit="probability",
        colour="#0072B2",
        line="-",
        marker="^",
        confidence=True,
    ),
    Signal(
        name="verbal_conf",
        column="verbal_conf",
        reads=lambda model, wording: confidence_signal(model, wording) == "verbal_conf",
        floor="chance",
        mean_column="verbal_conf",
        label="verbalized confidence",
        short="verbal conf",
        unit="stated probability",
        colour="#E69F00",
        line="--",
        marker="s",
        hollow=True,
        confidence=True,
        headline_wording="verbal",
    ),
    Signal(
        name="abstain",
        column="abstained",
        reads=lambda model, wording: offers_abstain(wording),
        floor="one",
        mean_column="abstain_rate",
        label="abstain rate",
        short="abstain",
        unit="share abstaining",
        colour="#009E73",
        line="-",
        marker="D",
        every_wording=True,
    ),
)
#: Every signal: the accuracy first, then the awareness signals.
SIGNALS: Final[tuple[Signal, ...]] = (ACCURACY, *AWARENESS)
#: The confidences: the awareness signals that rank the answers.
CONFIDENCES: Final[tuple[Signal, ...]] = tuple(s for s in AWARENESS if s.confidence)
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
