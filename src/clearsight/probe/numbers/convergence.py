"""The belief probe's numbers: Table 7's convergence, the early-anchoring share and speed
ratio, and Fig. 4's curves, per population (reasoner, sensor, signal) or pooled per reasoner,
from the belief-probe rows a run's records give
(:func:`~clearsight.probe.posthoc.belief.belief_summary` per conversation; the elicitation
itself is :mod:`clearsight.probe.posthoc.belief`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import pandas as pd

__all__ = [
    "BELIEF_SETTING",
    "BeliefCurve",
    "BeliefCurves",
    "anchoring_table",
    "belief_curves",
    "belief_table",
    "setting_columns",
    "setting_names",
]

#: The columns a belief-probe population is split by (Fig. 4, Table 7): one reasoner's
#: conversations with one sensor and one consistency signal, so the ablation's none and random
#: u and another sensor are populations of their own; pooled, by reasoner only.
BELIEF_SETTING: Final = ("reasoner", "sensor", "signal")


def setting_columns(rows: pd.DataFrame, pooled: bool = False) -> list[str]:
    """The columns of :data:`BELIEF_SETTING` (only ``reasoner`` when ``pooled``) that
    ``rows`` holds."""
    wanted = BELIEF_SETTING[:1] if pooled else BELIEF_SETTING
    return [c for c in wanted if c in rows]


def setting_names(rows: pd.DataFrame, pooled: bool = False) -> list[str]:
    """Each row's population as Fig. 4's legend names it: ``reasoner, sensor S, signal u``
    (``all`` for rows without a reasoner)."""
    columns = setting_columns(rows, pooled)
    if not columns:
        return ["all"] * len(rows)
    names = rows[columns[0]].astype(str)
    for column in columns[1:]:
        names = names + f", {column} " + rows[column].astype(str)
    return names.tolist()


def belief_table(rows: pd.DataFrame, pooled: bool = False) -> pd.DataFrame:
    """Table 7 analogue: per reasoner, sensor, signal (:data:`BELIEF_SETTING`; ``pooled``:
    per reasoner only) and dataset, split by final correctness, the mean steps to max b >= 0.7
    (over conversations that reach it), the reach rate, mean p_chosen and mean final p_correct.
    ``rows``: one row per probed conversation with the columns of :func:`belief_summary` plus
    reasoner and dataset (and sensor and signal where known)."""
    if rows.empty:
        return pd.DataFrame()
    rows = rows.assign(
        outcome=np.where(rows["correct"], "correct", "wrong"),
        final_p_correct=rows["p_correct"].map(lambda p: np.nan if p[-1] is None else p[-1]),
        p_chosen=pd.to_numeric(rows["p_chosen"], errors="coerce"),
        steps_to_threshold=pd.to_numeric(rows["steps_to_threshold"], errors="coerce"),
    )
    table = (
        rows.groupby([*setting_columns(rows, pooled), "dataset", "outcome"])
        .agg(
            conversations=("reached", "size"),
            steps=("steps_to_threshold", "mean"),
            reach=("reached", "mean"),
            p_chosen=("p_chosen", "mean"),
            final_p_correct=("final_p_correct", "mean"),
        )
        .reset_index()
    )
    table["reach"] *= 100
    return table


def anchoring_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Early anchoring and convergence speed per population (reasoner, sensor, signal:
    :data:`BELIEF_SETTING`) and dataset, from the belief-probe rows of :func:`belief_table`.

    * ``anchored`` (%): the paper's early-anchoring share (§4.4: "46% of its SeedBench
      trajectories already exceed 0.7 confidence after the first evidence step"): the share of
      probed conversations whose max_i b_1[i] reaches the threshold at the first sensor reply,
      i.e. whose steps to max b >= 0.7 is 1. clearsight's reading: ">= 0.7", Table 7's threshold,
      where the sentence says "exceed"; every probed conversation counts in the denominator (an
      unparsed b_1 is not anchored).
    * ``steps``: mean steps to max b >= 0.7 over the conversations that reach it, correct and
      wrong together.
    * ``speed``: the paper's speed ratio ("reaches high confidence roughly 1.6x faster than the
      122B model", Table 7's steps): the ``steps`` of the dataset's slowest population over this
      population's, so the slowest reads 1 and one twice as fast 2. clearsight's reading: the
      paper compares two reasoners and does not say how it pools correct and wrong
      conversations; here each population is set beside the slowest of its dataset, over its
      conversations pooled.
    """
    if rows.empty or "steps_to_threshold" not in rows:
        return pd.DataFrame()
    steps = pd.to_numeric(rows["steps_to_threshold"], errors="coerce")
    rows = rows.assign(steps=steps, anchored=steps.eq(1) * 100.0)
    keys = [*setting_columns(rows), "dataset"]
    table = (
        rows.groupby(keys)
        .agg(
            conversations=("steps", "size"), anchored=("anchored", "mean"), steps=("steps", "mean")
        )
        .reset_index()
    )
    slowest = table.groupby("dataset")["steps"].transform("max")
    table["speed"] = slowest / table["steps"]
    return table


@dataclass(frozen=True)
class BeliefCurve:
    """One probed conversation in Fig. 4: its population (:func:`setting_names`), whether it
    committed right, its p_correct(t) for t = 0..n (NaN where b_t is unparsed) and p_chosen
    (None: none)."""

    setting: str
    correct: bool
    p_correct: tuple[float, ...]
    p_chosen: float | None


@dataclass(frozen=True)
class BeliefCurves:
    """Fig. 4's data: every probed conversation's curve, and per population (reasoner, sensor
    and signal; pooled: reasoner) the mean p_correct(t) over its conversations with a parsed
    b_t (NaN where none has one)."""

    curves: tuple[BeliefCurve, ...]
    means: Mapping[str, tuple[float, ...]]


def _mean_curve(traces: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """The mean of ``traces`` at each step over those that have a number there."""
    width = max(len(t) for t in traces)
    grid = np.full((len(traces), width), np.nan)
    for r, t in enumerate(traces):
        grid[r, : len(t)] = t
    counts = np.sum(~np.isnan(grid), axis=0)
    mean = np.nansum(grid, axis=0) / np.maximum(counts, 1)
    mean[counts == 0] = np.nan
    return tuple(float(v) for v in mean)


def belief_curves(beliefs: pd.DataFrame, pooled: bool = False) -> BeliefCurves:
    """Fig. 4's curves from the belief-probe rows (columns p_correct, correct, and where
    present p_chosen, reasoner, sensor and signal), a mean per population
    (:func:`setting_names`; ``pooled``: per reasoner; rows without reasoners: ``all``)."""
    if beliefs.empty or "p_correct" not in beliefs:
        return BeliefCurves((), {})
    who = setting_names(beliefs, pooled)
    chosen = beliefs["p_chosen"] if "p_chosen" in beliefs else pd.Series([None] * len(beliefs))
    curves = tuple(
        BeliefCurve(
            name,
            bool(right),
            tuple(np.nan if v is None else float(v) for v in p),
            None if p_chosen is None or pd.isna(p_chosen) else float(p_chosen),
        )
        for p, right, p_chosen, name in zip(
            beliefs["p_correct"], beliefs["correct"], chosen, who, strict=True
        )
    )
    means = {
        name: _mean_curve([c.p_correct for c in curves if c.setting == name])
        for name in sorted({c.setting for c in curves})
    }
    return BeliefCurves(curves, means)
