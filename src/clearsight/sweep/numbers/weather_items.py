"""The records a calibration under weather reads (:mod:`clearsight.sweep.numbers.recalibrated`):
per model × task × wording its items, each placed in a cell — the clean images, a level of an
arm on the metre axis (fog, water, turbid, and each ImageNet-C corruption whose severities form
a metre grid, :func:`~clearsight.sweep.images.corruptions.metre_grid`), the blank images (the
accuracy's floor only) — with its source photo (the bootstrap's cluster) and, for a letter
wording, the content letters' log-probabilities from the run's stored ``letter_probs``, which
:func:`~clearsight.sweep.results.load_run_data` reads with the records
(``RunData.letters``; :func:`logprobs_of`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.sweep.images.corruptions import metre_grid
from clearsight.sweep.numbers.cells import FloatArray, IntArray
from clearsight.sweep.numbers.pairing import w_pairing_of
from clearsight.sweep.results import RunData, confidence_signal, load_run_data, primary_wording

__all__ = ["LETTER_FLOOR", "Group", "Items", "Scored", "groups", "letter_logprobs"]

#: A letter's probability is floored here before its log is taken (an API's top-k read-out
#: gives a letter outside its top k no probability at all).
LETTER_FLOOR = 1e-12
# The records' columns a group reads (a copy of these only: at the paper's scale the whole
# frame is hundreds of MB).
_READ = (
    *("key", "model", "task", "wording", "condition", "level_m", "severity", "n_options"),
    *("correct", "answered", "internal_conf", "verbal_conf", "cluster"),
)
_QUESTION = ["question.letters", "question.abstain", "question.correct"]
# Each item's row in the run's letter columns (RunData.letters, then corrupted_letters).
_ROW = "letters_row"


def letter_logprobs(run_dir: Path, keys: list[str]) -> tuple[FloatArray, IntArray] | None:
    """:func:`logprobs_of` the records ``keys`` of the run in ``run_dir``."""
    data = load_run_data(run_dir)
    letters = _run_letters(data)
    where = pd.Index(_stacked(data, "key")).get_indexer(keys)
    return None if (where < 0).any() else logprobs_of(letters.iloc[where])


def _stacked(data: RunData, column: str) -> npt.NDArray[Any]:
    """``column`` of the run's records, then of its corrupted ones (the rows of
    :func:`_run_letters`)."""
    parts = [frame[column].to_numpy() for frame in (data.records, data.corrupted) if len(frame)]
    return np.concatenate(parts) if parts else np.array([], dtype=object)


def _run_letters(data: RunData) -> pd.DataFrame:
    """The letter columns of the run's records, then of its corrupted ones, row for row."""
    return pd.concat([data.letters, data.corrupted_letters], ignore_index=True)


def logprobs_of(read: pd.DataFrame) -> tuple[FloatArray, IntArray] | None:
    """The content letters' log-probabilities ``(N, K)`` of the records whose letter columns
    are the rows of ``read`` (:data:`~clearsight.sweep.results.LETTER_COLUMNS`; letters in
    the question's order, the abstain letter left out, each floored at :data:`LETTER_FLOOR`)
    and each record's correct letter's index; None where a record has no letter probabilities
    stored or the records differ in their number of content letters (no one temperature then
    fits them all)."""
    if any(c not in read for c in _QUESTION):
        return None
    frame = read.reset_index(drop=True).astype({c: object for c in _QUESTION})
    n = len(frame)
    probs: FloatArray | None = None
    labels = np.full(n, -1, dtype=np.intp)
    patterns = frame.groupby(["question.letters", "question.abstain"], dropna=False, sort=False)
    for pattern, rows in patterns.indices.items():
        letters, abstain = cast(tuple[object, object], pattern)
        if not isinstance(letters, str):
            return None
        content = [x for x in json.loads(letters) if x != abstain]
        names = [f"letter_probs.{x}" for x in content]
        if any(n not in frame for n in names) or (
            probs is not None and probs.shape[1] != len(names)
        ):
            return None
        probs = np.full((n, len(names)), np.nan) if probs is None else probs
        probs[rows] = frame[names].to_numpy(dtype=np.float64)[rows]
        right = frame["question.correct"].to_numpy()[rows]
        labels[rows] = [content.index(r) if r in content else -1 for r in right]
    if probs is None or not np.isfinite(probs).all() or (labels < 0).any():
        return None
    return np.log(np.clip(probs, LETTER_FLOOR, 1.0)), labels


