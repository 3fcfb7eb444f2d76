"""The sweep's numbers as DataFrames: curves with bootstrap bands, crossings and W, tables.

Pure pandas/numpy on top of :mod:`clearsight.metrics`; no plotting, no HTML. The centre is
:func:`analyse_sweep`, one seeded cluster bootstrap that resamples *scenes* (images) with
replacement and gives, for every model × task × wording, every signal's mean at every condition
(clean, each fog/water level, blank, shuffled, ImageNet-C severities) with its 95 % percentile
interval, and every crossing visibility V* and blind-spot width W with theirs.

Signals (docs/methods.md §4). ``accuracy``: share correct, abstentions count as not correct.
``internal_conf``: the letter read-out's probability of its best content option (letter
wordings). ``verbal_conf``: the parsed verbalized confidence (verbal wordings; unparsed replies
are left out of its mean, and their share is reported). ``abstain``: share of answers that pick
the abstain option.

Crossings use the floors docs/methods.md fixes: accuracy → the blank-image accuracy of the same
model, task and wording (chance where the run has no blank control); confidences → 1/k, k the
number of content options; abstain rate → 1.0 (a rising signal). W pairs each awareness signal
with the accuracy *of the same wording*: the abstentions and confidences are read from the same
answers whose correctness defines that accuracy, so the two crossings are measured on one set
of replies (and, in the bootstrap, on the same resampled scenes).

Vectorised: per-scene × per-column sums and counts of every signal form one ``(C, M)`` matrix
(:func:`clearsight.metrics.cluster_sums`), the ``(B, C)`` multinomial weights of
:func:`clearsight.metrics.cluster_bootstrap` turn it into all B replicate curves with two matrix
products, and all crossings of all replicates that share a level grid are one
:func:`clearsight.metrics.crossing_visibility_batch` call.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.metrics import (
    CALIBRATION_STATS,
    BootstrapResult,
    CrossingBatch,
    aurc_statistic,
    blind_spot_width_batch,
    calibration_statistic,
    cluster_bootstrap,
    cluster_sums,
    crossing_visibility_batch,
)
from clearsight.report.html import fmt_num, fmt_range
from clearsight.sweep.results import ARMS, CONTROLS, RunData, is_verbal, level_label

__all__ = [
    "SIGNALS",
    "SIGNAL_LABELS",
    "DynamicRanges",
    "SweepAnalysis",
    "analyse_sweep",
    "calibration_table",
    "controls_table",
    "crossing_label",
    "depth_summary",
    "dynamic_ranges",
    "imagenet_c_table",
    "interval",
    "interval_m",
    "metres",
    "selective_table",
    "signals_for",
    "signed",
    "sweep_table",
    "veq_summary",
    "w_label",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

SIGNALS: tuple[str, ...] = ("accuracy", "internal_conf", "verbal_conf", "abstain")
SIGNAL_LABELS: dict[str, str] = {
    "accuracy": "accuracy",
    "internal_conf": "internal confidence",
    "verbal_conf": "verbalized confidence",
    "abstain": "abstain rate",
}
#: Note shown where a verbal wording has replies but not one parseable confidence.
NO_VERBAL = "no parseable verbalized confidence"

# A condition column of the bootstrap: (condition, x), x the level (m), severity, or 0.
Column = tuple[str, float]
# A signal group of the bootstrap: (model, task, wording, signal).
Group = tuple[str, str, str, str]


def signals_for(wording: str) -> tuple[str, ...]:
    """Signals a wording yields: accuracy, its confidence read-out, abstain rate."""
    return ("accuracy", "verbal_conf" if is_verbal(wording) else "internal_conf", "abstain")


def signal_values(records: pd.DataFrame, signal: str) -> pd.Series:
    """The per-record value of ``signal`` (NaN where the record has none)."""
    column = {"accuracy": "correct", "abstain": "abstained"}.get(signal, signal)
    return records[column].astype(float)


def _column_codes(records: pd.DataFrame) -> pd.Series:
    """Each record's condition column as a (condition, x) tuple (see :data:`Column`)."""
    cond = records["condition"].astype(str)
    x = np.where(
        cond.isin(list(ARMS)),
        records["level_m"].to_numpy(dtype=float),
        np.where(cond == "imagenet_c", records["severity"].to_numpy(dtype=float), 0.0),
    )
    return pd.Series(list(zip(cond, x.tolist(), strict=True)), index=records.index)


