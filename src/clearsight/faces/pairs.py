"""Two answers to the same items side by side: how far each read-out moved, which items moved.

Shared by ``clearsight verify`` (a record and its re-ask) and ``clearsight compare`` (the same
item in two runs). :func:`paired_readouts` lines up the read-outs of the n items (a sweep
answer's, a grounding elicitation's), :func:`agreement_table` gives per read-out the agreement
of the answers and the largest and median |Δ| of the option probabilities, the internal and
the verbalized confidence, the expected confidence of an elicitation and the Jensen–Shannon
divergence of its 11-way distribution (:mod:`clearsight.faces.measures`), and
:func:`differing` the items that moved beyond the tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, SupportsFloat, TypedDict

import numpy as np
import pandas as pd

from clearsight.faces.measures import agreement, delta_summary, letter_deltas, same_answer

__all__ = ["READOUTS", "agreement_table", "differing", "paired_readouts"]

#: The read-outs compared, as (label, delta column, value column).
READOUTS: tuple[tuple[str, str, str], ...] = (
    ("option probabilities", "d_probs", ""),
    ("internal confidence", "d_internal", "internal"),
    ("verbalized confidence", "d_verbal", "verbal"),
    ("expected confidence", "d_expected", "expected"),
    ("11-way distribution (JSD, bits)", "jsd", ""),
)
#: The read-outs whose values are compared (``<name>_a``, ``<name>_b``), by stored name.
_VALUES = {"internal": "internal_conf", "verbal": "verbal_conf", "expected": "expected"}


def _conf(readouts: Mapping[str, object] | None, name: str) -> float:
    """The read-out ``name`` as a float, NaN where there is none."""
    value = None if readouts is None else readouts.get(name)
    if value is None:
        return math.nan
    if isinstance(value, str | SupportsFloat):
        return float(value)
    raise TypeError(f"the read-out {name} is no number: {value!r}")


def _letter_probs(readouts: Mapping[str, object] | None) -> dict[str, float] | None:
    """The option probabilities by letter of a read-out, None where it has none."""
    value = None if readouts is None else readouts.get("letter_probs")
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {str(letter): float(p) for letter, p in value.items()}
    raise TypeError(f"the read-out letter_probs is no map of letters: {value!r}")


def paired_readouts(
    a: Sequence[Mapping[str, object] | None], b: Sequence[Mapping[str, object] | None]
) -> pd.DataFrame:
    """One row per item: ``answered`` (either read-out has an answer: a sweep's, not an
    elicitation's), ``answer_a``/``answer_b``, ``<value>_a``/``_b`` for the internal,
    verbalized and expected confidence (NaN: none read), ``d_probs`` (the largest change of an
    option probability), ``d_<value>`` (|Δ|) and ``jsd`` (of the 11-way distributions; NaN
    where either is missing). A missing read-out (None: a failed re-ask) has no value."""
    frame = pd.DataFrame(
        {
            "answered": [
                any(r is not None and "answer" in r for r in pair)
                for pair in zip(a, b, strict=True)
            ],
            "answer_a": [None if r is None else r.get("answer") for r in a],
            "answer_b": [None if r is None else r.get("answer") for r in b],
        }
    )
    for name, stored in _VALUES.items():
        frame[f"{name}_a"] = [_conf(r, stored) for r in a]
        frame[f"{name}_b"] = [_conf(r, stored) for r in b]
        frame[f"d_{name}"] = (frame[f"{name}_a"] - frame[f"{name}_b"]).abs()
    frame["d_probs"] = letter_deltas([_letter_probs(r) for r in a], [_letter_probs(r) for r in b])
    frame["jsd"] = _jsd(
        [None if r is None else r.get("probs") for r in a],
        [None if r is None else r.get("probs") for r in b],
    )
    return frame


def _jsd(a: Sequence[Any], b: Sequence[Any]) -> Any:
    """Per item, the JSD in bits of two distributions (NaN where either is missing or they
    have different lengths), by :func:`clearsight.metrics.jsd_bits_batch`."""
    from clearsight.metrics import jsd_bits_batch

    out = np.full(len(a), np.nan)
    both = [
        i
        for i, (p, q) in enumerate(zip(a, b, strict=True))
        if p is not None and q is not None and len(p) == len(q) and sum(p) > 0 and sum(q) > 0
    ]
    for size in {len(a[i]) for i in both}:
        rows = [i for i in both if len(a[i]) == size]
        out[rows] = jsd_bits_batch([a[i] for i in rows], [b[i] for i in rows])
    return out


class AgreementRow(TypedDict):
    """One row of :func:`agreement_table`."""

    readout: str
    n: int
    agreement: float
    max_abs_delta: float
    median_abs_delta: float


def agreement_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per read-out: ``readout``, ``n`` (items with it both times; the answer: items where
    either time has one), ``agreement`` (the answers'), ``max_abs_delta`` and
    ``median_abs_delta`` (the values'; the JSD's for the distributions)."""
    rows: list[AgreementRow] = []
    answered = pairs[pairs["answered"].astype(bool)]
    if len(answered):
        rows.append(
            {
                "readout": "answer",
                "n": len(answered),
                "agreement": agreement(list(answered["answer_a"]), list(answered["answer_b"])),
                "max_abs_delta": math.nan,
                "median_abs_delta": math.nan,
            }
        )
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
    return pd.DataFrame(
        rows, columns=["readout", "n", "agreement", "max_abs_delta", "median_abs_delta"]
    )


def differing(pairs: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """The rows of items that moved: another answer, a confidence read once and not the other
    time, or a |Δ| above ``tolerance``; with ``worst`` (their largest |Δ|; inf for another
    answer), the worst first."""
    answers = np.array(
        [not same_answer(x, y) for x, y in zip(pairs["answer_a"], pairs["answer_b"], strict=True)],
        dtype=bool,
    )
    once = np.zeros(len(pairs), dtype=bool)
    for name in _VALUES:
        once |= np.isfinite(pairs[f"{name}_a"]) != np.isfinite(pairs[f"{name}_b"])
    deltas = pairs[[d for _, d, _ in READOUTS]].fillna(0.0).max(axis=1).to_numpy()
    moved = answers | once | (deltas > tolerance)
    worst = np.where(answers | once, np.inf, deltas)
    out = pairs.assign(worst=worst, answer_moved=answers)[moved]
    return out.sort_values("worst", ascending=False, kind="stable")
