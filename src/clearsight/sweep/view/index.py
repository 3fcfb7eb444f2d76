"""The sweep's side index for ``clearsight view`` (:class:`~clearsight.store.IndexDesign`):
one row per ok sweep record the analysis reads (ImageNet-C corruptions other than fog left
out, as :func:`~clearsight.sweep.results.fog_only` leaves them out), with the listing's columns
typed as the analysis types them; the read of a listing over it (:func:`listing_select`) and the
analysis's curve points from its tally of counts and sums per cell (:func:`curve_cells`).

A curve point's value is the analysis's point estimate (:func:`~clearsight.sweep.numbers.
crossings.scene_bootstrap` with every photo weighted once: the cell's sum over its count, the
mean of the signal over the records that have a value of it) and its ``n`` that count; curves
come in the analysis's order: (model, task, wording) groups as they first appear in the run, each
group's signals in :data:`~clearsight.sweep.signals.SIGNALS`' order, each curve's columns as
:mod:`~clearsight.sweep.numbers.cells` orders them (clean, each arm's levels clearest first,
blank, shuffled, ImageNet-C severities).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.faces.viewing import Query
from clearsight.metrics import bin_edges
from clearsight.store import IndexDesign, Order, Range, Select, Value
from clearsight.sweep.numbers.cells import ordered_columns
from clearsight.sweep.results import ARMS, confidence_signal, fog_only
from clearsight.sweep.signals import SIGNALS, by_name, signals_for
from clearsight.sweep.specs import PROTOCOL

__all__ = ["BINS", "CELLS", "SWEEP_INDEX", "Cell", "curve_cells", "listing_select"]

#: The store's columns a row is made of.
_READ = (
    "key",
    "scene.id",
    "model",
    "task",
    "wording",
    "condition",
    "level_m",
    "severity",
    "corruption",
    "answer",
    "question.correct",
    "correct",
    "abstained",
    "internal_conf",
    "verbal_conf",
)
#: The index's columns (after the item id) and their SQL types.
_COLUMNS = {
    "key": "TEXT",
    "scene": "TEXT",
    "model": "TEXT",
    "task": "TEXT",
    "wording": "TEXT",
    "condition": "TEXT",
    "level_m": "REAL",
    "severity": "INTEGER",
    "answer": "TEXT",
    "gold": "TEXT",
    "correct": "REAL",
    "abstained": "REAL",
    "internal_conf": "REAL",
    "verbal_conf": "REAL",
    "confidence": "REAL",
    "x": "REAL",
    "bin": "INTEGER",
}
#: The reliability diagrams' bins (:func:`~clearsight.metrics.reliability_bins`): equal-width,
#: right-closed ``(lo, hi]``, 0 in the first; their labels, the ``bin`` filter's values.
_EDGES = bin_edges(10)
BINS = tuple(f"{lo:.1f}-{hi:.1f}" for lo, hi in itertools.pairwise(_EDGES))


def _flag(frame: pd.DataFrame, column: str) -> pd.Series:
    """A read-out flag as 1.0 (True) or 0.0 (False, None, absent), as the analysis reads it."""
    values = frame[column] if column in frame else pd.Series(False, index=frame.index)
    return values.astype(object).isin([True]).astype(float)


def _number(frame: pd.DataFrame, column: str) -> pd.Series:
    values = frame[column] if column in frame else pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(values, errors="coerce").astype(float)


def _text(frame: pd.DataFrame, column: str) -> pd.Series:
    return frame[column].astype(object) if column in frame else pd.Series(None, index=frame.index)


def _rows(frame: pd.DataFrame) -> pd.DataFrame:
    """A chunk of ok sweep records as the index's rows (module docstring)."""
    frame = fog_only(frame)
    out = pd.DataFrame({"id": frame["id"]}, index=frame.index)
    names = ("key", "scene.id", "model", "task", "wording", "condition", "answer")
    for name in (*names, "question.correct"):
        out[name] = _text(frame, name)
    out = out.rename(columns={"scene.id": "scene", "question.correct": "gold"})
    for name in ("correct", "abstained"):
        out[name] = _flag(frame, name)
    for name in ("level_m", "severity", "internal_conf", "verbal_conf"):
        out[name] = _number(frame, name)
    pairs = zip(out["model"].astype(str), out["wording"].astype(str), strict=True)
    verbal = np.array([confidence_signal(m, w) == "verbal_conf" for m, w in pairs], dtype=bool)
    out["confidence"] = np.where(verbal, out["verbal_conf"], out["internal_conf"])
    condition = out["condition"].astype(str)
    arm, ic = condition.isin(ARMS).to_numpy(), (condition == "imagenet_c").to_numpy()
    out["x"] = np.where(arm, out["level_m"], np.where(ic, out["severity"], 0.0))
    out["bin"] = _bin(out)
    return out