def _ordered_columns(present: set[Column], levels: dict[str, tuple[float, ...]]) -> list[Column]:
    """Columns in display order: clean, each arm's levels, blank, shuffled, ImageNet-C."""
    order: list[Column] = [("clean", 0.0)]
    for arm, lv in levels.items():
        order += [(arm, v) for v in lv]
    order += [("blank", 0.0), ("shuffled", 0.0)]
    order += sorted(c for c in present if c[0] == "imagenet_c")
    known = [c for c in order if c in present]
    return known + sorted(present - set(known))


# ------------------------------------------------------------------------------ the design


@dataclass(frozen=True)
class _Grid:
    """Crossings that share one level grid: evaluated in one batch call."""

    levels: tuple[float, ...]
    x: IntArray  # crossing indices
    g: IntArray  # signal group of each crossing
    level_cols: IntArray  # (crossings, levels): column index of each crossing's levels
    clean_col: IntArray  # clean column per crossing, -1: use the clearest level
    floor_const: FloatArray  # constant floor, NaN: the blank column of floor_g
    floor_g: IntArray  # accuracy group whose blank value is the floor
    blank_col: int


@dataclass(frozen=True)
class _Design:
    """Per-scene sums of every (group, column) cell and what to compute from them."""

    groups: list[Group]
    columns: list[Column]
    sums: FloatArray  # (C, G*K)
    counts: FloatArray  # (C, G*K)
    scene_counts: FloatArray  # (G*K,) number of scenes with at least one item
    crossings: list[dict[str, Any]]  # descriptive fields of each crossing
    grids: list[_Grid]
    pairs: list[tuple[int, int]]  # (accuracy crossing, awareness crossing)


def _cell_sums(
    records: pd.DataFrame, groups: list[Group], columns: list[Column]
) -> tuple[FloatArray, FloatArray, int]:
    """Scatter every signal value into its (scene, group × column) cell: sums and counts."""
    scenes = np.unique(records["scene"].astype(str).to_numpy())
    col_index = {c: i for i, c in enumerate(columns)}
    codes = _column_codes(records).map(col_index).to_numpy(dtype=np.intp)
    scene_code = np.searchsorted(scenes, records["scene"].astype(str).to_numpy())
    positions = records.groupby(["model", "task", "wording"], sort=False).indices
    values = {s: signal_values(records, s).to_numpy() for s in SIGNALS}
    n_k = len(columns)
    vals: list[FloatArray] = []
    clus: list[IntArray] = []
    flat: list[IntArray] = []
    for g, (model, task, wording, signal) in enumerate(groups):
        rows = np.asarray(positions[(model, task, wording)], dtype=np.intp)
        rows = rows[np.isfinite(values[signal][rows])]
        vals.append(values[signal][rows])
        clus.append(scene_code[rows])
        flat.append(g * n_k + codes[rows])
    size = scenes.size, len(groups) * n_k
    sums, counts = np.zeros(size), np.zeros(size)
    all_vals = np.concatenate(vals) if vals else np.zeros(0)
    if all_vals.size:
        cs = cluster_sums(all_vals, np.concatenate(clus), np.concatenate(flat))
        rows_idx = np.asarray(cs.clusters, dtype=np.intp)
        cols_idx = np.asarray(cs.columns, dtype=np.intp)
        sums[np.ix_(rows_idx, cols_idx)] = cs.sums
        counts[np.ix_(rows_idx, cols_idx)] = cs.counts
    return sums, counts, int(scenes.size)


# One crossing of a level grid: (crossing, group, clean column or -1, constant floor or NaN,
# accuracy group of its blank floor, the columns of its levels).
_GridRow = tuple[int, int, int, float, int, list[int]]


def _groups(rec: pd.DataFrame) -> tuple[list[Group], dict[tuple[str, str, str], float]]:
    """Every (model, task, wording, signal) group of the records in order of appearance, and
    the chance level 1/k of each (model, task, wording), k the median number of options."""
    groups: list[Group] = []
    chance: dict[tuple[str, str, str], float] = {}
    for (model, task, wording), sub in rec.groupby(["model", "task", "wording"], sort=False):
        key = (str(model), str(task), str(wording))
        groups += [(*key, s) for s in signals_for(key[2])]
        k = float(sub["n_options"].median()) if sub["n_options"].notna().any() else math.nan
        chance[key] = 1.0 / k if k > 0 else math.nan
    return groups, chance


