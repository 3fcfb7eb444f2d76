"""The numbers behind the sweep's confidence figures: the reliability diagrams' bins and the
risk-coverage curves, per model, arm and confidence column (the confidences of
:data:`~clearsight.sweep.signals.CONFIDENCES` in their wordings), scored on the answered items
with a confidence, as the confidence tables (:mod:`~clearsight.sweep.numbers.confidence`) are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from clearsight.metrics import ReliabilityBins, RiskCoverage, ece, reliability_bins, risk_coverage
from clearsight.sweep.numbers.cells import FloatArray
from clearsight.sweep.results import RunData, confidence_signal, is_verbal
from clearsight.sweep.signals import CONFIDENCES

__all__ = [
    "ReliabilityCut",
    "ReliabilityPanel",
    "RiskCut",
    "RiskPanel",
    "asked_panels",
    "confidence_columns",
    "reliability_panels",
    "risk_panels",
]


@dataclass(frozen=True)
class ReliabilityCut:
    """One curve of a reliability diagram: the answered items with a confidence, pooled over
    the clean images and every level of the arm (``level_m`` None) or at one level; ``n``
    items, their ECE and their bins (10 equal-width, right-closed; empty bins kept, NaN).
    A cut without items has ``n`` 0, ``bins`` None and ECE NaN."""

    level_m: float | None
    n: int
    ece: float
    bins: ReliabilityBins | None


@dataclass(frozen=True)
class ReliabilityPanel:
    """The reliability diagram of one model, arm, wording and confidence signal: the pooled
    cut, then the two murkiest levels'. ``has_confidence`` is False where no item of the
    panel has a value of the signal (nothing to draw)."""

    model: str
    arm: str
    wording: str
    signal: str
    has_confidence: bool
    cuts: tuple[ReliabilityCut, ...]


@dataclass(frozen=True)
class RiskCut:
    """One risk-coverage curve: the answered items with a confidence at the clean images
    (``level_m`` None) or at one level; ``curve`` None where there are none (``n`` 0)."""

    level_m: float | None
    n: int
    curve: RiskCoverage | None


@dataclass(frozen=True)
class RiskPanel:
    """The risk-coverage curves of one model, arm, wording and confidence signal at the clean
    images, the middle level and the murkiest level; ``asked`` is False where the model was
    never asked in the wording (no items at all)."""

    model: str
    arm: str
    wording: str
    signal: str
    asked: bool
    cuts: tuple[RiskCut, ...]


def confidence_columns(wordings: list[str], every: bool = False) -> list[tuple[str, str]]:
    """(wording, signal) of each confidence (:data:`~clearsight.sweep.signals.CONFIDENCES`) in
    the main wording of its headline kind among ``wordings`` (those present); ``every``: a
    letter kind's confidence in each letter wording."""
    cols = []
    for signal in CONFIDENCES:
        verbal = signal.headline_wording == "verbal"
        kind = [w for w in wordings if is_verbal(w) == verbal]
        cols += [(w, signal.name) for w in (kind if every and not verbal else kind[:1])]
    return cols


def _answered(sub: pd.DataFrame, signal: str) -> tuple[FloatArray, FloatArray]:
    """Confidence and correctness of the answered items of ``sub`` with a ``signal`` value."""
    scored = sub[(sub["answered"] == 1.0) & sub[signal].notna()]
    return scored[signal].to_numpy(float), scored["correct"].to_numpy(float)


def _reliability_cut(sub: pd.DataFrame, signal: str, level_m: float | None) -> ReliabilityCut:
    """The :class:`ReliabilityCut` of the answered items of ``sub``."""
    conf, correct = _answered(sub, signal)
    if conf.size == 0:
        return ReliabilityCut(level_m, 0, math.nan, None)
    return ReliabilityCut(
        level_m, int(conf.size), ece(conf, correct), reliability_bins(conf, correct)
    )


