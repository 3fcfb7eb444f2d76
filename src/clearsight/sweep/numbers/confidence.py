"""How well the sweep's confidences rank and match its answers: calibration and selective
prediction tables with scene-bootstrap intervals, and the numbers behind the reliability
diagrams and risk-coverage curves (docs/methods.md §4).

Every number is scored on the *answered* items (an abstention has no chosen option to be right
or wrong about): the confidence is the belief in the chosen option and ``correct`` whether that
option is right. Cells (:func:`_confidence_cells`): model × wording × arm × level — clean, each
sweep level, ``pooled`` (clean + every level of the arm) and ``murkiest`` (the two murkiest
levels) — with the wording's confidence signal (internal for letter wordings, verbalized for
verbal ones; a person's stated confidence, the slider, in any wording:
:func:`~clearsight.sweep.results.confidence_signal`). Intervals resample source photos
(``cluster``) with the draws, level and seed of the run's
:class:`~clearsight.sweep.numbers.crossings.SceneBootstrap`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.metrics import (
    CALIBRATION_STATS,
    ReliabilityBins,
    RiskCoverage,
    aurc_statistic,
    calibration_statistic,
    cluster_bootstrap,
    ece,
    reliability_bins,
    risk_coverage,
)
from clearsight.sweep.numbers.cells import FloatArray
from clearsight.sweep.numbers.crossings import SceneBootstrap
from clearsight.sweep.results import (
    RunData,
    confidence_signal,
    is_verbal,
    level_label,
    primary_wording,
)
from clearsight.sweep.signals import signals_for

__all__ = [
    "ReliabilityCut",
    "ReliabilityPanel",
    "RiskCut",
    "RiskPanel",
    "calibration_table",
    "confidence_columns",
    "reliability_panels",
    "risk_panels",
    "selective_table",
]

_SELECTIVE_STATS = ("aurc", "e_aurc")


def _scored(sub: pd.DataFrame, signal: str) -> tuple[FloatArray, FloatArray, npt.NDArray[Any]]:
    """Confidence, correctness and bootstrap cluster (source photo) of the answered items of
    ``sub`` with a finite ``signal`` (an abstention has no chosen option to be right or wrong
    about)."""
    conf = sub[signal].to_numpy(dtype=float)
    keep = np.isfinite(conf) & (sub["answered"].to_numpy() == 1.0)
    clusters = sub["cluster"].to_numpy()
    return conf[keep], sub["correct"].to_numpy(dtype=float)[keep], clusters[keep]


def _with_intervals(
    names: Sequence[str], stat: Any, scenes: npt.NDArray[Any], boot: SceneBootstrap
) -> dict[str, float]:
    """Each statistic of ``stat`` with its scene-bootstrap interval (``<name>_low/_high``;
    the bootstrap's draws, level and seed)."""
    found = cluster_bootstrap(stat, scenes, n_boot=boot.n_boot, level=boot.level, seed=boot.seed)
    row: dict[str, float] = {}
    for k, name in enumerate(names):
        row[name] = float(found.estimate[k])
        row[f"{name}_low"], row[f"{name}_high"] = float(found.low[k]), float(found.high[k])
    return row


def _nan_row(names: Sequence[str], extra: Sequence[str] = ()) -> dict[str, float]:
    bounds = [f"{k}_{end}" for k in names for end in ("low", "high")]
    return dict.fromkeys([*extra, *names, *bounds], math.nan)


def _calibration_row(sub: pd.DataFrame, signal: str, boot: SceneBootstrap) -> dict[str, float]:
    """ECE, MCE, Brier, AUROC of one confidence signal on the answered items of ``sub``, each
    with its scene-bootstrap interval."""
    c, y, scenes = _scored(sub, signal)
    row = {"n": float(len(sub)), "n_scored": float(c.size)}
    if c.size == 0:
        return row | _nan_row(CALIBRATION_STATS, ("mean_conf", "accuracy"))
    row |= {"mean_conf": float(c.mean()), "accuracy": float(y.mean())}
    stat = calibration_statistic(c, y, scenes)
    return row | _with_intervals(CALIBRATION_STATS, stat, scenes, boot)


def _selective_row(sub: pd.DataFrame, signal: str, boot: SceneBootstrap) -> dict[str, float]:
    """AURC and E-AURC of one confidence signal gating the answered items of ``sub``, with
    scene-bootstrap intervals."""
    c, y, scenes = _scored(sub, signal)
    row = {"n": float(len(sub)), "n_scored": float(c.size)}
    if c.size == 0:
        return row | _nan_row(_SELECTIVE_STATS)
    stat = aurc_statistic(c, y, scenes)
    return row | _with_intervals(_SELECTIVE_STATS, stat, scenes, boot)


class CellLabels(TypedDict):
    """What names a cell of a confidence table: the first columns of its row. ``level`` is
    'clean', a level's label in metres, 'pooled' or 'murkiest (...)'; ``level_m`` the level
    in metres (inf: clean; NaN: pooled or murkiest)."""

    model: str
    arm: str
    wording: str
    signal: str
    level: str
    level_m: float


def _confidence_cells(data: RunData, task: str) -> Iterator[tuple[CellLabels, str, pd.DataFrame]]:
    """(labels, signal, records) of each cell a confidence table reports: model × wording ×
    arm × level — clean, each sweep level, ``pooled`` (clean + every level of the arm) and
    ``murkiest`` (the two murkiest levels) — with the wording's confidence signal."""
    rec = data.records[data.records["task"] == task]
    for model in data.models:
        for wording in data.wordings(task):
            signal = signals_for(wording, model)[1]
            sub_w = rec[(rec["model"] == model) & (rec["wording"] == wording)]
            if sub_w.empty:
                continue
            clean = sub_w[sub_w["condition"] == "clean"]
            for arm, levels in data.levels.items():
                arm_rows = sub_w[sub_w["condition"] == arm]
                cells: list[tuple[str, float, pd.DataFrame]] = [("clean", math.inf, clean)]
                cells += [
                    (f"{level_label(v)} m", v, arm_rows[arm_rows["level_m"] == v]) for v in levels
                ]
                cells.append(("pooled", math.nan, pd.concat([clean, arm_rows])))
                murky = arm_rows[arm_rows["level_m"].isin(levels[-2:])]
                label = "murkiest (" + " + ".join(level_label(v) for v in levels[-2:]) + " m)"
                cells.append((label, math.nan, murky))
                for name, v, sub in cells:
                    if not sub.empty:
                        labels = CellLabels(
                            model=model,
                            arm=arm,
                            wording=wording,
                            signal=signal,
                            level=name,
                            level_m=v,
                        )
                        yield labels, signal, sub


def calibration_table(data: RunData, task: str, boot: SceneBootstrap) -> pd.DataFrame:
    """ECE, MCE, Brier and AUROC per model × arm × wording × level (and pooled), for ``task``,
    each with a scene-bootstrap interval (cells: :func:`_confidence_cells`).

    Scored on *answered* items (abstentions have no content answer to be right or wrong about;
    ``n_scored`` says how many items that leaves): the confidence is the belief in the chosen
    option and ``correct`` whether that option is right.
    """
    rows = [
        labels | _calibration_row(sub, signal, boot)
        for labels, signal, sub in _confidence_cells(data, task)
    ]
    return pd.DataFrame(rows)


def selective_table(data: RunData, task: str, boot: SceneBootstrap) -> pd.DataFrame:
    """Selective prediction per model × arm × wording × level (and pooled), for ``task``: AURC
    and E-AURC (:func:`~clearsight.metrics.risk_coverage`) of the wording's confidence gating
    its answered items, each with a scene-bootstrap interval. Lower is better; E-AURC is 0 for
    a confidence that ranks every right answer above every wrong one."""
    rows = [
        labels | _selective_row(sub, signal, boot)
        for labels, signal, sub in _confidence_cells(data, task)
    ]
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ figures' numbers


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


def confidence_columns(wordings: list[str]) -> list[tuple[str, str]]:
    """(wording, signal) of the internal confidence of the main letter wording and the
    verbalized confidence of the main verbal wording (those present)."""
    letter = primary_wording(wordings, verbal=False)
    verbal = primary_wording(wordings, verbal=True)
    cols = [(letter, "internal_conf")] if letter is not None else []
    return cols + ([(verbal, "verbal_conf")] if verbal is not None else [])


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
    wordings = data.wordings(task)
    cols = [(w, "internal_conf") for w in wordings if not is_verbal(w)]
    verbal = primary_wording(wordings, verbal=True)
    if verbal is not None:
        cols.append((verbal, "verbal_conf"))
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