def _crossing_rows(
    data: RunData,
    groups: list[Group],
    chance: dict[tuple[str, str, str], float],
    columns: list[Column],
    totals: FloatArray,
) -> tuple[list[dict[str, Any]], list[tuple[int, int]], dict[tuple[float, ...], list[_GridRow]]]:
    """What to compute for every arm × group the config asked: each crossing's descriptive
    fields with its floor (accuracy: the blank accuracy, else chance; confidences: 1/k;
    abstain rate: 1.0) and clean reference, the (accuracy, awareness) pairs whose widths W are
    wanted, and the crossings grouped by level grid."""
    n_k = len(columns)
    g_index = {grp: i for i, grp in enumerate(groups)}
    col_index = {c: i for i, c in enumerate(columns)}

    def has(g: int, col: Column) -> bool:
        return col in col_index and totals[g * n_k + col_index[col]] > 0

    crossings: list[dict[str, Any]] = []
    pairs: list[tuple[int, int]] = []
    acc_x: dict[tuple[str, int], int] = {}
    grid_rows: dict[tuple[float, ...], list[_GridRow]] = {}
    for arm, levels in data.levels.items():
        for g, (model, task, wording, signal) in enumerate(groups):
            if not data.asked(model, arm):
                continue  # the config never showed this arm to the model: no row to report
            base = (model, task, wording)
            acc_g = g_index[(*base, "accuracy")]
            if signal == "accuracy":
                from_blank = has(acc_g, ("blank", 0.0))
                floor = math.nan if from_blank else chance[base]
                floor_source = "blank" if from_blank else "chance (no blank control)"
            else:
                floor = 1.0 if signal == "abstain" else chance[base]
                floor_source = "all abstain" if signal == "abstain" else "1/k"
            clean_ok = has(g, ("clean", 0.0))
            x = len(crossings)
            crossings.append(
                {
                    "model": model,
                    "task": task,
                    "arm": arm,
                    "wording": wording,
                    "signal": signal,
                    "floor_source": floor_source,
                    "clean_source": "clean" if clean_ok else "clearest level (no clean control)",
                    "n_items": int(sum(totals[g * n_k + col_index[(arm, v)]] for v in levels)),
                }
            )
            clean_col = col_index[("clean", 0.0)] if clean_ok else -1
            level_cols = [col_index[(arm, v)] for v in levels]
            grid_rows.setdefault(levels, []).append((x, g, clean_col, floor, acc_g, level_cols))
            if signal == "accuracy":
                acc_x[(arm, acc_g)] = x
            else:
                pairs.append((acc_x[(arm, acc_g)], x))
    return crossings, pairs, grid_rows


def _grids(grid_rows: dict[tuple[float, ...], list[_GridRow]], blank_col: int) -> list[_Grid]:
    """The crossings of each level grid as the arrays of one batch call."""
    grids = []
    for levels, rows in grid_rows.items():
        arr = np.array([r[:3] for r in rows], dtype=np.intp)
        grids.append(
            _Grid(
                levels=levels,
                x=arr[:, 0],
                g=arr[:, 1],
                level_cols=np.array([r[5] for r in rows], dtype=np.intp),
                clean_col=arr[:, 2],
                floor_const=np.array([r[3] for r in rows], dtype=np.float64),
                floor_g=np.array([r[4] for r in rows], dtype=np.intp),
                blank_col=blank_col,
            )
        )
    return grids


def _design(data: RunData) -> _Design | None:
    """Groups, columns, per-scene sums and the crossing/W specification of a run."""
    rec = data.records
    if rec.empty:
        return None
    groups, chance = _groups(rec)
    columns = _ordered_columns(set(_column_codes(rec)), data.levels)
    sums, counts, _ = _cell_sums(rec, groups, columns)
    crossings, pairs, grid_rows = _crossing_rows(data, groups, chance, columns, counts.sum(axis=0))
    blank_col = columns.index(("blank", 0.0)) if ("blank", 0.0) in columns else -1
    return _Design(
        groups=groups,
        columns=columns,
        sums=sums,
        counts=counts,
        scene_counts=(counts > 0).sum(axis=0).astype(np.float64),
        crossings=crossings,
        grids=_grids(grid_rows, blank_col),
        pairs=pairs,
    )


@dataclass(frozen=True)
class _Evaluated:
    """Curves, crossings and widths for each weight row."""

    means: FloatArray  # (R, G*K)
    crossing: CrossingBatch  # arrays (R, X)
    width: FloatArray  # (R, P)
    bound: npt.NDArray[np.str_]  # (R, P)


