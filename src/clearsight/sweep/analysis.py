"""The visibility sweep's numbers, as typed values: what the report, the card and the guard read.

:func:`analyse_sweep` reads a finished (or partial) run and computes everything the paper
states about it, once, with one seeded scene bootstrap: the curves, crossing visibilities V*
and blind-spot widths W (:mod:`clearsight.sweep.numbers.crossings`), per task the full sweep and
controls tables, the calibration and selective-prediction tables with their intervals and the
numbers behind the reliability diagrams and risk-coverage curves
(:mod:`clearsight.sweep.numbers.confidence`), the ImageNet-C severities on the metre axis
(:mod:`clearsight.sweep.images.equivalence`), the depth of the scene set and, for guarded models,
the guard's estimate against the true visibility (:mod:`clearsight.sweep.numbers.guarded`). Nothing
here renders: :mod:`clearsight.report` draws and formats a :class:`SweepAnalysis`.

Tables are DataFrames with the columns their functions document (they are written as CSV and
rendered as tables); everything else is a frozen dataclass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clearsight.store import run_cost, spec_model
from clearsight.sweep.images.equivalence import (
    DynamicRanges,
    MonotoneShare,
    dynamic_ranges,
    imagenet_c_table,
    monotone_veq_share,
    veq_summary,
)
from clearsight.sweep.numbers.confidence import (
    ReliabilityPanel,
    RiskPanel,
    calibration_table,
    reliability_panels,
    risk_panels,
    selective_table,
)
from clearsight.sweep.numbers.crossings import SceneBootstrap, scene_bootstrap
from clearsight.sweep.numbers.guarded import guard_estimate_table
from clearsight.sweep.numbers.wordings import wording_table
from clearsight.sweep.results import ARMS, CONTROLS, RunData, is_verbal, level_label, load_run_data

__all__ = [
    "DepthSummary",
    "SweepAnalysis",
    "TaskAnalysis",
    "analyse_run",
    "analyse_sweep",
    "controls_table",
    "depth_summary",
    "sweep_table",
]


@dataclass(frozen=True)
class TaskAnalysis:
    """What the report states about one task (identification t2, verification t3).

    ``chance``: 1/k, k the median number of content options. ``sweep``: :func:`sweep_table`;
    ``wordings``: the verbalized wordings on matched images (Table VI,
    :func:`~clearsight.sweep.numbers.wordings.wording_table`);
    ``controls``: :func:`controls_table`; ``calibration`` and ``selective``:
    :func:`~clearsight.sweep.numbers.confidence.calibration_table` and
    :func:`~clearsight.sweep.numbers.confidence.selective_table`; ``imagenet_c``:
    :func:`~clearsight.sweep.images.equivalence.imagenet_c_table`; ``asked``: :func:`asked_accuracy`
    (verification only); ``reliability`` and ``risk``: the panels of the reliability diagrams
    and risk-coverage curves, a row per model and arm.
    """

    task: str
    chance: float
    sweep: pd.DataFrame
    wordings: pd.DataFrame
    controls: pd.DataFrame
    calibration: pd.DataFrame
    selective: pd.DataFrame
    imagenet_c: pd.DataFrame
    asked: pd.DataFrame
    reliability: tuple[tuple[ReliabilityPanel, ...], ...]
    risk: tuple[tuple[RiskPanel, ...], ...]


@dataclass(frozen=True)
class SweepAnalysis:
    """A sweep run's numbers (module docstring): the run read back (``data``), its scene
    bootstrap, each task's :class:`TaskAnalysis` (in the run's task order), the ImageNet-C
    summaries (``veq``: :func:`~clearsight.sweep.images.equivalence.veq_summary`; ``monotone``;
    ``ranges``), the scene set's depth, the guard's estimate table (empty without a guarded
    model), the number of distinct targets with records and what each model cost
    (``cost``: :func:`~clearsight.store.run_cost`, one row per model);
    :func:`~clearsight.sweep.headline.headline_table` reads the figures a reader looks for
    first off them."""

    data: RunData
    bootstrap: SceneBootstrap
    tasks: Mapping[str, TaskAnalysis]
    veq: pd.DataFrame
    monotone: MonotoneShare
    ranges: DynamicRanges
    depth: DepthSummary
    guard: pd.DataFrame
    n_targets: int
    cost: pd.DataFrame

    @property
    def curves(self) -> pd.DataFrame:
        """The bootstrap's curves (:class:`~clearsight.sweep.numbers.crossings.SceneBootstrap`)."""
        return self.bootstrap.curves

    @property
    def crossings(self) -> pd.DataFrame:
        """The bootstrap's crossings and W, one row per model × task × arm × wording × signal
        (the rows of summary.csv)."""
        return self.bootstrap.crossings