# ------------------------------------------------------------------------------ the items


@dataclass(frozen=True)
class Items:
    """Items of one group, each in a cell (-1: none; 0: clean; 1..: an arm's level; the
    last: blank, read for the accuracy floor only), with the cluster (source photo) index
    the bootstrap weights."""

    conf: FloatArray
    correct: FloatArray
    answered: npt.NDArray[np.bool_]
    cluster: IntArray
    cell: IntArray
    z: FloatArray | None  # (N, K) content letters' log-probabilities
    label: IntArray | None  # the correct letter's index

    def scored(self, cell: int) -> npt.NDArray[np.bool_]:
        """The answered items with a confidence in ``cell``."""
        return (self.cell == cell) & self.answered & np.isfinite(self.conf)


@dataclass(frozen=True)
class Scored:
    """The items a cell's ECE, Brier and AURC read (answered, with a confidence, in the clean
    cell or an arm's level): their ``index`` among the group's items, ``cell`` and
    ``correct``, and ``order``, the positions of these items sorted by cell, then by
    decreasing confidence (ties in their given order). A non-decreasing map of the confidence
    keeps that order, so the draws reuse it rather than sorting every map of every draw."""

    index: IntArray
    cell: IntArray
    correct: FloatArray
    order: IntArray


@dataclass(frozen=True)
class Group:
    """One model × task × wording: its items, the items of the accuracy its W pairs with,
    chance 1/k (the confidence's floor) and its cells: (arm, level_m) of each, clean first
    (arm '', inf); ``arms``: each arm's cells, clearest level first."""

    model: str
    task: str
    wording: str
    signal: str
    chance: float
    items: Items
    accuracy: Items
    cells: list[tuple[str, float]]
    arms: dict[str, list[int]]

    @property
    def blank(self) -> int:
        """The blank images' cell (accuracy items only)."""
        return len(self.cells)

    @property
    def has_blank(self) -> bool:
        """Whether the accuracy has blank images for its floor (else chance)."""
        return bool((self.accuracy.cell == self.blank).any())

    @cached_property
    def scored(self) -> Scored:
        """The :class:`Scored` items of the group, sorted once for every draw."""
        items = self.items
        keep = (items.cell >= 0) & (items.cell < len(self.cells)) & items.answered
        index = np.flatnonzero(keep & np.isfinite(items.conf))
        cell = items.cell[index]
        order = np.lexsort((-items.conf[index], cell))
        return Scored(index, cell, items.correct[index], order)


def _columns(records: pd.DataFrame, first_row: int = 0) -> pd.DataFrame:
    """The columns of ``records`` a group reads (:data:`_READ`; those it lacks left out) and
    each record's row in the run's letter columns (:func:`_run_letters`), ``first_row`` the
    first record's."""
    rows = np.arange(first_row, first_row + len(records))
    return records[[c for c in _READ if c in records]].assign(**{_ROW: rows})


def _placed_arms(data: RunData, veq: pd.DataFrame) -> pd.DataFrame:
    """The records of every arm on the metre axis with their ``arm`` and ``level_m``: the
    physical arms', and each ImageNet-C corruption's whose severities form a metre grid, its
    severity at its grid level (the corruption's name as the arm)."""
    rec = _columns(data.records)
    physical = rec[rec["condition"].isin(list(data.levels))]
    parts = [physical.assign(arm=physical["condition"])]
    imagenet = rec[rec["condition"] == "imagenet_c"].assign(corruption="fog")
    others = _columns(data.corrupted, len(data.records)).assign(
        corruption=data.corrupted.get("corruption")
    )
    corrupted = pd.concat([imagenet, others], ignore_index=True)
    if veq.empty:
        return pd.concat(parts, ignore_index=True)
    for name, rows in veq.groupby("corruption", sort=False):
        grid = metre_grid(rows)
        mine = corrupted[corrupted["corruption"] == name]
        if grid.levels and len(mine):
            at = dict(zip(grid.severities, grid.levels, strict=True))
            placed = mine.assign(arm=f"imagenet_c {name}", level_m=mine["severity"].map(at))
            parts.append(placed.drop(columns="corruption"))
    return pd.concat(parts, ignore_index=True)