def _evaluate(design: _Design, weights: FloatArray) -> _Evaluated:
    """Everything the report bootstraps, for each row of cluster weights (rows × scenes)."""
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
        vis[:, grid.x] = batch.visibility_m
        half[:, grid.x] = batch.half
        censored[:, grid.x] = batch.censored
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


# ------------------------------------------------------------------------------ the analysis


@dataclass(frozen=True)
class SweepAnalysis:
    """The bootstrap's results in long form.

    ``curves``: one row per model × task × wording × signal × condition column with items:
    ``condition``, ``x`` (level in m for fog/water, severity for imagenet_c, else 0),
    ``n`` (items), ``n_scenes``, ``estimate``, ``low``, ``high`` (percentile interval).
    ``crossings``: one row per model × task × arm × wording × signal (the rows of summary.csv):
    ``clean``, ``floor``, ``floor_source``, ``half``, ``v_star_m``, ``censored`` ('' / 'below' /
    'above' / 'undefined'), ``v_low_m``, ``v_high_m``, ``w``, ``w_bound``, ``w_low``, ``w_high``
    (W only on awareness rows), ``n_items``, ``n_undefined`` (bootstrap replicates where V* was
    undefined), ``note``.
    """

    curves: pd.DataFrame
    crossings: pd.DataFrame
    n_boot: int
    seed: int
    level: float
    n_scenes: int
    notes: list[str] = field(default_factory=list)


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
    "v_star",
    "v_low_m",
    "v_high_m",
    "w",
    "w_bound",
    "w_display",
    "w_low",
    "w_high",
    "n_items",
    "n_undefined",
    "note",
]


def metres(v: float) -> str:
    """A visibility with three significant digits, trailing zeros kept: 250, 12.0, 3.51."""
    if not math.isfinite(v):
        return "–"
    if abs(v) >= 99.95:
        return f"{v:.0f}"
    if abs(v) >= 9.995:
        return f"{v:.1f}"
    return f"{v:.2f}" if abs(v) >= 0.9995 else f"{v:.3g}"


def signed(w: float, digits: int = 2) -> str:
    """A signed decimal without a negative zero: '+0.03', '-0.21', '+0.00'."""
    return f"{round(w, digits) + 0.0:+.{digits}f}"


def interval_m(low: float, high: float) -> str:
    """'[12.1, 15.9] m' with three significant digits; '' if missing."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"[{metres(low)}, {metres(high)}] m"


def interval(low: float, high: float) -> str:
    """'[-0.02, +0.10]'; '' if missing."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"[{signed(low)}, {signed(high)}]"


def crossing_label(v_star: float, censored: str, levels: tuple[float, ...] | None = None) -> str:
    """V* for display: '14.2 m', '≤ 1.95 m' (censored below), '≥ 250 m' (above), 'n/a'."""
    if censored == "undefined" or not math.isfinite(v_star):
        return "n/a"
    if censored == "below":
        return f"≤ {level_label(min(levels) if levels else v_star)} m"
    if censored == "above":
        return f"≥ {level_label(max(levels) if levels else v_star)} m"
    return f"{metres(v_star)} m"


def w_label(w: float, bound: str) -> str:
    """W for display: '+0.02', '≥ +0.79' (lower bound), '≤ -0.10' (upper), 'undetermined'."""
    if bound in ("", "nan"):
        return ""
    if bound == "undetermined" or not math.isfinite(w):
        return "undetermined" if math.isfinite(w) else "n/a"
    prefix = {"lower": "≥ ", "upper": "≤ "}.get(bound, "")
    return f"{prefix}{signed(w)}"