def _bin(rows: pd.DataFrame) -> npt.NDArray[np.int64]:
    """Each row's reliability bin (1 to 10, as :func:`~clearsight.metrics.reliability_bins`
    bins it: ``(lo, hi]``, 0 in the first) where the reliability diagrams score it — answered
    (an answer, not abstained) with a confidence — else 0."""
    confidence = rows["confidence"].to_numpy(float)
    scored = rows["answer"].notna().to_numpy() & (rows["abstained"] == 0.0).to_numpy()
    scored &= ~np.isnan(confidence)
    found = np.searchsorted(_EDGES, np.nan_to_num(confidence), side="left")
    return np.where(scored, np.clip(found, 1, len(BINS)), 0).astype(np.int64)


SWEEP_INDEX = IndexDesign(
    kind=PROTOCOL,
    read=_READ,
    columns=_COLUMNS,
    indexes=(
        ("model", "condition", "level_m"),
        ("condition", "level_m"),
        ("confidence",),
        ("scene", "condition", "level_m"),  # the side-by-side pages: one scene's cell
    ),
    rows=_rows,
    tally=("model", "task", "wording", "condition", "x", "bin"),
    tallied=tuple(s.column for s in SIGNALS),
)

#: The rows each outcome selects: the read-out flags equal to these values.
_OUTCOMES: dict[str, dict[str, Value]] = {
    "": {},
    "correct": {"correct": 1.0},
    "wrong": {"correct": 0.0, "abstained": 0.0},
    "abstained": {"abstained": 1.0},
    "confidently-wrong": {"correct": 0.0, "abstained": 0.0},
}
_ORDER = {
    "": (),
    "desc": (Order("confidence", descending=True),),
    "asc": (Order("confidence"),),
}


def listing_select(query: Query, levels: Mapping[str, float], columns: tuple[str, ...]) -> Select:
    """The read of ``columns`` of the index's rows ``query`` selects, one page of them
    (``levels``: a level's label -> metres); filter values are checked by the caller. A
    ``scene`` filter (one scene's rows: the side-by-side pages' own, never a user's) is read
    by SQL too."""
    filters = query.filters
    equal: dict[str, Value] = {
        n: filters[n] for n in ("scene", "model", "task", "wording", "condition") if n in filters
    }
    if "level" in filters:
        equal["level_m"] = levels[filters["level"]]
    if "severity" in filters:
        equal["severity"] = int(filters["severity"])
    if "bin" in filters:
        equal["bin"] = BINS.index(filters["bin"]) + 1
    among = {"condition": ("clean", filters["pooled"])} if "pooled" in filters else {}
    confident = query.outcome == "confidently-wrong"
    return Select(
        columns,
        equal=equal | _OUTCOMES[query.outcome],
        among=among,
        within={"confidence": Range(low=query.threshold, open_low=True)} if confident else {},
        present=(by_name(filters["signal"]).column,) if "signal" in filters else (),
        order=_ORDER[query.sort],
        limit=query.per_page,
        offset=query.page * query.per_page,
    )


#: Each group × column's first item id, count and sum of every signal: the index's tally.
CELLS = Select(SWEEP_INDEX.names("tally"), table="tally")


class Cell(NamedTuple):
    """One curve point of the analysis: its curve, x (metres, severity or 0.0), the point
    estimate and the number of records behind it (the fields
    :func:`~clearsight.sweep.view.rows.point_of` reads)."""

    model: str
    task: str
    wording: str
    signal: str
    condition: str
    x: float
    estimate: float
    n: int


def curve_cells(tally: Iterable[Sequence[Any]]) -> Iterator[Cell]:
    """The analysis's curve points of the index's records, from the rows of its tally that
    :data:`CELLS` reads (module docstring): a small table, whatever the run's size."""
    found: dict[tuple[str, str, str], int] = {}
    cells: dict[tuple[str, str, str, str, float], tuple[float, ...]] = {}
    for model, task, wording, condition, x, _, first, *counted in tally:  # summed over bins
        group, zero = (model, task, wording), (0.0,) * len(counted)
        found[group] = min(found.get(group, first), first)
        key = (*group, condition, float(x))
        cells[key] = tuple(a + b for a, b in zip(cells.get(key, zero), counted, strict=True))
    present = {(c, x) for *_, c, x in cells}
    levels = {
        arm: tuple(sorted((x for c, x in present if c == arm), reverse=True))
        for arm in ARMS
        if any(c == arm for c, _ in present)
    }
    columns = ordered_columns(present, levels)
    names = [s.name for s in SIGNALS]
    for group in sorted(found, key=found.__getitem__):
        for signal in signals_for(group[2], group[0]):
            at = 2 * names.index(signal)
            for condition, x in columns:
                sums = cells.get((*group, condition, x))
                if sums is not None and sums[at] > 0:
                    n = int(sums[at])
                    yield Cell(*group, signal, condition, x, sums[at + 1] / n, n)
