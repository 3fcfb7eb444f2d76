"""How well the sweep's confidences rank and match its answers: calibration and selective
prediction tables with scene-bootstrap intervals (docs/methods.md §4; the numbers behind the
reliability diagrams and risk-coverage curves: :mod:`~clearsight.sweep.numbers.panels`).

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
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.metrics import (
    CALIBRATION_STATS,
    aurc_statistic,
    calibration_statistic,
    cluster_bootstrap,
)
from clearsight.sweep.numbers.cells import FloatArray
from clearsight.sweep.numbers.crossings import SceneBootstrap
from clearsight.sweep.results import RunData, level_label
from clearsight.sweep.signals import signals_for

__all__ = [
    "calibration_table",
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