def analyse_sweep(
    data: RunData, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> SweepAnalysis:
    """Curves, crossings and W of every model × task × wording with scene-bootstrap intervals."""
    design = _design(data)
    if design is None:
        empty_curves = pd.DataFrame(columns=_CURVE_COLUMNS)
        return SweepAnalysis(
            empty_curves, pd.DataFrame(columns=_CROSSING_COLUMNS), n_boot, seed, level, 0
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
    crossings = _crossings_frame(data, design, point, boot, n_m, n_x)
    return SweepAnalysis(curves, crossings, n_boot, seed, level, n_c)


def _curves_frame(
    design: _Design, est: FloatArray, low: FloatArray, high: FloatArray
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
    data: RunData, design: _Design, point: _Evaluated, boot: BootstrapResult, n_m: int, n_x: int
) -> pd.DataFrame:
    """One row per crossing, W attached to the awareness rows (see :class:`SweepAnalysis`)."""
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
    for p, (_, aware) in enumerate(design.pairs):
        frame.loc[aware, "w"] = point.width[0, p]
        frame.loc[aware, "w_bound"] = str(point.bound[0, p])
        frame.loc[aware, "w_low"] = boot.low[n_m + n_x + p]
        frame.loc[aware, "w_high"] = boot.high[n_m + n_x + p]
    frame["v_star"] = [
        crossing_label(v, c or "none", data.levels.get(a))
        for v, c, a in zip(frame["v_star_m"], frame["censored"], frame["arm"], strict=True)
    ]
    frame["w_display"] = [w_label(w, b) for w, b in zip(frame["w"], frame["w_bound"], strict=True)]
    frame["note"] = [_crossing_note(row) for row in frame.itertuples(index=False)]
    return frame[_CROSSING_COLUMNS]


def _clean_and_floor(design: _Design, point: _Evaluated) -> tuple[FloatArray, FloatArray]:
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
        return "undefined (a level without records)"
    if row.n_undefined > 0:
        return f"V* undefined in {row.n_undefined} bootstrap resamples (left out of the CI)"
    return ""


# ------------------------------------------------------------------------------ tables


def _mean_or_nan(values: pd.Series) -> float:
    """Mean of the finite values, NaN if there are none."""
    v = values.dropna()
    return float(v.mean()) if len(v) else math.nan


def _cell_stats(sub: pd.DataFrame) -> dict[str, float]:
    """Accuracy, accuracy on answered items, confidences, parse share and abstain rate."""
    answered = sub[sub["answered"] == 1.0]
    n_verbal_items = sub["wording"].map(lambda w: is_verbal(str(w))).sum()
    return {
        "n": float(len(sub)),
        "accuracy": _mean_or_nan(sub["correct"]),
        "accuracy_answered": _mean_or_nan(answered["correct"]),
        "internal_conf": _mean_or_nan(sub["internal_conf"]),
        "verbal_conf": _mean_or_nan(sub["verbal_conf"]),
        "verbal_parsed": (
            float(sub["verbal_conf"].notna().sum() / n_verbal_items) if n_verbal_items else math.nan
        ),
        "abstain_rate": _mean_or_nan(sub["abstained"]),
    }


def _accuracy_ci(analysis: SweepAnalysis) -> pd.DataFrame:
    """Accuracy intervals keyed by model, task, wording, condition, x."""
    acc = analysis.curves[analysis.curves["signal"] == "accuracy"]
    return acc[["model", "task", "wording", "condition", "x", "low", "high"]].rename(
        columns={"low": "acc_low", "high": "acc_high"}
    )


def sweep_table(data: RunData, analysis: SweepAnalysis, task: str) -> pd.DataFrame:
    """The full sweep (the paper's Tables IX/X) for ``task``, long form.

    One row per model × condition (clean, fog, water) × level × wording: ``n``, ``accuracy``
    with its interval, ``accuracy_answered``, ``internal_conf``, ``verbal_conf``,
    ``verbal_parsed`` (share of verbal replies with a parseable confidence), ``abstain_rate``;
    for verification also ``acc_true`` / ``acc_distractor`` (true- and false-category questions).
    """
    rec = data.records[
        (data.records["task"] == task) & data.records["condition"].isin(["clean", *data.levels])
    ]
    rows = []
    for (model, cond, x, wording), sub in rec.assign(
        x=np.where(rec["condition"] == "clean", 0.0, rec["level_m"])
    ).groupby(["model", "condition", "x", "wording"], sort=False):
        row: dict[str, Any] = {"model": model, "condition": cond, "x": x, "wording": wording}
        row.update(_cell_stats(sub))
        if task == "verify":
            for asked in ("true", "distractor"):
                row[f"acc_{asked}"] = _mean_or_nan(sub.loc[sub["asked"] == asked, "correct"])
        rows.append(row)
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows)
    table = table.merge(
        _accuracy_ci(analysis)[lambda d: d["task"] == task].drop(columns="task"),
        on=["model", "wording", "condition", "x"],
        how="left",
    )
    table["level"] = [
        "clean" if c == "clean" else level_label(x)
        for c, x in zip(table["condition"], table["x"], strict=True)
    ]
    return _sort(table, data, task)


def _sort(table: pd.DataFrame, data: RunData, task: str) -> pd.DataFrame:
    """Rows by model, condition (clean, arms), clearest level first, wording order."""
    model_rank = {m: i for i, m in enumerate(data.models)}
    conditions = dict.fromkeys(["clean", *data.arms, *CONTROLS, "imagenet_c"])  # first wins
    cond_rank = {c: i for i, c in enumerate(conditions)}
    wording_rank = {w: i for i, w in enumerate(data.wordings(task))}
    order = table.assign(
        _m=table["model"].map(model_rank),
        _c=table["condition"].map(cond_rank),
        _x=-table["x"].astype(float),
        _w=table["wording"].map(wording_rank),
    ).sort_values(["_m", "_c", "_x", "_w"], kind="stable")
    return order.drop(columns=["_m", "_c", "_x", "_w"]).reset_index(drop=True)


def controls_table(data: RunData, analysis: SweepAnalysis, task: str) -> pd.DataFrame:
    """Clean, blank and shuffled images: accuracy (with interval), confidences, abstain, chance."""
    rec = data.records[(data.records["task"] == task) & data.records["condition"].isin(CONTROLS)]
    rows = []
    for (model, cond, wording), sub in rec.groupby(["model", "condition", "wording"], sort=False):
        row: dict[str, Any] = {"model": model, "condition": cond, "x": 0.0, "wording": wording}
        row.update(_cell_stats(sub))
        row["chance"] = _mean_or_nan(1.0 / sub["n_options"])
        rows.append(row)
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows).merge(
        _accuracy_ci(analysis)[lambda d: d["task"] == task].drop(columns="task"),
        on=["model", "wording", "condition", "x"],
        how="left",
    )
    return _sort(table, data, task).drop(columns="x")


