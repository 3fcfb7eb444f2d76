"""Fig. 7 of the paper: the candidate sensors' calibration per dataset, from which it chose its
two sensors ("based on the largest gap in Expected Calibration Error (ECE) across diverse
datasets"), computed from a run's stage-1 build samples (``clearsight probe build``).

The paper does not say how a VLM's confidence and correctness were read for Fig. 7.
clearsight's reading (:func:`sensor_ece_table`): per sensor and question, the prediction is the
letter most of its n direct samples name (ties: the first named; a sample naming none counts
for none), its confidence that letter's share of all n samples, and it is correct when it is
the gold letter; ECE (:func:`clearsight.metrics.ece`, 10 bins) over a dataset's questions.
:func:`most_distinct_sensors` then names the pair of sensors with the largest mean absolute ECE
gap over the datasets both were sampled on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations

import pandas as pd

from clearsight.metrics.calibration import ece

__all__ = ["majority", "most_distinct_sensors", "sensor_ece_table"]


def majority(letters: Sequence[str | None]) -> tuple[str | None, float]:
    """The letter most samples name (ties: the one named first) and its share of all the
    samples; ``(None, 0.0)`` when none names a letter."""
    named = Counter(letter for letter in letters if letter is not None)
    if not named:
        return None, 0.0
    best = max(named.values())
    letter = next(x for x in letters if x is not None and named[x] == best)
    return letter, best / len(letters)


def sensor_ece_table(build: pd.DataFrame) -> pd.DataFrame:
    """Fig. 7's numbers: per dataset (rows) and sensor (columns), the ECE of the sensor's
    majority answer over the dataset's questions (module docstring), with ``questions`` per
    cell in a long frame (``dataset``, ``sensor``, ``questions``, ``accuracy``, ``ece``).
    Empty without build samples (a frame without their letters: none read)."""
    if build.empty or "letters" not in build:
        return pd.DataFrame()
    rows = []
    for (dataset, sensor), group in build.groupby(["dataset", "sensor"], sort=True):
        answers = [majority(letters) for letters in group["letters"]]
        confidence = [share for _, share in answers]
        correct = [letter == gold for (letter, _), gold in zip(answers, group["gold"], strict=True)]
        rows.append(
            {
                "dataset": dataset,
                "sensor": sensor,
                "questions": len(group),
                "accuracy": 100.0 * sum(correct) / len(correct),
                "ece": ece(confidence, correct),
            }
        )
    return pd.DataFrame(rows)


def most_distinct_sensors(table: pd.DataFrame) -> tuple[str, str, float] | None:
    """The two sensors whose ECE differs most, as the mean absolute gap over the datasets both
    were sampled on (``table``: :func:`sensor_ece_table`): ``(a, b, gap)`` with a before b by
    name, or None with fewer than two sensors."""
    if table.empty:
        return None
    wide = table.pivot_table(index="dataset", columns="sensor", values="ece")
    pairs = [
        (a, b, float((wide[a] - wide[b]).abs().mean()))
        for a, b in combinations(sorted(wide.columns), 2)
        if (wide[a].notna() & wide[b].notna()).any()
    ]
    return max(pairs, key=lambda p: p[2]) if pairs else None
