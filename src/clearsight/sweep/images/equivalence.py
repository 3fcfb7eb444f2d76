"""ImageNet-C fog severities placed on the physical fog axis over a set of scenes (paper §IV-E).

:func:`equivalence_table` computes each scene's gain-matched equivalent visibility V_eq per
severity outside a run (``clearsight equivalence``); in a run they are records of the sweep's
model-free stage. What the report states of them: per severity the spread of V_eq and of the
retained gain over scenes (:func:`veq_summary`), how many scenes' V_eq falls monotonically
(:func:`monotone_veq_share`), each model's accuracy at each severity beside its clean accuracy
(:func:`imagenet_c_table`), and the accuracy's dynamic range over the severities against the
physical fog levels (:func:`dynamic_ranges`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.physics import imagenet_c_equivalents
from clearsight.scenes.model import Scene
from clearsight.sweep.conditions import IMAGENET_C_SEVERITIES, PlasmaDraw, imagenet_c_seed


def equivalence_table(
    scenes: Sequence[Scene] | None = None,
    seed: int = 0,
    progress: bool = True,
    plasma: PlasmaDraw = "independent",
    corruptions: Sequence[str] = ("fog",),
) -> pd.DataFrame:
    """One row per scene, corruption and severity: ``scene``, ``corruption``, ``severity``,
    ``v_eq_m`` (gain-matched V_eq), ``gain`` (the retained contrast gain it matches) and
    ``added`` (the detail the corruption added, the matching's residual); each corruption's
    randomness drawn per scene and severity (``independent``, as a sweep does by default) or
    once per scene (``common``), from the seeds a sweep's items use
    (:func:`~clearsight.sweep.conditions.imagenet_c_seed`)."""
    from tqdm import tqdm

    if scenes is None:
        from clearsight.scenes.bundled import bundled_scene_ids, load_bundled_scene

        scenes = [load_bundled_scene(i) for i in bundled_scene_ids()]
    rows = []
    own = plasma == "independent"
    sevs = IMAGENET_C_SEVERITIES
    for scene in tqdm(scenes, desc="V_eq", unit="scene", disable=not progress):
        for name in corruptions:
            seeds = [imagenet_c_seed(scene.id, seed, s if own else None, name) for s in sevs]
            found = imagenet_c_equivalents(scene.image, scene.depth_m, seeds, sevs, name)
            rows += [
                {"scene": scene.id, "corruption": name, "severity": s}
                | {"v_eq_m": eq.v_eq_m, "gain": eq.gain, "added": eq.added}
                for s, eq in zip(sevs, found, strict=True)
            ]
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class MonotoneShare:
    """How many scenes' V_eq decreases over the severities: ``strict`` (every step down, the
    paper's "decreases monotonically"), ``non_strict`` (no step up), of ``n`` scenes."""

    strict: float
    non_strict: float
    n: int


def monotone_veq_share(veq: pd.DataFrame) -> MonotoneShare:
    r"""Shares of scenes whose V_eq decreases over the severities, strictly and non-strictly.

    Over scenes with every severity present (others are left out of ``n``), with
    :math:`V_s` the scene's V_eq at severity s in increasing order: strict means
    :math:`V_{s+1} < V_s` at every step, non-strict :math:`V_{s+1} \le V_s`.
    """
    if veq.empty:
        return MonotoneShare(math.nan, math.nan, 0)
    wide = veq.pivot_table(index="scene", columns="severity", values="v_eq_m", aggfunc="first")
    wide = wide.sort_index(axis=1).dropna()
    if wide.empty:
        return MonotoneShare(math.nan, math.nan, 0)
    with np.errstate(invalid="ignore"):  # inf - inf (both beyond the search): no step down
        steps = np.diff(wide.to_numpy(dtype=float), axis=1)
    strict = (steps < 0).all(axis=1)
    non_strict = (steps <= 0).all(axis=1)
    return MonotoneShare(float(strict.mean()), float(non_strict.mean()), int(strict.size))


_SPREAD_STATS = ("median", "q25", "q75", "p10", "p90", "p90_p10")


def _spread(values: pd.Series, prefix: str) -> dict[str, float]:
    """Median, quartiles, P10, P90 and P90 / P10 of ``values`` as ``{prefix}_{stat}``; NaN
    where there are no values, and the ratio NaN where P10 is not positive."""
    v = values.dropna().to_numpy(dtype=np.float64)
    if v.size == 0:
        return {f"{prefix}_{k}": math.nan for k in _SPREAD_STATS}
    p10, q25, med, q75, p90 = _percentiles(v, [10, 25, 50, 75, 90])
    ratio = p90 / p10 if p10 > 0 else math.nan
    names = (f"{prefix}_{k}" for k in _SPREAD_STATS)
    return dict(zip(names, (med, q25, q75, p10, p90, ratio), strict=True))


def _percentiles(v: npt.NDArray[np.float64], q: list[float]) -> list[float]:
    """numpy's linear percentiles of ``v``, where a V_eq beyond the search (infinite) counts
    as larger than every finite one: a percentile that interpolates towards an infinite value
    is infinite (numpy's own gives NaN for inf - inf)."""
    finite = np.isfinite(v)
    if finite.all():
        return [float(x) for x in np.percentile(v, q)]
    if not finite.any():
        return [math.inf] * len(q)
    top = float(v[finite].max())
    stand_in = np.where(finite, v, 2.0 * abs(top) + 1.0)
    return [math.inf if x > top else float(x) for x in np.percentile(stand_in, q)]


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


def imagenet_c_table(curves: pd.DataFrame, summary: pd.DataFrame, task: str) -> pd.DataFrame:
    """Severity → median / IQR of V_eq and each model's accuracy (interval) per wording, from
    the bootstrap's ``curves`` and the V_eq ``summary`` (:func:`veq_summary`).

    Columns: ``model``, ``wording``, ``severity``, ``veq_*`` and ``gain_*`` (median, q25, q75,
    p10, p90, p90_p10) and ``n_scenes`` (:func:`veq_summary`), ``n``
    (items), ``accuracy``, ``acc_low``, ``acc_high``, ``clean_accuracy``, ``delta_pp`` (accuracy
    − clean, percentage points).
    """
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
    table = table.merge(summary, on="severity", how="left")
    return table.reset_index(drop=True)


@dataclass(frozen=True)
class DynamicRanges:
    """Accuracy dynamic ranges in percentage points (paper §IV-E): over the ImageNet-C
    severities (``nominal``) and over the physical fog levels (``physical``), each the largest
    minus the smallest per-step accuracy of the items given, pooled (the analysis gives each
    model's main-wording records,
    :func:`~clearsight.sweep.numbers.wordings.main_wording_records`). NaN where a run has no
    items of that kind."""

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
