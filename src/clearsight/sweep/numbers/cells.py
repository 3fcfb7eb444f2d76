"""The sweep's records as the cells of one scene bootstrap, and what to compute from them.

A *cell* is one signal group — (model, task, wording, signal) — at one condition column —
(condition, x): clean, each fog/water/turbid level in metres, blank, shuffled, each ImageNet-C
severity. Signals (docs/methods.md §4): ``accuracy``, the share correct, abstentions counting as
not correct; ``internal_conf``, the letter read-out's probability of its best content option
(letter wordings); ``verbal_conf``, the parsed verbalized confidence (verbal wordings; unparsed
replies are left out); ``abstain``, the share of answers that pick the abstain option.

:func:`design` scatters every record's signal values into per-scene sums and counts of every
cell (one ``(scenes, cells)`` matrix each, :func:`clearsight.metrics.cluster_sums`), summed per
cluster — the scenes cut from one source photo — and says
which crossings to compute from them: for every arm the config showed a model, every group's
crossing with its floor — accuracy: the blank-image accuracy of the same model, task and
wording (chance where the run has no blank control); confidences: 1/k, k the number of content
options; abstain rate: 1.0 — and its clean reference, grouped by level grid so all crossings of
one grid are one batch call; and the (accuracy, awareness) pairs whose blind-spot widths W are
wanted (:data:`W_PAIRINGS`): by default (``main``, the paper's reading of W = log10(V*_acc /
V*_aware)) every awareness signal of a model, task and arm with *one* accuracy crossing, that
of the main wording (:func:`~clearsight.sweep.results.primary_wording` among the wordings the
model was asked: the reason-naming letter wording first); ``own`` pairs each awareness signal
with the accuracy of its own wording, so both crossings are measured on one set of replies.
:mod:`clearsight.sweep.numbers.crossings` evaluates it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, TypedDict

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.metrics import cluster_sums
from clearsight.sweep.results import ARMS, RunData, primary_wording
from clearsight.sweep.signals import SIGNALS, by_name, signal_values, signals_for

__all__ = [
    "W_PAIRINGS",
    "Column",
    "CrossingFields",
    "Design",
    "FloatArray",
    "Grid",
    "Group",
    "IntArray",
    "WPairing",
    "design",
    "w_pairing_of",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

# A condition column of the bootstrap: (condition, x), x the level (m), severity, or 0.
Column = tuple[str, float]
# A signal group of the bootstrap: (model, task, wording, signal).
Group = tuple[str, str, str, str]


#: How W pairs an awareness crossing with an accuracy crossing: ``main`` (the paper: one
#: accuracy crossing per model, task and arm, the main wording's) or ``own`` (the awareness
#: signal's own wording's accuracy).
WPairing = Literal["main", "own"]
W_PAIRINGS: tuple[WPairing, ...] = ("main", "own")


def w_pairing_of(data: RunData) -> WPairing:
    """The W pairing a run's manifest records (its ``w_accuracy`` entry, or its config's),
    ``main`` — the paper's — for a run whose manifest names none."""
    config = data.manifest.get("config", {})
    chosen = data.manifest.get("w_accuracy", config.get("w_accuracy", "main"))
    return "own" if chosen == "own" else "main"


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


class CrossingFields(TypedDict):
    """What names one crossing and where its floor and clean value come from (the first
    columns of the crossings frame, :class:`clearsight.sweep.numbers.crossings.SceneBootstrap`)."""

    model: str
    task: str
    arm: str
    wording: str
    signal: str
    floor_source: str
    clean_source: str
    n_items: int


