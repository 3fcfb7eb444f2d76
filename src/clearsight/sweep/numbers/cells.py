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
wanted (:mod:`~clearsight.sweep.numbers.pairing`). :mod:`clearsight.sweep.numbers.crossings`
evaluates it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.metrics import cluster_sums
from clearsight.sweep.numbers.clusters import by_cluster
from clearsight.sweep.numbers.pairing import WPairing, w_pairing_of, w_pairs
from clearsight.sweep.results import ARMS, RunData
from clearsight.sweep.signals import ACCURACY, SIGNALS, Signal, by_name, signal_values, signals_for

__all__ = [
    "Column",
    "CrossingFields",
    "Design",
    "FloatArray",
    "Grid",
    "Group",
    "IntArray",
    "design",
    "ordered_columns",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

# A condition column of the bootstrap: (condition, x), x the level (m), severity, or 0.
Column = tuple[str, float]
#: The clean and the blank images' columns.
CLEAN: Column = ("clean", 0.0)
BLANK: Column = ("blank", 0.0)
# A signal group of the bootstrap: (model, task, wording, signal).
Group = tuple[str, str, str, str]


def _column_codes(records: pd.DataFrame) -> pd.Series:
    """Each record's condition column as a (condition, x) tuple (see :data:`Column`)."""
    cond = records["condition"].astype(str)
    x = np.where(
        cond.isin(list(ARMS)),
        records["level_m"].to_numpy(dtype=float),
        np.where(cond == "imagenet_c", records["severity"].to_numpy(dtype=float), 0.0),
    )
    return pd.Series(list(zip(cond, x.tolist(), strict=True)), index=records.index)


def ordered_columns(present: set[Column], levels: dict[str, tuple[float, ...]]) -> list[Column]:
    """Columns in display order: clean, each arm's levels, blank, shuffled, ImageNet-C."""
    order: list[Column] = [CLEAN]
    for arm, lv in levels.items():
        order += [(arm, v) for v in lv]
    order += [BLANK, ("shuffled", 0.0)]
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
    direction: FloatArray  # per crossing: +1 the signal rises to its floor, -1 it falls


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


# One crossing of a level grid: (crossing, group, clean column or -1, constant floor or NaN,
# accuracy group of its blank floor, the columns of its levels, +1 / -1 the signal rises /
# falls towards its floor).
GridRow = tuple[int, int, int, float, int, list[int], float]


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


def _floor(signal: Signal, chance: float, has_blank: bool) -> tuple[float, str]:
    """The constant floor of a crossing of ``signal`` (NaN: the blank accuracy, read per
    replicate) and where it comes from: the blank accuracy (chance without a blank control),
    chance 1/k or 1.0 (:data:`~clearsight.sweep.signals.Floor`)."""
    if signal.floor == "blank":
        return (math.nan, "blank") if has_blank else (chance, "chance (no blank control)")
    return (1.0 if signal.floor == "one" else chance), signal.floor_source


@dataclass(frozen=True)
class _Totals:
    """The item count of every (group, column) cell (``totals``, flat: group × column)."""

    columns: dict[Column, int]
    totals: FloatArray

    def has(self, g: int, col: Column) -> bool:
        """Whether group ``g`` has an item at the column ``col``."""
        return col in self.columns and self.totals[g * len(self.columns) + self.columns[col]] > 0

    def items(self, g: int, arm: str, levels: tuple[float, ...]) -> int:
        """Group ``g``'s items over the ``levels`` of ``arm``."""
        n_k = len(self.columns)
        return int(sum(self.totals[g * n_k + self.columns[(arm, v)]] for v in levels))


def _fields(
    group: Group, arm: str, floor_source: str, clean_ok: bool, n_items: int
) -> CrossingFields:
    """What names the crossing of ``group`` in ``arm``, where its floor and clean value come
    from and its number of items over the arm's levels."""
    model, task, wording, signal = group
    return CrossingFields(
        model=model,
        task=task,
        arm=arm,
        wording=wording,
        signal=signal,
        floor_source=floor_source,
        clean_source="clean" if clean_ok else "clearest level (no clean control)",
        n_items=n_items,
    )


def _crossing_rows(
    data: RunData,
    groups: list[Group],
    chance: dict[tuple[str, str, str], float],
    columns: list[Column],
    totals: FloatArray,
    pairing: WPairing,
) -> tuple[list[CrossingFields], list[tuple[int, int]], dict[tuple[float, ...], list[GridRow]]]:
    """What to compute for every arm × group the config asked: each crossing's descriptive
    fields with its floor (:func:`_floor`) and clean reference, the (accuracy, awareness)
    pairs whose widths W are wanted (``pairing``:
    :data:`~clearsight.sweep.numbers.pairing.W_PAIRINGS`), and the crossings grouped by
    level grid."""
    g_index = {grp: i for i, grp in enumerate(groups)}
    cells = _Totals({c: i for i, c in enumerate(columns)}, totals)
    crossings: list[CrossingFields] = []
    acc_x: dict[tuple[str, str, str, str], int] = {}  # (arm, model, task, wording) -> crossing
    aware: list[int] = []
    grid_rows: dict[tuple[float, ...], list[GridRow]] = {}
    for arm, levels in data.levels.items():
        for g, (model, task, wording, signal) in enumerate(groups):
            if not data.asked(model, arm) or any((arm, v) not in cells.columns for v in levels):
                continue  # the arm never shown to the model, or no record at a level: no row
            base = (model, task, wording)
            acc_g = g_index[(*base, ACCURACY.name)]
            floor, floor_source = _floor(by_name(signal), chance[base], cells.has(acc_g, BLANK))
            x = len(crossings)
            n_items = cells.items(g, arm, levels)
            crossings.append(_fields(groups[g], arm, floor_source, cells.has(g, CLEAN), n_items))
            clean_col = cells.columns[CLEAN] if cells.has(g, CLEAN) else -1
            level_cols = [cells.columns[(arm, v)] for v in levels]
            direction = 1.0 if by_name(signal).rises else -1.0
            grid_rows.setdefault(levels, []).append(
                (x, g, clean_col, floor, acc_g, level_cols, direction)
            )
            if signal == ACCURACY.name:
                acc_x[(arm, *base)] = x
            else:
                aware.append(x)
    keys = [(c["arm"], c["model"], c["task"], c["wording"]) for c in crossings]
    return crossings, w_pairs(keys, acc_x, aware, pairing), grid_rows


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
                direction=np.array([r[6] for r in rows], dtype=np.float64),
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
    columns = ordered_columns(set(_column_codes(rec)), data.levels)
    scene_sums, scene_counts, scenes = _cell_sums(rec, groups, columns)
    clusters, (sums, counts) = by_cluster(rec, scenes, scene_sums, scene_counts)
    pairing = pairing or w_pairing_of(data)
    crossings, pairs, grid_rows = _crossing_rows(
        data, groups, chance, columns, counts.sum(axis=0), pairing
    )
    blank_col = columns.index(BLANK) if BLANK in columns else -1
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
