r"""Calibration under weather (issue 45 item 3): post-hoc maps fitted on the clean images,
applied at every level of every arm, with a photo bootstrap that refits inside each draw.

For each model × task × wording (the groups of the calibration table,
:mod:`~clearsight.sweep.numbers.confidence`) three maps of the wording's confidence are fitted
on the *clean* condition's answered items (:mod:`clearsight.metrics.recalibration`):

- ``temperature``: temperature scaling of the content letters' log-probabilities, which the
  records store as ``letter_probs`` (a letter the model gave no probability is floored at
  :data:`LETTER_FLOOR` before its log is taken); the calibrated confidence is the chosen
  letter's probability :math:`\max_k \operatorname{softmax}(z / T)_k`, equal to the internal
  confidence at :math:`T = 1`. A verbalized confidence has no letters: no temperature map;
- ``platt``: the logistic map of the confidence's logit (none where the clean answers are all
  right, all wrong or separated by their confidence: the fit has no maximum);
- ``isotonic``: the non-decreasing step map;

and ``none``, the confidence as read. Each map is then applied at the clean images and at
every level of every arm — fog, water, turbid, and each ImageNet-C corruption whose severities
form a metre grid (:func:`~clearsight.sweep.images.corruptions.metre_grid`) — and scored on the
answered items: ECE, Brier and AURC. The clean row is in-sample (the maps were fitted there).

**W of the calibrated confidence**: the mean calibrated confidence over the items that read a
confidence (the curve of :mod:`~clearsight.sweep.numbers.cells`) crosses half-way from its clean
value to chance 1/k like the confidence's own curve; W = log10(V*_acc / V*_conf) with the
accuracy crossing of the run's W pairing (:mod:`~clearsight.sweep.numbers.pairing`). A map
changes no answer (temperature keeps the argmax; the others only relabel a confidence), so
V*_acc is the same for every map: only the confidence's crossing can move.

**The conformal threshold**: :func:`~clearsight.metrics.conformal_threshold` at ``alpha`` on the
clean answered items (answer where the confidence is at least :math:`\hat\tau`, abstain below),
applied per level: the coverage it keeps (share of the answered items still answered) and the
risk it reaches (share answered *and* wrong). The guarantee (risk at most alpha) holds for
answers exchangeable with the clean ones; where a level's risk interval lies above alpha it has
stopped holding there.

**Intervals** resample source photos with the draws of the run's scene bootstrap (the same
seed and photos: :func:`~clearsight.metrics.cluster_bootstrap`): in each draw the items of
every drawn photo enter as often as it was drawn, the maps and the threshold are fitted again
on that draw's clean items and every number is recomputed, so the intervals carry the fit's
own uncertainty. A draw where a fit has no solution (Platt on answers all right) leaves that
map's numbers out of the interval.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.metrics import (
    BootstrapResult,
    CrossingBatch,
    IsotonicMap,
    PlattMap,
    apply_isotonic,
    apply_platt,
    apply_temperature,
    bin_edges,
    blind_spot_width_batch,
    cluster_bootstrap,
    conformal_threshold,
    crossing_visibility_batch,
    fit_isotonic,
    fit_platt,
    fit_temperature,
)
from clearsight.store import RunStore
from clearsight.sweep.images.corruptions import metre_grid
from clearsight.sweep.numbers.cells import FloatArray, IntArray
from clearsight.sweep.numbers.pairing import w_pairing_of
from clearsight.sweep.results import RunData, confidence_signal, level_label, primary_wording
from clearsight.sweep.specs import PROTOCOL
from clearsight.validate import InputError

__all__ = [
    "DEFAULT_ALPHA",
    "FOCUS_M",
    "LETTER_FLOOR",
    "MAPS",
    "Recalibrated",
    "alpha_of",
    "letter_logprobs",
    "recalibrated_numbers",
]

#: The maps, ``none`` (the confidence as read) first.
MAPS: tuple[str, ...] = ("none", "temperature", "platt", "isotonic")
#: The conformal threshold's target risk where the run's configuration names none.
DEFAULT_ALPHA = 0.05
#: A letter's probability is floored here before its log is taken (an API's top-k read-out
#: gives a letter outside its top k no probability at all).
LETTER_FLOOR = 1e-12
_STATS = ("ece", "brier", "aurc")
#: The visibility the report's summary reads each arm at (its nearest level): 3.9 m, where fog
#: has taken most models' accuracy and a clean-image calibration is put to the test.
FOCUS_M = 3.90625
#: The equal-width bins of ECE (:func:`~clearsight.metrics.ece`'s default).
ECE_BINS = 10
_LETTERS = tuple(chr(c) for c in range(ord("A"), ord("Z") + 1))


@dataclass(frozen=True)
class Recalibrated:
    """What the report states of calibration under weather (module docstring).

    ``alpha``: the conformal threshold's target risk. ``fits``: one row per model × task ×
    wording: ``signal``, ``n_fit`` (clean answered items), ``temperature``, ``platt_a``,
    ``platt_b``, ``isotonic_steps``, ``threshold`` and ``note`` (a map not fitted, and why).
    ``levels``: one row per group × arm × level (``level``: 'clean' or the label in metres;
    ``level_m``: inf for clean) × map: ``n_scored`` and ``ece``, ``brier``, ``aurc``, each
    with ``_low`` / ``_high``. ``conformal``: one row per group × arm × level: ``threshold``,
    ``coverage``, ``risk`` with their intervals and ``holds`` (the risk interval's low end at
    most alpha). ``widths``: one row per group × arm × map: ``v_acc_m``, ``v_conf_m`` (with
    ``_low`` / ``_high``), ``w``, ``w_bound``, ``w_low``, ``w_high``. ``breaks``: one row per
    group × arm: ``level``/``level_m`` of the clearest level where the guarantee stops
    holding ('' / NaN: it holds at every level). ``summary``: one row per group × arm × map:
    ECE at the clean images (``ece_clean``) and at the arm's level nearest
    :data:`FOCUS_M` (``at``, ``ece_at``), each with ``_low`` / ``_high``, and the map's
    ``w``, ``w_low``, ``w_high``, ``w_bound``."""

    alpha: float
    fits: pd.DataFrame
    levels: pd.DataFrame
    conformal: pd.DataFrame
    widths: pd.DataFrame
    breaks: pd.DataFrame
    summary: pd.DataFrame

    @property
    def empty(self) -> bool:
        """Whether no group had clean answers to fit on."""
        return self.fits.empty


def alpha_of(data: RunData) -> float:
    """The conformal target risk of a run: its configuration's ``conformal_alpha``, else
    :data:`DEFAULT_ALPHA`."""
    return float(data.manifest.get("config", {}).get("conformal_alpha", DEFAULT_ALPHA))


# ------------------------------------------------------------------------------ the letters


def letter_logprobs(run_dir: Path, keys: list[str]) -> tuple[FloatArray, IntArray] | None:
    """The content letters' log-probabilities ``(N, K)`` of the records ``keys`` (letters in the
    question's order, the abstain letter left out, each floored at :data:`LETTER_FLOOR`) and
    each record's correct letter's index; None where a record has no letter probabilities
    stored or the records differ in their number of content letters (no one temperature then
    fits them all)."""
    columns = ["key", "question.letters", "question.abstain", "question.correct"]
    with RunStore.open(run_dir, read_only=True) as store:
        frame = store.to_frame(
            status="ok",
            kind=PROTOCOL,
            columns=[*columns, *(f"letter_probs.{x}" for x in _LETTERS)],
            where={"key": keys},
        )
    if any(c not in frame for c in columns):
        return None
    frame = frame.astype({c: object for c in columns}).set_index("key").reindex(keys)
    probs: FloatArray | None = None
    labels = np.full(len(keys), -1, dtype=np.intp)
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
        probs = np.full((len(keys), len(names)), np.nan) if probs is None else probs
        probs[rows] = frame[names].to_numpy(dtype=np.float64)[rows]
        right = frame["question.correct"].to_numpy()[rows]
        labels[rows] = [content.index(r) if r in content else -1 for r in right]
    if probs is None or not np.isfinite(probs).all() or (labels < 0).any():
        return None
    return np.log(np.clip(probs, LETTER_FLOOR, 1.0)), labels


# ------------------------------------------------------------------------------ the items


@dataclass(frozen=True)
class _Items:
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

    def take(self, idx: IntArray) -> _Items:
        """The items ``idx`` (repeated where an index repeats)."""
        return _Items(
            self.conf[idx],
            self.correct[idx],
            self.answered[idx],
            self.cluster[idx],
            self.cell[idx],
            None if self.z is None else self.z[idx],
            None if self.label is None else self.label[idx],
        )

    def resampled(self, weights: FloatArray) -> _Items:
        """Every item as often as its cluster's weight (one bootstrap draw)."""
        times = weights[self.cluster].astype(np.intp)
        return self.take(np.repeat(np.arange(self.cluster.size), times))

    def scored(self, cell: int) -> npt.NDArray[np.bool_]:
        """The answered items with a confidence in ``cell``."""
        return (self.cell == cell) & self.answered & np.isfinite(self.conf)