def _cells(placed: pd.DataFrame) -> tuple[list[tuple[str, float]], dict[str, list[int]]]:
    """Every (arm, level) cell of the placed records, clean first, and each arm's cells."""
    cells: list[tuple[str, float]] = [("", math.inf)]
    arms: dict[str, list[int]] = {}
    for arm in pd.unique(placed["arm"]):
        levels = sorted(set(placed.loc[placed["arm"] == arm, "level_m"].dropna()), reverse=True)
        arms[str(arm)] = list(range(len(cells), len(cells) + len(levels)))
        cells += [(str(arm), float(v)) for v in levels]
    return cells, arms


def _items(
    rows: pd.DataFrame, signal: str, clusters: npt.NDArray[Any], read: pd.DataFrame | None
) -> Items:
    """``rows`` (with their ``cell``) as :class:`Items`; with their letters taken from the
    run's letter columns ``read`` (:func:`_run_letters`; None: not read)."""
    letters = None
    if read is not None and len(read):
        letters = logprobs_of(read.iloc[rows[_ROW].to_numpy()])
    return Items(
        conf=rows[signal].to_numpy(dtype=np.float64),
        correct=rows["correct"].to_numpy(dtype=np.float64),
        answered=rows["answered"].to_numpy() == 1.0,
        cluster=np.searchsorted(clusters, rows["cluster"].astype(str).to_numpy()),
        cell=rows["cell"].to_numpy(dtype=np.intp),
        z=None if letters is None else letters[0],
        label=None if letters is None else letters[1],
    )


def _celled(
    data: RunData, veq: pd.DataFrame
) -> tuple[pd.DataFrame, list[tuple[str, float]], dict[str, list[int]]]:
    """The clean, placed and blank records with each one's ``cell``, the cells and each
    arm's cells (:class:`Group`)."""
    placed = _placed_arms(data, veq)
    cells, arms = _cells(placed)
    rec = _columns(data.records)
    clean = rec[rec["condition"] == "clean"].assign(arm="", level_m=math.inf)
    blank = rec[rec["condition"] == "blank"].assign(arm="blank", level_m=math.inf)
    frame = pd.concat([clean, placed, blank], ignore_index=True)
    index = {c: i for i, c in enumerate(cells)} | {("blank", math.inf): len(cells)}
    pairs = zip(frame["arm"].astype(str), frame["level_m"].astype(float), strict=True)
    frame["cell"] = [index.get(p, -1) for p in pairs]
    return frame, cells, arms


def groups(data: RunData, veq: pd.DataFrame) -> Iterator[Group]:
    """Each model × task × wording with clean records, as a :class:`Group`."""
    frame, cells, arms = _celled(data, veq)
    clusters = np.unique(data.records["cluster"].astype(str).to_numpy())
    own = w_pairing_of(data) == "own"
    read: pd.DataFrame | None = None
    for model in data.models:
        for task in data.tasks:
            sub = frame[(frame["model"] == model) & (frame["task"] == task)]
            wordings = [w for w in data.wordings(task) if w in set(sub["wording"])]
            main = primary_wording(wordings, verbal=False) or primary_wording(wordings, True)
            for wording in wordings:
                mine = sub[sub["wording"] == wording]
                signal = confidence_signal(model, wording)
                if not (mine["cell"] == 0).any():
                    continue
                if signal == "internal_conf" and read is None:
                    read = _run_letters(data)
                letters = read if signal == "internal_conf" else None
                k = float(mine["n_options"].median())
                yield Group(
                    model=model,
                    task=task,
                    wording=wording,
                    signal=signal,
                    chance=1.0 / k if k > 0 else math.nan,
                    items=_items(mine, signal, clusters, letters),
                    accuracy=_items(
                        mine if own else sub[sub["wording"] == main], signal, clusters, None
                    ),
                    cells=cells,
                    arms=arms,
                )
