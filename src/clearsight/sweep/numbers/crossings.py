"""The sweep's headline numbers: curves, crossing visibilities V* and blind-spot widths W, each
with a 95 % interval from one seeded scene bootstrap (docs/methods.md §4).

:func:`scene_bootstrap` resamples *source photos* with replacement — the scenes cut from one photo
(its crops) form one cluster, a scene with no known photo (a COCO image, a user scene) its own —
and gives, for every model
× task × wording, every signal's mean at every condition (clean, each fog/water level, blank,
shuffled, ImageNet-C severities) with its percentile interval, and every crossing V* and width W
with theirs (:class:`SceneBootstrap`; the cells, floors and pairs are
:mod:`clearsight.sweep.numbers.cells`'). Every curve, crossing and W of one analysis uses the same
resampled scene sets.

With P photos, replicate b draws the photo counts ``v_b ~ Multinomial(P, (1/P, ..., 1/P))``
(each photo picked ``v_bp`` times in P picks with replacement); every scene s of photo p(s)
enters with weight ``v_{b,p(s)}``, so a cell's replicate mean is

    m_b = sum_s v_{b,p(s)} S_s / sum_s v_{b,p(s)} n_s = sum_p v_bp S_p / sum_p v_bp n_p

(``S_s``, ``n_s``: the scene's sum and item count in the cell; ``S_p``, ``n_p``: its photo's).
The point estimate is every weight 1. A run whose scenes all come from different photos is the
plain scene bootstrap, replicate for replicate.

Vectorised: the per-photo sums and counts of every cell form one ``(C, M)`` matrix, the
``(B, C)`` multinomial weights of :func:`clearsight.metrics.cluster_bootstrap` turn it into all B
replicate curves with two matrix products, and all crossings of all replicates that share a level
grid are one :func:`clearsight.metrics.crossing_visibility_batch` call. V* is bootstrapped on
log10 V (its interval is the interval of the log, mapped back); a replicate where V* is undefined
is left out of its interval and counted in ``n_undefined``.

A crossing is a loss: the signal going half-way from its clean value towards its floor, in the
direction the signal moves when the view is lost (accuracy and confidences fall, the abstain
rate rises). Where the clean value is not on that side of the floor — say a clean accuracy of
0.00 under a blank floor of 0.17, which can only rise in fog — there is nothing to lose: that
crossing is undefined (V* NaN, no W from it), in this one place, so every table, the card, the
board and the guard read the same absence (:func:`_nothing_to_lose` says so in its note).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.metrics import (
    BootstrapResult,
    CrossingBatch,
    blind_spot_width_batch,
    cluster_bootstrap,
    crossing_visibility_batch,
)
from clearsight.sweep.numbers import cells
from clearsight.sweep.numbers.cells import Design, FloatArray, IntArray
from clearsight.sweep.numbers.pairing import WPairing, w_pairing_of
from clearsight.sweep.results import RunData
from clearsight.sweep.signals import by_name

__all__ = ["NO_VERBAL", "SceneBootstrap", "crossing_statistic", "scene_bootstrap"]

#: Note of a crossing where a verbal wording has replies but not one parseable confidence.
NO_VERBAL = "no parseable verbalized confidence"


@dataclass(frozen=True)
class _Evaluated:
    """Curves, crossings and widths for each weight row."""

    means: FloatArray  # (R, G*K)
    crossing: CrossingBatch  # arrays (R, X)
    width: FloatArray  # (R, P)
    bound: npt.NDArray[np.str_]  # (R, P)


def _evaluate(design: Design, weights: FloatArray) -> _Evaluated:
    """Everything the report bootstraps, for each row of cluster weights (rows × photos)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (weights @ design.sums) / (weights @ design.counts)
    rows = weights.shape[0]
    cube = means.reshape(rows, len(design.groups), len(design.columns))
    n_x = len(design.crossings)
    vis = np.full((rows, n_x), np.nan)
    half = np.full((rows, n_x), np.nan)
    censored = np.full((rows, n_x), "undefined", dtype="<U9")
    for grid in design.grids:
        values = cube[:, grid.g[:, None], grid.level_cols]
        clean = np.where(grid.clean_col >= 0, cube[:, grid.g, grid.clean_col], values[..., 0])
        blank = cube[:, grid.floor_g, grid.blank_col] if grid.blank_col >= 0 else np.nan
        floor = np.where(np.isnan(grid.floor_const), blank, grid.floor_const)
        # overflow: the metric evaluates its interpolation for curves it then discards
        with np.errstate(over="ignore"):
            batch = crossing_visibility_batch(grid.levels, values, clean, floor)
        # a clean value already at or past the floor has nothing to lose: no crossing
        lost = np.sign(floor - clean) == grid.direction
        vis[:, grid.x] = np.where(lost, batch.visibility_m, np.nan)
        half[:, grid.x] = batch.half
        censored[:, grid.x] = np.where(lost, batch.censored, "undefined")
    crossing = CrossingBatch(visibility_m=vis, censored=censored, half=half)
    if design.pairs:
        acc_x = np.array([p[0] for p in design.pairs], dtype=np.intp)
        aware_x = np.array([p[1] for p in design.pairs], dtype=np.intp)
        width = blind_spot_width_batch(_take(crossing, acc_x), _take(crossing, aware_x))
        w_value, w_bound = width.value, width.bound
    else:
        w_value = np.zeros((rows, 0))
        w_bound = np.zeros((rows, 0), dtype="<U12")
    return _Evaluated(means=means, crossing=crossing, width=w_value, bound=w_bound)