def analyse_sweep(run_dir: Path | str, *, n_boot: int = 2000, seed: int = 0) -> SweepAnalysis:
    """Read the sweep run in ``run_dir`` (read-only) and compute its :class:`SweepAnalysis`:
    ``n_boot`` bootstrap replicates resample scenes with replacement from
    ``numpy.random.default_rng(seed)``, so the same run, B and seed give the same numbers."""
    return analyse_run(load_run_data(Path(run_dir)), n_boot=n_boot, seed=seed)


def analyse_run(
    data: RunData, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> SweepAnalysis:
    """The :class:`SweepAnalysis` of a run already read (``level``: the intervals' coverage)."""
    boot = scene_bootstrap(data, n_boot=n_boot, seed=seed, level=level)
    veq = veq_summary(data.veq)
    rec = data.records
    return SweepAnalysis(
        data=data,
        bootstrap=boot,
        tasks={task: _task_analysis(data, boot, veq, task) for task in data.tasks},
        veq=veq,
        monotone=monotone_veq_share(data.veq),
        ranges=dynamic_ranges(rec),
        depth=depth_summary(data.depth),
        guard=guard_estimate_table(data),
        n_targets=rec[["scene", "target"]].drop_duplicates().shape[0] if not rec.empty else 0,
        cost=run_cost(data.run_dir, spec_model("model")),
    )


def _task_analysis(
    data: RunData, boot: SceneBootstrap, veq: pd.DataFrame, task: str
) -> TaskAnalysis:
    """The :class:`TaskAnalysis` of ``task``."""
    n_options = data.records.loc[data.records["task"] == task, "n_options"].median()
    chance = 1.0 / float(n_options) if n_options and math.isfinite(n_options) else math.nan
    return TaskAnalysis(
        task=task,
        chance=chance,
        sweep=sweep_table(data, boot, task),
        wordings=wording_table(data, task),
        controls=controls_table(data, boot, task),
        calibration=calibration_table(data, task, boot),
        selective=selective_table(data, task, boot),
        imagenet_c=imagenet_c_table(boot.curves, veq, task),
        asked=asked_accuracy(data, task),
        reliability=reliability_panels(data, task),
        risk=risk_panels(data, task),
    )


def asked_accuracy(data: RunData, task: str) -> pd.DataFrame:
    """Verification's accuracy on true- and on false-category questions at every level:
    ``model``, ``wording``, ``arm``, ``asked`` (true / distractor), ``level_m``, ``accuracy``.
    A model that answers "No" whenever it cannot see scores 0 on the first and 1 on the
    second, so their mean sits at chance while the answers are pure bias. Empty for
    identification."""
    columns = ["model", "wording", "arm", "asked", "level_m", "accuracy"]
    rec = data.records
    rec = rec[(rec["task"] == task) & rec["condition"].isin(list(ARMS))]
    if task != "verify" or rec.empty:
        return pd.DataFrame(columns=columns)
    keys = ["model", "wording", "condition", "asked", "level_m"]
    acc = rec.groupby(keys, sort=True)["correct"].mean().reset_index()
    return acc.rename(columns={"condition": "arm", "correct": "accuracy"})[columns]


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


def _accuracy_ci(boot: SceneBootstrap) -> pd.DataFrame:
    """Accuracy intervals keyed by model, task, wording, condition, x."""
    acc = boot.curves[boot.curves["signal"] == "accuracy"]
    return acc[["model", "task", "wording", "condition", "x", "low", "high"]].rename(
        columns={"low": "acc_low", "high": "acc_high"}
    )


def sweep_table(data: RunData, boot: SceneBootstrap, task: str) -> pd.DataFrame:
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
        _accuracy_ci(boot)[lambda d: d["task"] == task].drop(columns="task"),
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


def controls_table(data: RunData, boot: SceneBootstrap, task: str) -> pd.DataFrame:
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
        _accuracy_ci(boot)[lambda d: d["task"] == task].drop(columns="task"),
        on=["model", "wording", "condition", "x"],
        how="left",
    )
    return _sort(table, data, task).drop(columns="x")


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


def depth_summary(depth: pd.DataFrame) -> DepthSummary:
    """The :class:`DepthSummary` of per-scene depth profiles (``RunData.depth``; numpy's
    linear percentiles over the scenes' medians)."""
    if depth.empty:
        return DepthSummary(math.nan, math.nan, math.nan, math.nan, math.nan, 0)
    q25, med, q75 = np.percentile(depth["median_m"].to_numpy(dtype=float), [25, 50, 75])
    near, far = (float(depth[c].mean()) for c in ("near_share", "far_share"))
    return DepthSummary(float(med), float(q25), float(q75), near, far, len(depth))