_CAL_COLUMNS = ["mean_conf", "accuracy", *CALIBRATION_STATS]
_SELECTIVE_STATS = ("aurc", "e_aurc")


def _scored(sub: pd.DataFrame, signal: str) -> tuple[FloatArray, FloatArray, npt.NDArray[Any]]:
    """Confidence, correctness and scene of the answered items of ``sub`` with a finite
    ``signal`` (an abstention has no chosen option to be right or wrong about)."""
    conf = sub[signal].to_numpy(dtype=float)
    keep = np.isfinite(conf) & (sub["answered"].to_numpy() == 1.0)
    return conf[keep], sub["correct"].to_numpy(dtype=float)[keep], sub["scene"].to_numpy()[keep]


def _with_intervals(
    names: Sequence[str], stat: Any, scenes: npt.NDArray[Any], analysis: SweepAnalysis
) -> dict[str, float]:
    """Each statistic of ``stat`` with its scene-bootstrap interval (``<name>_low/_high``;
    the analysis's draws, level and seed)."""
    boot = cluster_bootstrap(
        stat, scenes, n_boot=analysis.n_boot, level=analysis.level, seed=analysis.seed
    )
    row: dict[str, float] = {}
    for k, name in enumerate(names):
        row[name] = float(boot.estimate[k])
        row[f"{name}_low"], row[f"{name}_high"] = float(boot.low[k]), float(boot.high[k])
    return row


def _nan_row(names: Sequence[str], extra: Sequence[str] = ()) -> dict[str, float]:
    bounds = [f"{k}_{end}" for k in names for end in ("low", "high")]
    return dict.fromkeys([*extra, *names, *bounds], math.nan)


def _calibration_row(sub: pd.DataFrame, signal: str, analysis: SweepAnalysis) -> dict[str, float]:
    """ECE, MCE, Brier, AUROC of one confidence signal on the answered items of ``sub``, each
    with its scene-bootstrap interval."""
    c, y, scenes = _scored(sub, signal)
    row = {"n": float(len(sub)), "n_scored": float(c.size)}
    if c.size == 0:
        return row | _nan_row(CALIBRATION_STATS, ("mean_conf", "accuracy"))
    row |= {"mean_conf": float(c.mean()), "accuracy": float(y.mean())}
    stat = calibration_statistic(c, y, scenes)
    return row | _with_intervals(CALIBRATION_STATS, stat, scenes, analysis)


def _selective_row(sub: pd.DataFrame, signal: str, analysis: SweepAnalysis) -> dict[str, float]:
    """AURC and E-AURC of one confidence signal gating the answered items of ``sub``, with
    scene-bootstrap intervals."""
    c, y, scenes = _scored(sub, signal)
    row = {"n": float(len(sub)), "n_scored": float(c.size)}
    if c.size == 0:
        return row | _nan_row(_SELECTIVE_STATS)
    stat = aurc_statistic(c, y, scenes)
    return row | _with_intervals(_SELECTIVE_STATS, stat, scenes, analysis)


