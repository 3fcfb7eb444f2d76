"""Two answers to the same items side by side: how far each read-out moved, which items moved.

Shared by ``clearsight verify`` (a record and its re-ask) and ``clearsight compare`` (the same
item in two runs). :func:`paired_readouts` lines up the sweep read-outs of the n items,
:func:`agreement_table` gives per read-out the agreement of the answers and the largest and
median |Δ| of the option probabilities, the internal and the verbalized confidence
(:mod:`clearsight.verify.measures`), and :func:`differing` the items that moved beyond the
tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from clearsight.verify.measures import agreement, delta_summary, letter_deltas

__all__ = ["READOUTS", "agreement_table", "differing", "paired_readouts"]

#: The read-outs compared, as (label, delta column, value column).
READOUTS: tuple[tuple[str, str, str], ...] = (
    ("option probabilities", "d_probs", ""),
    ("internal confidence", "d_internal", "internal"),
    ("verbalized confidence", "d_verbal", "verbal"),
)


def _conf(readouts: Mapping[str, Any] | None, name: str) -> float:
    value = None if readouts is None else readouts.get(name)
    return math.nan if value is None else float(value)


def paired_readouts(
    a: Sequence[Mapping[str, Any] | None], b: Sequence[Mapping[str, Any] | None]
) -> pd.DataFrame:
    """One row per item: ``answer_a``/``answer_b``, ``internal_a``/``_b``,
    ``verbal_a``/``_b`` (NaN: none read), ``d_probs`` (the largest change of an option
    probability), ``d_internal``, ``d_verbal`` (|Δ|, NaN where either value is missing). A
    missing read-out (None: a failed re-ask) has no answer and no value."""
    frame = pd.DataFrame(
        {
            "answer_a": [None if r is None else r.get("answer") for r in a],
            "answer_b": [None if r is None else r.get("answer") for r in b],
            "internal_a": [_conf(r, "internal_conf") for r in a],
            "internal_b": [_conf(r, "internal_conf") for r in b],
            "verbal_a": [_conf(r, "verbal_conf") for r in a],
            "verbal_b": [_conf(r, "verbal_conf") for r in b],
        }
    )
    frame["d_probs"] = letter_deltas(
        [None if r is None else r.get("letter_probs") for r in a],
        [None if r is None else r.get("letter_probs") for r in b],
    )
    for name in ("internal", "verbal"):
        frame[f"d_{name}"] = (frame[f"{name}_a"] - frame[f"{name}_b"]).abs()
    return frame


def agreement_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per read-out: ``readout``, ``n`` (items with it both times), ``agreement`` (the
    answers'), ``max_abs_delta`` and ``median_abs_delta`` (the values')."""
    answers_a, answers_b = list(pairs["answer_a"]), list(pairs["answer_b"])
    rows: list[dict[str, Any]] = [
        {
            "readout": "answer",
            "n": len(pairs),
            "agreement": agreement(answers_a, answers_b),
            "max_abs_delta": math.nan,
            "median_abs_delta": math.nan,
        }
    ]
    for label, delta, value in READOUTS:
        if value:
            summary = delta_summary(pairs[f"{value}_a"], pairs[f"{value}_b"])
        else:
            summary = delta_summary(pairs[delta], np.zeros(len(pairs)))
        if summary.n:
            rows.append(
                {
                    "readout": label,
                    "n": summary.n,
                    "agreement": math.nan,
                    "max_abs_delta": summary.max,
                    "median_abs_delta": summary.median,
                }
            )
    return pd.DataFrame(rows)


def differing(pairs: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """The rows of items that moved: another answer, a confidence read once and not the other
    time, or a |Δ| above ``tolerance``; with ``worst`` (their largest |Δ|; inf for another
    answer), the worst first."""
    answers = pairs["answer_a"].astype(object).to_numpy() != pairs["answer_b"].astype(object)
    once = np.zeros(len(pairs), dtype=bool)
    for name in ("internal", "verbal"):
        once |= np.isfinite(pairs[f"{name}_a"]) != np.isfinite(pairs[f"{name}_b"])
    deltas = pairs[[d for _, d, _ in READOUTS]].fillna(0.0).max(axis=1).to_numpy()
    moved = answers | once | (deltas > tolerance)
    worst = np.where(answers | once, np.inf, deltas)
    out = pairs.assign(worst=worst, answer_moved=answers)[moved]
    return out.sort_values("worst", ascending=False, kind="stable")