@dataclass(frozen=True)
class Grid:
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
class Design:
    """Per-cluster sums of every (group, column) cell and what to compute from them; a
    cluster is the scenes cut from one source photo (``records["cluster"]``)."""

    groups: list[Group]
    columns: list[Column]
    sums: FloatArray  # (C, G*K), C clusters
    counts: FloatArray  # (C, G*K)
    scene_counts: FloatArray  # (G*K,) number of scenes with at least one item
    n_scenes: int
    clusters: list[str]  # each row's cluster (the smallest scene id of its photo)
    crossings: list[CrossingFields]  # what names each crossing
    grids: list[Grid]
    pairs: list[tuple[int, int]]  # (accuracy crossing, awareness crossing)
    pairing: WPairing  # how the pairs were chosen


def _cell_sums(
    records: pd.DataFrame, groups: list[Group], columns: list[Column]
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.str_]]:
    """Scatter every signal value into its (scene, group × column) cell: sums, counts and the
    scenes of the rows (sorted)."""
    scenes = np.unique(records["scene"].astype(str).to_numpy().astype(np.str_))
    col_index = {c: i for i, c in enumerate(columns)}
    codes = _column_codes(records).map(col_index).to_numpy(dtype=np.intp)
    scene_code = np.searchsorted(scenes, records["scene"].astype(str).to_numpy())
    positions = records.groupby(["model", "task", "wording"], sort=False).indices
    values = {s.name: signal_values(records, s.name).to_numpy() for s in SIGNALS}
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
    return sums, counts, scenes


def _by_cluster(
    records: pd.DataFrame, scenes: npt.NDArray[np.str_], *per_scene: FloatArray
) -> tuple[list[str], list[FloatArray]]:
    """The per-scene rows summed per bootstrap cluster (a record's ``cluster``: its scene's
    source photo, :func:`clearsight.sweep.results.photo_clusters`), clusters in sorted order:
    a run whose every scene is its own cluster keeps its rows exactly."""
    pairs = records[["scene", "cluster"]].astype(str).drop_duplicates("scene")
    label = dict(zip(pairs["scene"], pairs["cluster"], strict=True))
    labels, member = np.unique([label[s] for s in scenes], return_inverse=True)
    if labels.size == scenes.size:
        return labels.tolist(), list(per_scene)
    summed = []
    for rows in per_scene:
        out = np.zeros((labels.size, rows.shape[1]))
        np.add.at(out, member, rows)
        summed.append(out)
    return labels.tolist(), summed


# One crossing of a level grid: (crossing, group, clean column or -1, constant floor or NaN,
# accuracy group of its blank floor, the columns of its levels).
GridRow = tuple[int, int, int, float, int, list[int]]


def _groups(rec: pd.DataFrame) -> tuple[list[Group], dict[tuple[str, str, str], float]]:
    """Every (model, task, wording, signal) group of the records in order of appearance, and
    the chance level 1/k of each (model, task, wording), k the median number of options."""
    groups: list[Group] = []
    chance: dict[tuple[str, str, str], float] = {}
    for (model, task, wording), sub in rec.groupby(["model", "task", "wording"], sort=False):
        key = (str(model), str(task), str(wording))
        groups += [(*key, s) for s in signals_for(key[2], key[0])]
        k = float(sub["n_options"].median()) if sub["n_options"].notna().any() else math.nan
        chance[key] = 1.0 / k if k > 0 else math.nan
    return groups, chance