def reliability_panels(data: RunData, task: str) -> tuple[tuple[ReliabilityPanel, ...], ...]:
    """The reliability diagrams of ``task``: a row per model × arm, in it a panel per
    confidence column — the internal confidence of each letter wording, then the main verbal
    wording's verbalized confidence (:class:`ReliabilityPanel`); no row without a column."""
    cols = confidence_columns(data.wordings(task), every=True)
    rec = data.records[data.records["task"] == task]
    if not cols:
        return ()
    return tuple(
        tuple(
            _reliability_panel(rec, model, arm, wording, signal, data) for wording, signal in cols
        )
        for model in data.models
        for arm in data.arms
    )


def asked_panels(
    rows: Sequence[Sequence[ReliabilityPanel]], records: pd.DataFrame
) -> tuple[tuple[ReliabilityPanel, ...], ...]:
    """The reliability diagrams of the arms each model was shown and the wordings it was asked
    (``records``: the task's): no empty panel for what did not run (a wording asked whose
    replies carry no confidence keeps its panel, which says so)."""
    shown = set(zip(records["model"], records["condition"], strict=True))
    asked = set(zip(records["model"], records["wording"], strict=True))
    kept = (
        tuple(p for p in row if (p.model, p.wording) in asked)
        for row in rows
        if row and (row[0].model, row[0].arm) in shown
    )
    return tuple(row for row in kept if row)


def _reliability_panel(
    rec: pd.DataFrame, model: str, arm: str, wording: str, signal: str, data: RunData
) -> ReliabilityPanel:
    """One panel of :func:`reliability_panels`: the pooled cut (clean and every level of
    ``arm``) and the two murkiest levels' cuts."""
    sub = rec[
        (rec["model"] == model)
        & (rec["wording"] == wording)
        & rec["condition"].isin(["clean", arm])
    ]
    signal = _read_as(model, wording, signal)
    has = bool(sub[signal].notna().any())
    cuts: tuple[ReliabilityCut, ...] = ()
    if has:
        murky = [(v, sub[sub["level_m"] == v]) for v in data.levels[arm][-2:]]
        cuts = (
            _reliability_cut(sub, signal, None),
            *(_reliability_cut(at, signal, v) for v, at in murky),
        )
    return ReliabilityPanel(model, arm, wording, signal, has, cuts)


def _read_as(model: str, wording: str, signal: str) -> str:
    """The signal a confidence column of ``wording`` reads for ``model``: a person's stated
    confidence where the column reads a letter wording's internal confidence."""
    return confidence_signal(model, wording) if signal == "internal_conf" else signal


def _risk_cut(sub: pd.DataFrame, signal: str, level_m: float | None) -> RiskCut:
    """The :class:`RiskCut` of the answered items of ``sub``."""
    conf, correct = _answered(sub, signal)
    curve = risk_coverage(conf, correct) if conf.size else None
    return RiskCut(level_m, int(conf.size), curve)


def risk_panels(data: RunData, task: str) -> tuple[tuple[RiskPanel, ...], ...]:
    """The risk-coverage curves of ``task``: a row per model and arm it was shown, in it a
    panel per confidence column (:func:`confidence_columns`) with the cuts at the clean
    images, the middle level and the murkiest level; no row without a column."""
    cols = confidence_columns(data.wordings(task))
    rec = data.records[data.records["task"] == task]
    shown = set(zip(rec["model"], rec["condition"], strict=True))
    if not cols:
        return ()
    rows = []
    for model in data.models:
        mine = rec[rec["model"] == model]
        for arm in [a for a in data.arms if (model, a) in shown]:
            levels = data.levels[arm]
            picked = (levels[len(levels) // 2], levels[-1])
            row = []
            for wording, signal in cols:
                sub = mine[mine["wording"] == wording]
                read = _read_as(model, wording, signal)
                cuts = [_risk_cut(sub[sub["condition"] == "clean"], read, None)]
                for v in picked:
                    at = sub[(sub["condition"] == arm) & (sub["level_m"] == v)]
                    cuts.append(_risk_cut(at, read, v))
                row.append(RiskPanel(model, arm, wording, read, not sub.empty, tuple(cuts)))
            rows.append(tuple(row))
    return tuple(rows)