def _take(batch: CrossingBatch, idx: IntArray) -> CrossingBatch:
    """The crossings ``idx`` (last axis) of a batch."""
    return CrossingBatch(
        visibility_m=batch.visibility_m[:, idx],
        censored=batch.censored[:, idx],
        half=batch.half[:, idx],
    )


# ------------------------------------------------------------------------------ the bootstrap


@dataclass(frozen=True)
class SceneBootstrap:
    """The bootstrap's results in long form.

    ``curves``: one row per model × task × wording × signal × condition column with items:
    ``condition``, ``x`` (level in m for fog/water, severity for imagenet_c, else 0),
    ``n`` (items), ``n_scenes``, ``estimate``, ``low``, ``high`` (percentile interval).
    ``crossings``: one row per model × task × arm × wording × signal (the rows of summary.csv):
    ``clean``, ``floor``, ``floor_source``, ``clean_source``, ``half``, ``v_star_m``,
    ``censored`` ('' / 'below' / 'above' / 'undefined'), ``v_low_m``, ``v_high_m``, ``w``,
    ``w_bound`` ('' / 'lower' / 'upper' / 'undetermined'), ``w_low``, ``w_high`` (W only on
    awareness rows), ``w_accuracy`` (the wording whose accuracy crossing the row's W uses;
    '' on accuracy rows), ``n_items``, ``n_undefined`` (bootstrap replicates where V* was
    undefined), ``note`` (why a crossing is missing or qualified, in words).
    """

    curves: pd.DataFrame
    crossings: pd.DataFrame
    n_boot: int
    seed: int
    level: float
    n_scenes: int
    notes: list[str] = field(default_factory=list)
    n_clusters: int = 0
    w_pairing: WPairing = "main"


_CURVE_COLUMNS = [
    "model",
    "task",
    "wording",
    "signal",
    "condition",
    "x",
    "n",
    "n_scenes",
    "estimate",
    "low",
    "high",
]
_CROSSING_COLUMNS = [
    "model",
    "task",
    "arm",
    "wording",
    "signal",
    "clean",
    "floor",
    "floor_source",
    "clean_source",
    "half",
    "v_star_m",
    "censored",
    "v_low_m",
    "v_high_m",
    "w",
    "w_bound",
    "w_low",
    "w_high",
    "w_accuracy",
    "n_items",
    "n_undefined",
    "note",
]


def scene_bootstrap(
    data: RunData,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    w_pairing: WPairing | None = None,
) -> SceneBootstrap:
    """Curves, crossings and W of every model × task × wording with intervals from a bootstrap
    over source photos (module docstring: ``m_b = sum_p v_bp S_p / sum_p v_bp n_p``, ``v_b``
    multinomial photo counts): ``n_boot`` replicates drawn from ``seed``, ``level`` percentile
    intervals, W paired by ``w_pairing`` (None: as the run's manifest says,
    :func:`~clearsight.sweep.numbers.pairing.w_pairing_of`). ``n_scenes`` counts the scenes,
    ``n_clusters`` the photos resampled."""
    design = cells.design(data, w_pairing)
    if design is None:
        empty_curves = pd.DataFrame(columns=_CURVE_COLUMNS)
        empty_crossings = pd.DataFrame(columns=_CROSSING_COLUMNS)
        pairing = w_pairing or w_pairing_of(data)
        return SceneBootstrap(
            empty_curves, empty_crossings, n_boot, seed, level, 0, w_pairing=pairing
        )
    n_c = design.sums.shape[0]
    n_m, n_x = design.sums.shape[1], len(design.crossings)

    def stat(weights: FloatArray) -> FloatArray:
        ev = _evaluate(design, weights)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_v = np.log10(ev.crossing.visibility_m)
        return np.column_stack([ev.means, log_v, ev.width])

    boot = cluster_bootstrap(stat, n_c, n_boot=n_boot, level=level, seed=seed)
    point = _evaluate(design, np.ones((1, n_c)))
    curves = _curves_frame(design, boot.estimate[:n_m], boot.low[:n_m], boot.high[:n_m])
    crossings = _crossings_frame(design, point, boot, n_m, n_x)
    return SceneBootstrap(
        curves,
        crossings,
        n_boot,
        seed,
        level,
        design.n_scenes,
        n_clusters=len(design.clusters),
        w_pairing=design.pairing,
    )