def _confidence_cells(
    data: RunData, task: str
) -> Iterator[tuple[dict[str, Any], str, pd.DataFrame]]:
    """(labels, signal, records) of each cell a confidence table reports: model × wording ×
    arm × level — clean, each sweep level, ``pooled`` (clean + every level of the arm) and
    ``murkiest`` (the two murkiest levels) — with the wording's confidence signal."""
    rec = data.records[data.records["task"] == task]
    for model in data.models:
        for wording in data.wordings(task):
            signal = signals_for(wording)[1]
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
                labels = {"model": model, "arm": arm, "wording": wording, "signal": signal}
                for name, v, sub in cells:
                    if not sub.empty:
                        yield labels | {"level": name, "level_m": v}, signal, sub


def calibration_table(data: RunData, task: str, analysis: SweepAnalysis) -> pd.DataFrame:
    """ECE, MCE, Brier and AUROC per model × arm × wording × level (and pooled), for ``task``,
    each with a scene-bootstrap interval (cells: :func:`_confidence_cells`).

    Scored on *answered* items (abstentions have no content answer to be right or wrong about;
    ``n_scored`` says how many items that leaves): the confidence is the belief in the chosen
    option and ``correct`` whether that option is right.
    """
    rows = [
        labels | _calibration_row(sub, signal, analysis)
        for labels, signal, sub in _confidence_cells(data, task)
    ]
    return pd.DataFrame(rows)


def selective_table(data: RunData, task: str, analysis: SweepAnalysis) -> pd.DataFrame:
    """Selective prediction per model × arm × wording × level (and pooled), for ``task``: AURC
    and E-AURC (:func:`~clearsight.metrics.risk_coverage`) of the wording's confidence gating
    its answered items, each with a scene-bootstrap interval. Lower is better; E-AURC is 0 for
    a confidence that ranks every right answer above every wrong one."""
    rows = [
        labels | _selective_row(sub, signal, analysis)
        for labels, signal, sub in _confidence_cells(data, task)
    ]
    return pd.DataFrame(rows)


_SPREAD_STATS = ("median", "q25", "q75", "p10", "p90", "p90_p10")


def _spread(values: pd.Series, prefix: str) -> dict[str, float]:
    """Median, quartiles, P10, P90 and P90 / P10 of ``values`` as ``{prefix}_{stat}``; NaN
    where there are no values, and the ratio NaN where P10 is not positive."""
    v = values.dropna().to_numpy(dtype=np.float64)
    if v.size == 0:
        return {f"{prefix}_{k}": math.nan for k in _SPREAD_STATS}
    p10, q25, med, q75, p90 = (float(x) for x in np.percentile(v, [10, 25, 50, 75, 90]))
    ratio = p90 / p10 if p10 > 0 else math.nan
    names = (f"{prefix}_{k}" for k in _SPREAD_STATS)
    return dict(zip(names, (med, q25, q75, p10, p90, ratio), strict=True))


def veq_summary(veq: pd.DataFrame) -> pd.DataFrame:
    """Per ImageNet-C severity, over the scenes: the median, quartiles, 10th and 90th
    percentiles and the spread P90 / P10 (the paper's image summaries) of the gain-matched
    V_eq in metres (``veq_*``) and of the retained contrast gain (``gain_*``; NaN for a run
    made before gains were stored), and ``n_scenes``.

    Percentiles are numpy's linear interpolation (``method="linear"``); a spread is NaN where
    P10 is not positive (a V_eq of 0: no retained detail).
    """
    columns = ["severity", *(f"{p}_{k}" for p in ("veq", "gain") for k in _SPREAD_STATS)]
    if veq.empty:
        return pd.DataFrame(columns=[*columns, "n_scenes"])
    gains = veq["gain"] if "gain" in veq else pd.Series(math.nan, index=veq.index)
    rows = [
        {"severity": severity}
        | _spread(group["v_eq_m"], "veq")
        | _spread(gains[group.index], "gain")
        | {"n_scenes": len(group)}
        for severity, group in veq.groupby("severity")
    ]
    return pd.DataFrame(rows, columns=[*columns, "n_scenes"])


