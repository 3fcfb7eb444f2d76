"""One draw of the photo bootstrap of calibration under weather
(:mod:`clearsight.sweep.numbers.recalibrated`): the maps and the conformal threshold fitted on
the draw's clean answers (:func:`fit_maps`), each map's confidence of every item
(:func:`apply_maps`), ECE, Brier and AURC of every cell at once (:func:`cell_scores`), the
conformal coverage and risk per cell, and the crossings and W of each map's mean confidence
(:func:`map_widths`); :func:`draw_numbers` lays them out in :func:`draw_keys`' order.
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
    apply_temperature,
    bin_edges,
    blind_spot_width_batch,
    conformal_threshold,
    crossing_visibility_batch,
    fit_isotonic,
    fit_platt,
    fit_temperature,
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


def fit_maps(items: Items, alpha: float) -> Fitted:
    """The maps and the threshold on ``items``' clean answered items with a confidence."""
    fit = items.scored(0)
    conf, correct = items.conf[fit], items.correct[fit]
    if not fit.any():
        return Fitted(None, None, None, math.inf, 0, ("no clean answer with a confidence",))
    notes: list[str] = []
    temperature = platt = None
    if items.z is None or items.label is None:
        notes.append("temperature: no letter log-probabilities stored (or a verbalized confidence)")
    else:
        temperature = fit_temperature(items.z[fit], items.label[fit])
    try:
        platt = fit_platt(conf, correct)
    except InputError:
        notes.append("Platt: no maximum on the clean answers (all right, all wrong or separated)")
    return Fitted(
        temperature=temperature,
        platt=platt,
        isotonic=fit_isotonic(conf, correct),
        threshold=conformal_threshold(conf, correct, alpha),
        n_fit=int(fit.sum()),
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
        probs = apply_temperature(items.z, fitted.temperature) if len(conf) else np.zeros((0, 1))
        out["temperature"] = np.where(has, probs.max(axis=1, initial=0.0), np.nan)
    if fitted.platt is not None:
        out["platt"] = np.where(has, apply_platt(fitted.platt, safe), np.nan)
    if fitted.isotonic is not None:
        out["isotonic"] = np.where(has, apply_isotonic(fitted.isotonic, safe), np.nan)
    return out


def cell_scores(conf: FloatArray, correct: FloatArray, cell: IntArray, n_cells: int) -> FloatArray:
    """``(n_cells, 3)``: ECE (the 10 equal-width bins of :func:`~clearsight.metrics.ece`),
    Brier and AURC (:func:`~clearsight.metrics.risk_coverage`'s, ties entering together) of
    the items of each cell, every cell at once (NaN: a cell without items, or a confidence
    not fitted)."""
    out = np.full((n_cells, len(STATS)), np.nan)
    if conf.size == 0 or not np.isfinite(conf).all():
        return out
    n_bins = ECE_BINS
    edges = bin_edges(n_bins)
    bins = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, n_bins - 1)
    flat = cell * n_bins + bins
    gaps = np.bincount(flat, weights=correct - conf, minlength=n_cells * n_bins)
    items = np.bincount(cell, minlength=n_cells).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out[:, 0] = np.abs(gaps.reshape(n_cells, n_bins)).sum(axis=1) / items
        out[:, 1] = np.bincount(cell, weights=(conf - correct) ** 2, minlength=n_cells) / items
    out[:, 2] = _aurc_by_cell(conf, 1.0 - correct, cell, n_cells) / np.maximum(items, 1)
    out[items == 0] = np.nan
    return out


def _aurc_by_cell(conf: FloatArray, wrong: FloatArray, cell: IntArray, n_cells: int) -> FloatArray:
    r"""Per cell :math:`n \cdot \mathrm{AURC} = \sum_k (N_k - N_{k-1}) E_k / N_k` over its
    distinct confidences in decreasing order (:math:`N_k`, :math:`E_k`: the items and the
    wrong ones at or above the k-th), all cells in one sort."""
    order = np.lexsort((-conf, cell))
    c, s, w = cell[order], conf[order], wrong[order]
    start = np.searchsorted(c, c, side="left")  # each item's cell's first position
    errors = np.cumsum(w)
    before = np.where(start > 0, errors[np.maximum(start - 1, 0)], 0.0)
    last = np.r_[(c[1:] != c[:-1]) | (s[1:] != s[:-1]), True]  # each threshold's last item
    accepted = (np.arange(c.size) - start + 1)[last].astype(np.float64)
    errs, owner = (errors - before)[last], c[last]
    first = np.r_[True, owner[1:] != owner[:-1]]
    previous = np.where(first, 0.0, np.r_[0.0, accepted[:-1]])
    contributions = (accepted - previous) * errs / accepted
    return np.bincount(owner, weights=contributions, minlength=n_cells).astype(np.float64)


def _cell_means(values: FloatArray, cell: IntArray, n_cells: int) -> FloatArray:
    """The mean of the finite ``values`` of each cell 0..n_cells-1 (NaN: none); items in no
    cell (-1) are left out."""
    keep = np.isfinite(values) & (cell >= 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        sums = np.bincount(cell[keep], weights=values[keep], minlength=n_cells)
        return sums / np.bincount(cell[keep], minlength=n_cells)


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
    """One draw: the maps fitted on the sample in which each photo's items enter
    ``weights[photo]`` times, each map's per-cell ECE, Brier and AURC (``(cells, 3)``), the
    conformal coverage and risk per cell (``(2, cells)``) and the per-cell means of the
    accuracy and of each map's confidence (:func:`map_widths`' inputs, stacked)."""
    items, accuracy = group.items.resampled(weights), group.accuracy.resampled(weights)
    fitted = fit_maps(items, alpha)
    mapped = apply_maps(fitted, items)
    n = len(group.cells)
    scored = (items.cell >= 0) & (items.cell < n) & items.answered & np.isfinite(items.conf)
    cell, correct = items.cell[scored], items.correct[scored]
    scores = {m: cell_scores(mapped[m][scored], correct, cell, n) for m in MAPS}
    kept = items.conf[scored] >= fitted.threshold
    conformal = np.vstack(
        [
            _cell_means(kept.astype(float), cell, n),
            _cell_means((kept & (correct == 0.0)).astype(float), cell, n),
        ]
    )
    means = np.vstack(
        [_cell_means(accuracy.correct, accuracy.cell, n + 1)]
        + [_cell_means(mapped[m], items.cell, n + 1) for m in MAPS]
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