def _curves_frame(
    design: Design, est: FloatArray, low: FloatArray, high: FloatArray
) -> pd.DataFrame:
    """Long frame of the bootstrapped means (cells without items dropped)."""
    n_k = len(design.columns)
    rows = []
    totals = design.counts.sum(axis=0)
    for g, (model, task, wording, signal) in enumerate(design.groups):
        for k, (cond, x) in enumerate(design.columns):
            j = g * n_k + k
            if totals[j] == 0:
                continue
            n, n_scenes = int(totals[j]), int(design.scene_counts[j])
            rows.append(
                (model, task, wording, signal, cond, x, n, n_scenes, est[j], low[j], high[j])
            )
    return pd.DataFrame(rows, columns=_CURVE_COLUMNS)


def _crossings_frame(
    design: Design, point: _Evaluated, boot: BootstrapResult, n_m: int, n_x: int
) -> pd.DataFrame:
    """One row per crossing, W attached to the awareness rows (see :class:`SceneBootstrap`)."""
    frame = pd.DataFrame(design.crossings)
    cb = point.crossing
    frame["v_star_m"] = cb.visibility_m[0]
    frame["censored"] = [("" if c == "none" else str(c)) for c in cb.censored[0]]
    frame["half"] = cb.half[0]
    frame["v_low_m"] = 10.0 ** boot.low[n_m : n_m + n_x]
    frame["v_high_m"] = 10.0 ** boot.high[n_m : n_m + n_x]
    frame["n_undefined"] = boot.n_undefined[n_m : n_m + n_x].astype(int)
    clean, floor = _clean_and_floor(design, point)
    frame["clean"], frame["floor"] = clean, floor
    frame["w"], frame["w_bound"] = np.nan, ""
    frame["w_low"], frame["w_high"] = np.nan, np.nan
    frame["w_accuracy"] = ""
    for p, (acc, aware) in enumerate(design.pairs):
        frame.loc[aware, "w_accuracy"] = design.crossings[acc]["wording"]
        frame.loc[aware, "w"] = point.width[0, p]
        frame.loc[aware, "w_bound"] = str(point.bound[0, p])
        frame.loc[aware, "w_low"] = boot.low[n_m + n_x + p]
        frame.loc[aware, "w_high"] = boot.high[n_m + n_x + p]
    frame["note"] = [_crossing_note(row) for row in frame.itertuples(index=False)]
    return frame[_CROSSING_COLUMNS]


def _clean_and_floor(design: Design, point: _Evaluated) -> tuple[FloatArray, FloatArray]:
    """The clean value and floor each crossing used (point estimate)."""
    n_x = len(design.crossings)
    clean, floor = np.full(n_x, np.nan), np.full(n_x, np.nan)
    cube = point.means.reshape(1, len(design.groups), len(design.columns))[0]
    for grid in design.grids:
        first = cube[grid.g, grid.level_cols[:, 0]]
        clean[grid.x] = np.where(grid.clean_col >= 0, cube[grid.g, grid.clean_col], first)
        blank = cube[grid.floor_g, grid.blank_col] if grid.blank_col >= 0 else np.nan
        floor[grid.x] = np.where(np.isnan(grid.floor_const), blank, grid.floor_const)
    return clean, floor


def _crossing_note(row: Any) -> str:
    """Why a crossing is missing or qualified, in words for the tables."""
    if row.signal == "verbal_conf" and row.n_items == 0:
        return NO_VERBAL
    if row.n_items == 0:
        return "no records"
    if row.censored == "undefined":
        if math.isfinite(row.clean) and math.isfinite(row.floor) and row.clean == row.floor:
            return "clean value equals the floor: no range to cross"
        if _nothing_to_lose(row.signal, row.clean, row.floor):
            side = "below" if by_name(row.signal).rises else "above"
            return f"clean value not {side} its floor: nothing to lose, no crossing"
        return "undefined (a level without records)"
    if row.n_undefined > 0:
        return f"V* undefined in {row.n_undefined} bootstrap resamples (left out of the CI)"
    return ""


def _nothing_to_lose(signal: str, clean: float, floor: float) -> bool:
    """Whether a crossing of ``signal`` starts with its clean value at or past its floor
    (accuracy not above its blank floor; an abstain rate not below 1.0): the signal has
    nothing to lose in the arm, so it has no crossing V* and no width W — a curve that
    rises away from its floor would otherwise "cross" its half point the wrong way."""
    differ = math.isfinite(clean) and math.isfinite(floor) and clean != floor
    return differ and (floor > clean) != by_name(signal).rises


def crossing_statistic(
    data: RunData,
) -> tuple[list[str], list[cells.CrossingFields], list[tuple[int, int]], Any] | None:
    """The run's crossings as one statistic of photo weights, for a bootstrap that draws the
    photos of two runs at once (``clearsight compare``): the photos (the weights' columns),
    what names each crossing, the (accuracy, awareness) crossing pairs of the widths, and
    ``stat(W)``: per row of weights log10 V* of every crossing, then W of every pair (the
    columns :func:`scene_bootstrap` bootstraps after the curves). None: no crossing."""
    design = cells.design(data)
    if design is None:
        return None

    def stat(weights: FloatArray) -> FloatArray:
        ev = _evaluate(design, weights)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_v = np.log10(ev.crossing.visibility_m)
        return np.column_stack([log_v, ev.width])

    return design.clusters, design.crossings, design.pairs, stat
