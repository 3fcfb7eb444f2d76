"""The sweep's per-task tables: the full sweep (the paper's Tables IX/X), the controls and
verification's accuracy on true- and on false-category questions, each a long DataFrame a row
per model × condition × level × wording (the columns their functions document). Every signal's
mean is read off :data:`~clearsight.sweep.signals.SIGNALS` (its ``column`` averaged into its
``mean_column``), so a new signal gets its column without an edit here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from clearsight.sweep.numbers.crossings import SceneBootstrap
from clearsight.sweep.results import ARMS, CONTROLS, RunData, is_verbal, level_label
from clearsight.sweep.signals import SIGNALS

__all__ = ["asked_accuracy", "controls_table", "sweep_table"]


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
    """The item count, each signal's mean (its ``mean_column``), the accuracy on answered
    items and the share of verbal replies with a parseable confidence."""
    answered = sub[sub["answered"] == 1.0]
    n_verbal_items = sub["wording"].map(lambda w: is_verbal(str(w))).sum()
    means = {s.mean_column: _mean_or_nan(sub[s.column].astype(float)) for s in SIGNALS}
    return {
        "n": float(len(sub)),
        **means,
        "accuracy_answered": _mean_or_nan(answered["correct"]),
        "verbal_parsed": (
            float(sub["verbal_conf"].notna().sum() / n_verbal_items) if n_verbal_items else math.nan
        ),
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
        row: dict[str, object] = {"model": model, "condition": cond, "x": x, "wording": wording}
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
        row: dict[str, object] = {"model": model, "condition": cond, "x": 0.0, "wording": wording}
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