def _crossing_rows(
    data: RunData,
    groups: list[Group],
    chance: dict[tuple[str, str, str], float],
    columns: list[Column],
    totals: FloatArray,
    pairing: WPairing,
) -> tuple[list[CrossingFields], list[tuple[int, int]], dict[tuple[float, ...], list[GridRow]]]:
    """What to compute for every arm × group the config asked: each crossing's descriptive
    fields with its floor (accuracy: the blank accuracy, else chance; confidences: 1/k;
    abstain rate: 1.0) and clean reference, the (accuracy, awareness) pairs whose widths W are
    wanted (``pairing``: :data:`W_PAIRINGS`), and the crossings grouped by level grid."""
    n_k = len(columns)
    g_index = {grp: i for i, grp in enumerate(groups)}
    col_index = {c: i for i, c in enumerate(columns)}

    def has(g: int, col: Column) -> bool:
        return col in col_index and totals[g * n_k + col_index[col]] > 0

    crossings: list[CrossingFields] = []
    acc_x: dict[tuple[str, str, str, str], int] = {}  # (arm, model, task, wording) -> crossing
    aware: list[int] = []
    grid_rows: dict[tuple[float, ...], list[GridRow]] = {}
    for arm, levels in data.levels.items():
        for g, (model, task, wording, signal) in enumerate(groups):
            if not data.asked(model, arm) or any((arm, v) not in col_index for v in levels):
                continue  # the arm never shown to the model, or no record at a level: no row
            base = (model, task, wording)
            acc_g = g_index[(*base, "accuracy")]
            if signal == "accuracy":
                from_blank = has(acc_g, ("blank", 0.0))
                floor = math.nan if from_blank else chance[base]
                floor_source = "blank" if from_blank else "chance (no blank control)"
            else:
                aware_signal = by_name(signal)
                floor = 1.0 if aware_signal.floor == "one" else chance[base]
                floor_source = aware_signal.floor_source
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
                acc_x[(arm, *base)] = x
            else:
                aware.append(x)
    return crossings, _w_pairs(crossings, acc_x, aware, pairing), grid_rows


def _w_pairs(
    crossings: list[CrossingFields],
    acc_x: dict[tuple[str, str, str, str], int],
    aware: list[int],
    pairing: WPairing,
) -> list[tuple[int, int]]:
    """(accuracy crossing, awareness crossing) of every awareness crossing: the accuracy of
    the main wording among those with an accuracy crossing of the same model, task and arm
    (``main``), or of its own wording (``own``)."""
    asked: dict[tuple[str, str, str], list[str]] = {}
    for arm, model, task, wording in acc_x:
        asked.setdefault((arm, model, task), []).append(wording)
    pairs = []
    for x in aware:
        c = crossings[x]
        where = (c["arm"], c["model"], c["task"])
        wording = c["wording"]
        if pairing == "main":
            present = asked[where]
            main = primary_wording(present, verbal=False) or primary_wording(present, verbal=True)
            wording = main or wording
        pairs.append((acc_x[(*where, wording)], x))
    return pairs


def _grids(grid_rows: dict[tuple[float, ...], list[GridRow]], blank_col: int) -> list[Grid]:
    """The crossings of each level grid as the arrays of one batch call."""
    grids = []
    for levels, rows in grid_rows.items():
        arr = np.array([r[:3] for r in rows], dtype=np.intp)
        grids.append(
            Grid(
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


def design(data: RunData, pairing: WPairing | None = None) -> Design | None:
    """Groups, columns, per-scene sums and the crossing/W specification of a run, W paired
    by ``pairing`` (None: the run's own, :func:`w_pairing_of`)."""
    rec = data.records
    if rec.empty:
        return None
    groups, chance = _groups(rec)
    columns = _ordered_columns(set(_column_codes(rec)), data.levels)
    scene_sums, scene_counts, scenes = _cell_sums(rec, groups, columns)
    clusters, (sums, counts) = _by_cluster(rec, scenes, scene_sums, scene_counts)
    pairing = pairing or w_pairing_of(data)
    crossings, pairs, grid_rows = _crossing_rows(
        data, groups, chance, columns, counts.sum(axis=0), pairing
    )
    blank_col = columns.index(("blank", 0.0)) if ("blank", 0.0) in columns else -1
    return Design(
        groups=groups,
        columns=columns,
        sums=sums,
        counts=counts,
        scene_counts=(scene_counts > 0).sum(axis=0).astype(np.float64),
        n_scenes=int(scenes.size),
        clusters=clusters,
        crossings=crossings,
        grids=_grids(grid_rows, blank_col),
        pairs=pairs,
        pairing=pairing,
    )
