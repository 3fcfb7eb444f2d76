"""One draw of the photo bootstrap of calibration under weather
(:mod:`clearsight.sweep.numbers.recalibrated`): the maps and the conformal threshold fitted on
the draw's clean answers (:func:`fit_maps`), each map's confidence of every item
(:func:`apply_maps`), ECE, Brier and AURC of every cell at once (:func:`cell_scores`), the
conformal coverage and risk per cell, and the crossings and W of each map's mean confidence
(:func:`map_widths`); :func:`draw_numbers` lays them out in :func:`draw_keys`' order.

A draw weights each item by how often its photo was drawn rather than repeating it: every fit
takes the weights (:mod:`clearsight.metrics.recalibration`), every score and mean is a weighted
sum, and an item of weight 0 is not in the sample. The scores read the items sorted by cell and
decreasing confidence; that order is sorted once per group (:attr:`Group.scored
<clearsight.sweep.numbers.weather_items.Group.scored>`) and serves the confidence as read and
every non-decreasing map of it (:func:`by_cell`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from clearsight.metrics import (
    CrossingBatch,
    IsotonicMap,
    PlattMap,
    apply_isotonic,
    apply_platt,
    bin_edges,
    blind_spot_width_batch,
    conformal_threshold,
    crossing_visibility_batch,
    fit_isotonic,
    fit_platt,
    fit_temperature,
    temperature_confidence,
)
from clearsight.sweep.numbers.cells import FloatArray, IntArray
from clearsight.sweep.numbers.weather_items import Group, Items
from clearsight.validate import InputError

__all__ = [
    "ECE_BINS",
    "MAPS",
    "STATS",
    "Fitted",
    "Key",
    "apply_maps",
    "by_cell",
    "cell_scores",
    "draw",
    "draw_keys",
    "draw_numbers",
    "fit_maps",
    "map_widths",
]

#: The maps, ``none`` (the confidence as read) first.
MAPS: tuple[str, ...] = ("none", "temperature", "platt", "isotonic")
#: What is scored in every cell, in this order.
STATS = ("ece", "brier", "aurc")
#: The equal-width bins of ECE (:func:`~clearsight.metrics.ece`'s default).
ECE_BINS = 10


@dataclass(frozen=True)
class Fitted:
    """The maps and the threshold fitted on one set of clean answers (None: not fitted, with
    the reason in ``notes``)."""

    temperature: float | None
    platt: PlattMap | None
    isotonic: IsotonicMap | None
    threshold: float
    n_fit: int
    notes: tuple[str, ...]


def fit_maps(items: Items, alpha: float, weights: FloatArray | None = None) -> Fitted:
    """The maps and the threshold on ``items``' clean answered items with a confidence, item i
    counted ``weights[i]`` times (None: once)."""
    w = np.ones(items.conf.size) if weights is None else weights
    fit = items.scored(0) & (w > 0)
    conf, correct, w = items.conf[fit], items.correct[fit], w[fit]
    if not fit.any():
        return Fitted(None, None, None, math.inf, 0, ("no clean answer with a confidence",))
    notes: list[str] = []
    temperature = platt = None
    if items.z is None or items.label is None:
        notes.append("temperature: no letter log-probabilities stored (or a verbalized confidence)")
    else:
        try:
            temperature = fit_temperature(items.z[fit], items.label[fit], weights=w)
        except InputError:
            notes.append("temperature: no minimum on the clean answers (every right letter on top)")
    try:
        platt = fit_platt(conf, correct, weights=w)
    except InputError:
        notes.append("Platt: no maximum on the clean answers (all right, all wrong or separated)")
    return Fitted(
        temperature=temperature,
        platt=platt,
        isotonic=fit_isotonic(conf, correct, weights=w),
        threshold=conformal_threshold(conf, correct, alpha, weights=w),
        n_fit=round(float(w.sum())),
        notes=tuple(notes),
    )


def apply_maps(fitted: Fitted, items: Items) -> dict[str, FloatArray]:
    """Each map's confidence of every item (NaN where the item has none, or the map was not
    fitted)."""
    conf = items.conf
    has = np.isfinite(conf)
    safe = np.where(has, conf, 0.5)
    out = {name: np.full(conf.shape, np.nan) for name in MAPS}
    out["none"] = conf
    if fitted.temperature is not None and items.z is not None:
        top = temperature_confidence(items.z, fitted.temperature) if len(conf) else conf
        out["temperature"] = np.where(has, top, np.nan)
    if fitted.platt is not None:
        out["platt"] = np.where(has, apply_platt(fitted.platt, safe), np.nan)
    if fitted.isotonic is not None:
        out["isotonic"] = np.where(has, apply_isotonic(fitted.isotonic, safe), np.nan)
    return out


def cell_scores(
    conf: FloatArray,
    correct: FloatArray,
    cell: IntArray,
    n_cells: int,
    *,
    weights: FloatArray | None = None,
    order: IntArray | None = None,
) -> FloatArray:
    """``(n_cells, 3)``: ECE (the 10 equal-width bins of :func:`~clearsight.metrics.ece`),
    Brier and AURC (:func:`~clearsight.metrics.risk_coverage`'s, ties entering together) of
    the items of each cell, every cell at once, item i counted ``weights[i]`` times (None:
    once), in one compiled pass (:func:`~clearsight.sweep.numbers.weather_loops.score_sorted`)
    over the items sorted by cell and decreasing confidence (``order`` where it still sorts
    them: :func:`by_cell`). NaN: a cell without items, or a confidence not fitted."""
    from clearsight.sweep.numbers import weather_loops

    out = np.full((n_cells, len(STATS)), np.nan)
    if conf.size == 0 or not np.isfinite(conf).all():
        return out
    if cell.min() < 0 or cell.max() >= n_cells:
        raise InputError(f"cells must lie in 0..{n_cells - 1}, got {cell.min()}..{cell.max()}")
    w = np.ones(conf.size) if weights is None else np.ascontiguousarray(weights, np.float64)
    gaps, sums = np.zeros((n_cells, ECE_BINS)), np.zeros((len(STATS), n_cells))
    weather_loops.score_sorted(
        by_cell(conf, cell, order),
        np.ascontiguousarray(cell, np.intp),
        np.ascontiguousarray(conf, np.float64),
        np.ascontiguousarray(correct, np.float64),
        w,
        bin_edges(ECE_BINS),
        gaps,
        sums,
    )
    items = sums[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        out[:, 0] = np.abs(gaps).sum(axis=1) / items
        out[:, 1] = sums[1] / items
        out[:, 2] = sums[2] / items
    out[items == 0] = np.nan
    return out


def by_cell(conf: FloatArray, cell: IntArray, order: IntArray | None = None) -> IntArray:
    """The items sorted by cell, then by decreasing confidence: ``order`` where it still sorts
    ``conf`` so (a non-decreasing map of the confidences it was made for keeps it, merging
    ties at most, never splitting them), else a fresh sort: by decreasing confidence, then a
    stable sort by cell (a radix sort of the small cell numbers; equal confidences may come
    in any order, which AURC's ties entering together does not see)."""
    if order is not None:
        c, s = cell[order], conf[order]
        if np.all((c[1:] > c[:-1]) | ((c[1:] == c[:-1]) & (s[1:] <= s[:-1]))):
            return np.asarray(order, dtype=np.intp)
    by_conf = np.argsort(-conf)
    small = cell[by_conf].astype(np.min_scalar_type(max(int(cell.max(initial=0)), 0)))
    return np.asarray(by_conf[np.argsort(small, kind="stable")], dtype=np.intp)


def _cell_means(
    values: FloatArray, cell: IntArray, n_cells: int, weights: FloatArray
) -> FloatArray:
    """The weighted mean of the finite ``values`` of each cell 0..n_cells-1 (NaN: none, or
    all of weight 0); items in no cell (-1) are left out."""
    keep = np.isfinite(values) & (cell >= 0)
    w = weights[keep]
    with np.errstate(invalid="ignore", divide="ignore"):
        sums = np.bincount(cell[keep], weights=w * values[keep], minlength=n_cells)
        return sums / np.bincount(cell[keep], weights=w, minlength=n_cells)


# ------------------------------------------------------------------------------ one draw

Key = tuple[str, ...]


def map_widths(
    group: Group, accuracy: FloatArray, confidence: FloatArray, arm: str
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.str_]]:
    """log10 V* of the accuracy and of each map's mean confidence over ``arm``'s levels, and
    each map's W with its bound (:func:`~clearsight.metrics.blind_spot_width_batch`), from
    the means per cell of the accuracy (``accuracy``, the blank cell last) and of each map's
    confidence (``confidence``, a row per map). The accuracy falls to its blank value (chance
    without blank images), a confidence to chance; a signal whose clean value is not above
    its floor has nothing to lose: no crossing (as :mod:`~clearsight.sweep.numbers.crossings`)."""
    cells = group.arms[arm]
    values = np.vstack([accuracy[None, : len(group.cells)], confidence])
    floor = np.full(values.shape[0], group.chance)
    if group.has_blank:  # a draw without blank images: no floor, no crossing (as the scene's)
        floor[0] = accuracy[group.blank]
    levels = [group.cells[c][1] for c in cells]
    with np.errstate(over="ignore", invalid="ignore"):
        batch = crossing_visibility_batch(levels, values[:, cells], values[:, 0], floor)
    lost = np.sign(floor - values[:, 0]) == -1.0
    vis = np.where(lost, batch.visibility_m, np.nan)
    censored = np.where(lost, batch.censored, "undefined").astype(np.str_)
    acc = CrossingBatch(vis[:1], censored[:1], batch.half[:1])
    width = blind_spot_width_batch(acc, CrossingBatch(vis[1:], censored[1:], batch.half[1:]))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log10(vis), width.value, width.bound


def draw(
    group: Group, weights: FloatArray, alpha: float
) -> tuple[Fitted, dict[str, FloatArray], FloatArray, FloatArray]:
    """One draw: the maps fitted on the sample in which each photo's items count
    ``weights[photo]`` times (weighted, not repeated), each map's per-cell ECE, Brier and
    AURC (``(cells, 3)``), the conformal coverage and risk per cell (``(2, cells)``) and the
    per-cell means of the accuracy and of each map's confidence (:func:`map_widths`' inputs,
    stacked)."""
    items, accuracy, scored = group.items, group.accuracy, group.scored
    w = weights[items.cluster]
    fitted = fit_maps(items, alpha, w)
    mapped = apply_maps(fitted, items)
    n, cell, correct, ws = len(group.cells), scored.cell, scored.correct, w[scored.index]
    scores = {
        m: cell_scores(mapped[m][scored.index], correct, cell, n, weights=ws, order=scored.order)
        for m in MAPS
    }
    kept = items.conf[scored.index] >= fitted.threshold
    conformal = np.vstack(
        [
            _cell_means(kept.astype(float), cell, n, ws),
            _cell_means((kept & (correct == 0.0)).astype(float), cell, n, ws),
        ]
    )
    means = np.vstack(
        [_cell_means(accuracy.correct, accuracy.cell, n + 1, weights[accuracy.cluster])]
        + [_cell_means(mapped[m], items.cell, n + 1, w) for m in MAPS]
    )
    return fitted, scores, conformal, means


def draw_keys(group: Group) -> list[Key]:
    """What each entry of :func:`draw_numbers` is, in its order."""
    n = range(len(group.cells))
    keys: list[Key] = [("threshold",)]
    keys += [("stat", str(c), m, stat) for m in MAPS for c in n for stat in STATS]
    keys += [("conformal", str(c), what) for what in ("coverage", "risk") for c in n]
    for arm in group.arms:
        keys += [("v_acc", arm), *(("v_conf", arm, m) for m in MAPS)]
        keys += [("w", arm, m) for m in MAPS]
    return keys


def draw_numbers(group: Group, weights: FloatArray, alpha: float) -> FloatArray:
    """Every number of ``group`` in one draw (:func:`draw`; all ones: the run itself), in
    :func:`draw_keys`' order."""
    fitted, scores, conformal, means = draw(group, weights, alpha)
    parts = [np.array([fitted.threshold]), *(scores[m].ravel() for m in MAPS), conformal.ravel()]
    for arm in group.arms:
        log_v, w, _ = map_widths(group, means[0], means[1:, : len(group.cells)], arm)
        parts += [log_v, w]
    return np.concatenate(parts)