@dataclass(frozen=True)
class _Group:
    """One model × task × wording: its items, the items of the accuracy its W pairs with,
    chance 1/k (the confidence's floor) and its cells: (arm, level_m) of each, clean first
    (arm '', inf); ``arms``: each arm's cells, clearest level first."""

    model: str
    task: str
    wording: str
    signal: str
    chance: float
    items: _Items
    accuracy: _Items
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


def _placed_arms(data: RunData, veq: pd.DataFrame) -> pd.DataFrame:
    """The records of every arm on the metre axis with their ``arm`` and ``level_m``: the
    physical arms', and each ImageNet-C corruption's whose severities form a metre grid, its
    severity at its grid level (the corruption's name as the arm)."""
    physical = data.records[data.records["condition"].isin(list(data.levels))]
    parts = [physical.assign(arm=physical["condition"])]
    imagenet = data.records[data.records["condition"] == "imagenet_c"].assign(corruption="fog")
    corrupted = pd.concat([imagenet, data.corrupted], ignore_index=True)
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
    rows: pd.DataFrame, signal: str, clusters: npt.NDArray[Any], run_dir: Path | None
) -> _Items:
    """``rows`` (with their ``cell``) as :class:`_Items`; with their letters read from the run
    in ``run_dir`` (None: not read)."""
    letters = None
    if run_dir is not None and "key" in rows:
        try:
            letters = letter_logprobs(run_dir, rows["key"].astype(str).tolist())
        except InputError:  # records made up in memory: no run to read letters from
            letters = None
    return _Items(
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
    arm's cells (:class:`_Group`)."""
    placed = _placed_arms(data, veq)
    cells, arms = _cells(placed)
    rec = data.records
    clean = rec[rec["condition"] == "clean"].assign(arm="", level_m=math.inf)
    blank = rec[rec["condition"] == "blank"].assign(arm="blank", level_m=math.inf)
    frame = pd.concat([clean, placed, blank], ignore_index=True)
    index = {c: i for i, c in enumerate(cells)} | {("blank", math.inf): len(cells)}
    pairs = zip(frame["arm"].astype(str), frame["level_m"].astype(float), strict=True)
    frame["cell"] = [index.get(p, -1) for p in pairs]
    return frame, cells, arms


def _groups(data: RunData, veq: pd.DataFrame) -> Iterator[_Group]:
    """Each model × task × wording with clean records, as a :class:`_Group`."""
    frame, cells, arms = _celled(data, veq)
    clusters = np.unique(data.records["cluster"].astype(str).to_numpy())
    own = w_pairing_of(data) == "own"
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
                letters = data.run_dir if signal == "internal_conf" else None
                k = float(mine["n_options"].median())
                yield _Group(
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


# ------------------------------------------------------------------------------ fit and apply


@dataclass(frozen=True)
class _Fitted:
    """The maps and the threshold fitted on one set of clean answers (None: not fitted, with
    the reason in ``notes``)."""

    temperature: float | None
    platt: PlattMap | None
    isotonic: IsotonicMap | None
    threshold: float
    n_fit: int
    notes: tuple[str, ...]


def _fit(items: _Items, alpha: float) -> _Fitted:
    """The maps and the threshold on ``items``' clean answered items with a confidence."""
    fit = items.scored(0)
    conf, correct = items.conf[fit], items.correct[fit]
    if not fit.any():
        return _Fitted(None, None, None, math.inf, 0, ("no clean answer with a confidence",))
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
    return _Fitted(
        temperature=temperature,
        platt=platt,
        isotonic=fit_isotonic(conf, correct),
        threshold=conformal_threshold(conf, correct, alpha),
        n_fit=int(fit.sum()),
        notes=tuple(notes),
    )


def _mapped(fitted: _Fitted, items: _Items) -> dict[str, FloatArray]:
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


def _cell_scores(conf: FloatArray, correct: FloatArray, cell: IntArray, n_cells: int) -> FloatArray:
    """``(n_cells, 3)``: ECE (the 10 equal-width bins of :func:`~clearsight.metrics.ece`),
    Brier and AURC (:func:`~clearsight.metrics.risk_coverage`'s, ties entering together) of
    the items of each cell, every cell at once (NaN: a cell without items, or a confidence
    not fitted)."""
    out = np.full((n_cells, len(_STATS)), np.nan)
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


def _widths(
    group: _Group, accuracy: FloatArray, confidence: FloatArray, arm: str
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


def _draw(
    group: _Group, weights: FloatArray, alpha: float
) -> tuple[_Fitted, dict[str, FloatArray], FloatArray, FloatArray]:
    """One draw: the maps fitted on the sample in which each photo's items enter
    ``weights[photo]`` times, each map's per-cell ECE, Brier and AURC (``(cells, 3)``), the
    conformal coverage and risk per cell (``(2, cells)``) and the per-cell means of the
    accuracy and of each map's confidence (:func:`_widths`' inputs, stacked)."""
    items, accuracy = group.items.resampled(weights), group.accuracy.resampled(weights)
    fitted = _fit(items, alpha)
    mapped = _mapped(fitted, items)
    n = len(group.cells)
    scored = (items.cell >= 0) & (items.cell < n) & items.answered & np.isfinite(items.conf)
    cell, correct = items.cell[scored], items.correct[scored]
    scores = {m: _cell_scores(mapped[m][scored], correct, cell, n) for m in MAPS}
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


def _keys(group: _Group) -> list[Key]:
    """What each entry of :func:`_numbers` is, in its order."""
    n = range(len(group.cells))
    keys: list[Key] = [("threshold",)]
    keys += [("stat", str(c), m, stat) for m in MAPS for c in n for stat in _STATS]
    keys += [("conformal", str(c), what) for what in ("coverage", "risk") for c in n]
    for arm in group.arms:
        keys += [("v_acc", arm), *(("v_conf", arm, m) for m in MAPS)]
        keys += [("w", arm, m) for m in MAPS]
    return keys


def _numbers(group: _Group, weights: FloatArray, alpha: float) -> FloatArray:
    """Every number of ``group`` in one draw (:func:`_draw`; all ones: the run itself), in
    :func:`_keys`' order."""
    fitted, scores, conformal, means = _draw(group, weights, alpha)
    parts = [np.array([fitted.threshold]), *(scores[m].ravel() for m in MAPS), conformal.ravel()]
    for arm in group.arms:
        log_v, w, _ = _widths(group, means[0], means[1:, : len(group.cells)], arm)
        parts += [log_v, w]
    return np.concatenate(parts)


# ------------------------------------------------------------------------------ the tables


@dataclass(frozen=True)
class _Booted:
    """A group's numbers by key: point estimate, interval and the point W bounds by arm."""

    estimate: dict[Key, float]
    low: dict[Key, float]
    high: dict[Key, float]
    bounds: dict[str, npt.NDArray[np.str_]]


def _bootstrap(
    group: _Group, n_clusters: int, n_boot: int, seed: int, level: float, alpha: float
) -> _Booted:
    """:func:`_numbers` of the run and of each of the photo bootstrap's draws."""
    keys = _keys(group)
    found: BootstrapResult = cluster_bootstrap(
        lambda weights: np.array([_numbers(group, row, alpha) for row in weights]),
        n_clusters,
        n_boot=n_boot,
        level=level,
        seed=seed,
    )
    means = _draw(group, np.ones(n_clusters), alpha)[3]
    return _Booted(
        estimate=dict(zip(keys, found.estimate.tolist(), strict=True)),
        low=dict(zip(keys, found.low.tolist(), strict=True)),
        high=dict(zip(keys, found.high.tolist(), strict=True)),
        bounds={
            arm: _widths(group, means[0], means[1:, : len(group.cells)], arm)[2]
            for arm in group.arms
        },
    )


def _with_ci(booted: _Booted, key: Key, name: str) -> dict[str, float]:
    """``name``, ``name_low`` and ``name_high`` of the number ``key``."""
    return {
        name: booted.estimate[key],
        f"{name}_low": booted.low[key],
        f"{name}_high": booted.high[key],
    }


def _cells_of(group: _Group) -> Iterator[tuple[int, dict[str, object]]]:
    """Each scored cell (clean first, then each arm's levels) and what names it in a row."""
    for cell in (0, *(c for cs in group.arms.values() for c in cs)):
        arm, level_m = group.cells[cell]
        yield (
            cell,
            {
                "arm": arm,
                "level": "clean" if cell == 0 else f"{level_label(level_m)} m",
                "level_m": level_m,
                "n_scored": int(group.items.scored(cell).sum()),
            },
        )


def _level_rows(group: _Group, booted: _Booted) -> Iterator[dict[str, object]]:
    """The ``levels`` rows of a group (:class:`Recalibrated`)."""
    for cell, head in _cells_of(group):
        for m in MAPS:
            row = head | {"map": m}
            for stat in _STATS:
                row |= _with_ci(booted, ("stat", str(cell), m, stat), stat)
            yield row


def _conformal_rows(group: _Group, booted: _Booted, alpha: float) -> Iterator[dict[str, object]]:
    """The ``conformal`` rows of a group (:class:`Recalibrated`)."""
    for cell, head in _cells_of(group):
        risk = _with_ci(booted, ("conformal", str(cell), "risk"), "risk")
        holds = "" if math.isnan(risk["risk_low"]) else "yes" if risk["risk_low"] <= alpha else "no"
        yield head | {
            "alpha": alpha,
            **_with_ci(booted, ("threshold",), "threshold"),
            **_with_ci(booted, ("conformal", str(cell), "coverage"), "coverage"),
            **risk,
            "holds": holds,
        }


def _width_rows(group: _Group, booted: _Booted) -> Iterator[dict[str, object]]:
    """The ``widths`` rows of a group (:class:`Recalibrated`): V* in metres."""
    for arm in group.arms:
        acc = {k: 10.0**v for k, v in _with_ci(booted, ("v_acc", arm), "v_acc_m").items()}
        for j, m in enumerate(MAPS):
            conf = _with_ci(booted, ("v_conf", arm, m), "v_conf_m")
            yield (
                {"arm": arm, "map": m, **acc}
                | {k: 10.0**v for k, v in conf.items()}
                | {
                    **_with_ci(booted, ("w", arm, m), "w"),
                    "w_bound": str(booted.bounds[arm][j]),
                }
            )


def _fit_row(group: _Group, alpha: float) -> dict[str, object]:
    """The ``fits`` row of a group (:class:`Recalibrated`): the maps fitted on the run's
    clean answers."""
    fitted = _fit(group.items, alpha)
    return {
        "n_fit": fitted.n_fit,
        "temperature": math.nan if fitted.temperature is None else fitted.temperature,
        "platt_a": math.nan if fitted.platt is None else fitted.platt.a,
        "platt_b": math.nan if fitted.platt is None else fitted.platt.b,
        "isotonic_steps": 0 if fitted.isotonic is None else int(np.unique(fitted.isotonic.y).size),
        "threshold": fitted.threshold,
        "note": "; ".join(fitted.notes),
    }


def _breaks(conformal: pd.DataFrame) -> pd.DataFrame:
    """Per group × arm the clearest level where the conformal guarantee stops holding (its
    risk interval above alpha): ``level`` '' and ``level_m`` NaN where it holds throughout."""
    columns = ["model", "task", "wording", "signal", "arm", "level", "level_m"]
    rows = []
    arms = conformal[conformal["level"] != "clean"] if not conformal.empty else conformal
    for key, sub in arms.groupby(columns[:5], sort=False):
        broken = sub[sub["holds"] == "no"].sort_values("level_m", ascending=False)
        first = broken.iloc[0] if len(broken) else None
        where = ("", math.nan) if first is None else (first["level"], first["level_m"])
        rows.append((*key, *where))
    return pd.DataFrame(rows, columns=columns)


def _summary(levels: pd.DataFrame, widths: pd.DataFrame) -> pd.DataFrame:
    """The ``summary`` rows (:class:`Recalibrated`): per group × arm × map the clean ECE, the
    ECE at the arm's level nearest :data:`FOCUS_M` and W."""
    if levels.empty:
        return pd.DataFrame()
    names = ["model", "task", "wording", "signal", "map"]
    ece = ["ece", "ece_low", "ece_high"]
    clean = levels[levels["level"] == "clean"][names + ece]
    arms = levels[levels["level"] != "clean"]
    arms = arms.assign(off=(np.log(arms["level_m"].astype(float)) - math.log(FOCUS_M)).abs())
    nearest = arms[arms["off"] == arms.groupby([*names, "arm"])["off"].transform("min")]
    at = nearest[[*names, "arm", "level", *ece]].rename(columns={"level": "at"})
    out = at.rename(columns={c: c.replace("ece", "ece_at") for c in ece}).merge(
        clean.rename(columns={c: c.replace("ece", "ece_clean") for c in ece}), on=names
    )
    w = widths[[*names, "arm", "w", "w_low", "w_high", "w_bound"]]
    return out.merge(w, on=[*names, "arm"], how="left")


def recalibrated_numbers(
    data: RunData,
    veq: pd.DataFrame,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    alpha: float | None = None,
) -> Recalibrated:
    """The :class:`Recalibrated` numbers of a run (module docstring): ``veq`` the run's
    ImageNet-C V_eq table (:func:`~clearsight.sweep.images.corruptions.corruption_veq_table`,
    which places each corruption on the metre axis), ``n_boot`` draws of the photo bootstrap
    from ``seed`` (the scene bootstrap's own: the same photos in each draw) with ``level``
    intervals, ``alpha`` the conformal target risk (None: the run's, :func:`alpha_of`)."""
    alpha = alpha_of(data) if alpha is None else alpha
    n_clusters = int(np.unique(data.records["cluster"].astype(str).to_numpy()).size)
    fits, levels, conformal, widths = [], [], [], []
    for group in _groups(data, veq) if not data.records.empty else ():
        name = {
            "model": group.model,
            "task": group.task,
            "wording": group.wording,
            "signal": group.signal,
        }
        booted = _bootstrap(group, n_clusters, n_boot, seed, level, alpha)
        fits.append(name | _fit_row(group, alpha))
        levels += [name | row for row in _level_rows(group, booted)]
        conformal += [name | row for row in _conformal_rows(group, booted, alpha)]
        widths += [name | row for row in _width_rows(group, booted)]
    conformal_frame = pd.DataFrame(conformal)
    levels_frame, widths_frame = pd.DataFrame(levels), pd.DataFrame(widths)
    return Recalibrated(
        alpha=alpha,
        fits=pd.DataFrame(fits),
        levels=levels_frame,
        conformal=conformal_frame,
        widths=widths_frame,
        breaks=_breaks(conformal_frame),
        summary=_summary(levels_frame, widths_frame),
    )