def imagenet_c_table(data: RunData, analysis: SweepAnalysis, task: str) -> pd.DataFrame:
    """Severity → median / IQR of V_eq and each model's accuracy (interval) per wording.

    Columns: ``model``, ``wording``, ``severity``, ``veq_*`` and ``gain_*`` (median, q25, q75,
    p10, p90, p90_p10) and ``n_scenes`` (:func:`veq_summary`), ``n``
    (items), ``accuracy``, ``acc_low``, ``acc_high``, ``clean_accuracy``, ``delta_pp`` (accuracy
    − clean, percentage points).
    """
    curves = analysis.curves
    acc = curves[(curves["signal"] == "accuracy") & (curves["task"] == task)]
    nominal = acc[acc["condition"] == "imagenet_c"]
    if nominal.empty:
        return pd.DataFrame()
    clean = acc[acc["condition"] == "clean"].set_index(["model", "wording"])["estimate"]
    table = nominal.rename(
        columns={"x": "severity", "estimate": "accuracy", "low": "acc_low", "high": "acc_high"}
    )[["model", "wording", "severity", "n", "accuracy", "acc_low", "acc_high"]]
    keys = list(zip(table["model"], table["wording"], strict=True))
    table = table.assign(clean_accuracy=[clean.get(k, math.nan) for k in keys])
    table["delta_pp"] = 100.0 * (table["accuracy"] - table["clean_accuracy"])
    summary = veq_summary(data.veq)
    table = table.merge(summary, on="severity", how="left")
    return table.reset_index(drop=True)


@dataclass(frozen=True)
class DynamicRanges:
    """Accuracy dynamic ranges in percentage points (paper §IV-E): over the ImageNet-C
    severities (``nominal``) and over the physical fog levels (``physical``), each the largest
    minus the smallest per-step accuracy of the items pooled across models, tasks and
    wordings. NaN where a run has no items of that kind."""

    nominal_pp: float
    physical_pp: float


def dynamic_ranges(records: pd.DataFrame, models: Sequence[str] | None = None) -> DynamicRanges:
    r"""The nominal and physical accuracy dynamic ranges of ``records`` (optionally only
    ``models``' items): with :math:`a_s` the accuracy of all pooled items at severity s and
    :math:`a_v` at fog level v, :math:`100 (\max_s a_s - \min_s a_s)` and
    :math:`100 (\max_v a_v - \min_v a_v)`."""
    rec = records if models is None else records[records["model"].isin(list(models))]

    def spread(sub: pd.DataFrame, by: str) -> float:
        if sub.empty:
            return math.nan
        acc = sub.groupby(by)["correct"].mean()
        return float(100.0 * (acc.max() - acc.min()))

    return DynamicRanges(
        spread(rec[rec["condition"] == "imagenet_c"], "severity"),
        spread(rec[rec["condition"] == "fog"], "level_m"),
    )


@dataclass(frozen=True)
class DepthSummary:
    """The depth of a run's scene set (paper §IV-A: "the median of per-image median depths"):
    the median and quartiles over scenes of each scene's median depth (m), the mean over
    scenes of each scene's share of pixels at the clip bounds (at or below 0.5 m, at or
    beyond 80 m), and the number of scenes. NaN with ``n_scenes`` 0 where no profile is
    stored."""

    median_m: float
    q25_m: float
    q75_m: float
    near_share: float
    far_share: float
    n_scenes: int

    def describe(self) -> str:
        """One line for the report header, e.g. 'median of per-image median depths 7.3 m
        (IQR 2.4–14.5 m over 22 scenes); pixels at the clip bounds: 0.1 % ≤ 0.5 m, 9.8 %
        ≥ 80 m'."""
        if self.n_scenes == 0:
            return "no depth profile stored (a run made before profiles were)"
        return (
            f"median of per-image median depths {fmt_num(self.median_m, 1)} m "
            f"(IQR {fmt_range(self.q25_m, self.q75_m, 1)} m over {self.n_scenes} scenes); "
            f"pixels at the clip bounds: {fmt_num(100 * self.near_share, 1)} % ≤ 0.5 m, "
            f"{fmt_num(100 * self.far_share, 1)} % ≥ 80 m"
        )


def depth_summary(depth: pd.DataFrame) -> DepthSummary:
    """The :class:`DepthSummary` of per-scene depth profiles (``RunData.depth``; numpy's
    linear percentiles over the scenes' medians)."""
    if depth.empty:
        return DepthSummary(math.nan, math.nan, math.nan, math.nan, math.nan, 0)
    q25, med, q75 = np.percentile(depth["median_m"].to_numpy(dtype=float), [25, 50, 75])
    near, far = (float(depth[c].mean()) for c in ("near_share", "far_share"))
    return DepthSummary(float(med), float(q25), float(q75), near, far, len(depth))
