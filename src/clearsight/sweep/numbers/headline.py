"""The sweep's headline: per task, model and arm, the figures a reader looks for first.

:func:`headline_table` reads them off the crossings and the tasks' tables of the analysis
(:func:`~clearsight.sweep.analysis.analyse_run` calls it once; nothing is computed again): the
clean accuracy with its interval (the clean control), the
accuracy's crossing visibility V*_acc with its interval and censoring, the blind-spot width W
of the three awareness signals — internal confidence, verbalized confidence and abstention —
with interval and bound, the pooled ECE of the internal and of the verbalized confidence and
the pooled AURC of the internal confidence (the verbalized one where there is none), each with
its interval. Each signal is read in one wording: the model's first letter wording
(``mcq.reason`` before ``mcq.generic``) for accuracy, internal confidence and abstention, its
first verbalized wording for verbalized confidence — for a person (``human:<name>``), who states
a confidence with a slider beside each letter answer, their letter wording's stated confidence,
in the verbalized columns. Each W is the one the analysis paired
(:func:`~clearsight.sweep.numbers.pairing.w_pairing_of`); ``w_<s>_accuracy`` names the wording whose
accuracy crossing it uses.

For the sentence that reads a row (:mod:`clearsight.sweep.page.headline`) the table also holds,
per signal, its mean at the first level (clearest first) where the accuracy has fallen below
its half point (``half`` of the accuracy's crossing; none where the clean accuracy is not above
it): what the model's awareness says when it has lost half its accuracy. A model × arm with
no crossing row (an arm it was not shown) has no row: no empty line for an arm that did not
run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

import pandas as pd

from clearsight.sweep.numbers.facts import RunFacts
from clearsight.sweep.results import is_verbal
from clearsight.sweep.signals import AWARENESS, CONFIDENCES

__all__ = ["HEADLINE_SIGNALS", "TaskTables", "headline_table"]

#: The awareness signals of the headline: every one, in the tables' order.
HEADLINE_SIGNALS: tuple[str, ...] = tuple(s.name for s in AWARENESS)


class TaskTables(Protocol):
    """What the headline reads of a task's analysis
    (:class:`~clearsight.sweep.analysis.TaskAnalysis` has it): its wordings in order, its
    sweep, controls, calibration and selective-prediction tables."""

    @property
    def order(self) -> tuple[str, ...]: ...

    @property
    def sweep(self) -> pd.DataFrame: ...

    @property
    def controls(self) -> pd.DataFrame: ...

    @property
    def calibration(self) -> pd.DataFrame: ...

    @property
    def selective(self) -> pd.DataFrame: ...


def headline_table(
    crossings: pd.DataFrame, tasks: Mapping[str, TaskTables], run: RunFacts
) -> pd.DataFrame:
    """One row per task × model × arm (the run's orders) with a crossing of the accuracy:
    ``task``, ``model``, ``arm``, ``letter`` and ``verbal`` (the wordings read; '' for none),
    ``clean_acc`` / ``_low`` / ``_high``, ``v_acc_m`` / ``v_acc_censored`` / ``v_acc_low_m`` /
    ``v_acc_high_m``, ``acc_start`` and ``acc_half`` (the crossing's clean value and half
    point), ``acc_falls`` (whether the first is above the second: accuracy to lose),
    ``fallen_m`` (the first level below the half point, NaN if none), per signal ``w_<s>``,
    ``w_<s>_bound``, ``w_<s>_low``, ``w_<s>_high``, ``w_<s>_accuracy`` (the wording of the
    accuracy crossing W uses) and ``at_fallen_<s>``, then
    ``ece_internal``, ``ece_verbal`` and ``aurc``, each with ``_low`` and ``_high``."""
    rows = []
    for task, numbers in tasks.items():
        letters = [w for w in numbers.order if not is_verbal(w)]
        verbals = [w for w in numbers.order if is_verbal(w)]
        acc = crossings[(crossings["task"] == task) & (crossings["signal"] == "accuracy")]
        for model in run.models:
            for arm in run.arms:
                here = crossings[
                    (crossings["task"] == task)
                    & (crossings["model"] == model)
                    & (crossings["arm"] == arm)
                ]
                asked = set(here["wording"])
                kinds = {"letter": [w for w in letters if w in asked]}
                kinds["verbal"] = [w for w in verbals if w in asked]
                if model in run.people:  # the slider's stated confidence beside the letters
                    kinds["verbal"] += kinds["letter"]
                letter, verbal = (next(iter(kinds[k]), "") for k in ("letter", "verbal"))
                first = letter or verbal
                mine = acc[
                    (acc["model"] == model) & (acc["arm"] == arm) & (acc["wording"] == first)
                ]
                if mine.empty:
                    continue
                row: dict[str, float | str] = {"task": task, "model": model, "arm": arm}
                row |= {"letter": letter, "verbal": verbal}
                row |= _accuracy(numbers, model, arm, first, mine.iloc[0])
                row |= _signals(numbers, here, kinds, float(row["fallen_m"]))
                row |= _confidence(numbers, model, arm, letter, verbal, run)
                rows.append(row)
    return pd.DataFrame(rows)


def _accuracy(
    numbers: TaskTables, model: str, arm: str, wording: str, crossing: pd.Series
) -> dict[str, float | str]:
    """Clean accuracy (the clean control's, with interval; NaN without one), V*_acc and the
    first level whose accuracy is below the half point."""
    controls = numbers.controls
    clean = (
        controls[
            (controls["model"] == model)
            & (controls["condition"] == "clean")
            & (controls["wording"] == wording)
        ]
        if not controls.empty
        else controls
    )
    nan = math.nan
    acc, low, high = (
        (clean.iloc[0]["accuracy"], clean.iloc[0]["acc_low"], clean.iloc[0]["acc_high"])
        if not clean.empty
        else (nan, nan, nan)
    )
    sweep = _arm_curve(numbers, model, arm, wording)
    half, clean_value = float(crossing["half"]), float(crossing["clean"])
    falls = math.isfinite(half) and clean_value > half  # else there is nothing to fall from
    fallen = sweep[sweep["accuracy"] < half]["x"] if falls else sweep["x"][:0]
    return {
        "clean_acc": float(acc),
        "clean_acc_low": float(low),
        "clean_acc_high": float(high),
        "v_acc_m": float(crossing["v_star_m"]),
        "v_acc_censored": str(crossing["censored"] or ""),
        "v_acc_low_m": float(crossing["v_low_m"]),
        "v_acc_high_m": float(crossing["v_high_m"]),
        "acc_start": clean_value,
        "acc_half": half,
        "acc_falls": falls,
        "fallen_m": float(fallen.iloc[0]) if len(fallen) else nan,
    }


def _arm_curve(numbers: TaskTables, model: str, arm: str, wording: str) -> pd.DataFrame:
    """The sweep table's rows of ``model`` in ``arm`` and ``wording``, clearest level first."""
    sweep = numbers.sweep
    if sweep.empty:
        return sweep.assign(x=[], accuracy=[])
    mine = sweep[
        (sweep["model"] == model) & (sweep["condition"] == arm) & (sweep["wording"] == wording)
    ]
    return mine.sort_values("x", ascending=False)


def _signals(
    numbers: TaskTables,
    here: pd.DataFrame,
    kinds: Mapping[str, Sequence[str]],
    fallen_m: float,
) -> dict[str, float | str]:
    """Per awareness signal, read in the first wording of its headline kind (``kinds``: the
    wordings of each kind asked, in order) with a crossing of it: W with its bound and interval
    (NaN, bound '' where the signal was not read) and its mean at ``fallen_m``."""
    out: dict[str, float | str] = {}
    for aware in AWARENESS:
        signal, column = aware.name, aware.mean_column
        crossed = set(here.loc[here["signal"] == signal, "wording"])
        wording = next((w for w in kinds[aware.headline_wording] if w in crossed), "")
        row = here[(here["signal"] == signal) & (here["wording"] == wording)]
        found = not row.empty
        out[f"w_{signal}"] = float(row.iloc[0]["w"]) if found else math.nan
        out[f"w_{signal}_bound"] = str(row.iloc[0]["w_bound"] or "") if found else ""
        out[f"w_{signal}_low"] = float(row.iloc[0]["w_low"]) if found else math.nan
        out[f"w_{signal}_high"] = float(row.iloc[0]["w_high"]) if found else math.nan
        out[f"w_{signal}_accuracy"] = str(row.iloc[0]["w_accuracy"] or "") if found else ""
        at = math.nan
        if found and math.isfinite(fallen_m):
            model, arm = str(row.iloc[0]["model"]), str(row.iloc[0]["arm"])
            curve = _arm_curve(numbers, model, arm, wording)
            level = curve[curve["x"] == fallen_m][column]
            at = float(level.iloc[0]) if len(level) else math.nan
        out[f"at_fallen_{signal}"] = at
    return out


def _confidence(
    numbers: TaskTables, model: str, arm: str, letter: str, verbal: str, run: RunFacts
) -> dict[str, float]:
    """Per confidence (:data:`~clearsight.sweep.signals.CONFIDENCES`) its pooled ECE, read in
    the wording of its headline kind (``ece_internal``, ``ece_verbal``), and the pooled AURC
    of the confidence the model reads in its letter wording (the verbalized one without a
    letter wording)."""
    picks = [
        (f"ece_{s.name.removesuffix('_conf')}", numbers.calibration, "ece", s.name, wording)
        for s in CONFIDENCES
        for wording in [verbal if s.headline_wording == "verbal" else letter]
    ]
    aurc = run.confidence.get((model, letter), "") if letter else "verbal_conf"
    picks.append(("aurc", numbers.selective, "aurc", aurc, letter or verbal))
    out: dict[str, float] = {}
    for name, table, column, signal, wording in picks:
        row = (
            table[
                (table["model"] == model)
                & (table["arm"] == arm)
                & (table["wording"] == wording)
                & (table["signal"] == signal)
                & (table["level"] == "pooled")
            ]
            if not table.empty and wording
            else table.iloc[:0]
        )
        for suffix in ("", "_low", "_high"):
            value = row.iloc[0][column + suffix] if not row.empty else math.nan
            out[name + suffix] = float(value)
    return out
