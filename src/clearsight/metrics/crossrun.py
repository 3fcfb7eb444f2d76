"""Cross-run calibration (docs/methods.md §6): the confidence of a reasoner that commits once per
run is how often its R independent runs agree."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from clearsight.metrics.calibration import ece
from clearsight.validate import InputError

__all__ = ["cross_run_ece", "cross_run_prediction"]


def cross_run_prediction(commits: Sequence[str | None]) -> tuple[str | None, float]:
    r"""``(prediction, confidence)`` from the commits of the R runs of one instance, in run
    order: the most common committed option (ties: the one committed earliest) and

    .. math::

        \mathrm{conf} = \frac{|\{r : \mathrm{commit}_r = \mathrm{prediction}\}|}{R},

    the share of *all* R runs (a run that never committed counts in R); ``(None, 0.0)`` when
    no run committed."""
    if not commits:
        raise InputError("cross-run prediction needs at least one run")
    votes = [c for c in commits if c is not None]
    if not votes:
        return None, 0.0
    counts: dict[str, int] = {}
    for c in votes:
        counts[c] = counts.get(c, 0) + 1
    best = max(counts.values())
    prediction = next(c for c in votes if counts[c] == best)
    return prediction, best / len(commits)


def cross_run_ece(
    commits: Sequence[Sequence[str | None]], gold: Sequence[str], n_bins: int = 10
) -> float:
    r"""Cross-run ECE over instances: per instance i, :func:`cross_run_prediction` of its R
    runs' commits gives :math:`(\hat y_i, c_i)`, correct when :math:`\hat y_i` is the gold
    option (an instance no run committed: confidence 0, wrong); then
    :func:`~clearsight.metrics.ece` of :math:`(c_i, [\hat y_i = y_i])` with ``n_bins``
    equal-width right-closed bins, confidence 0 in the first."""
    if len(commits) != len(gold):
        raise InputError(f"{len(commits)} instances of commits for {len(gold)} gold options")
    if not commits:
        raise InputError("cross-run ECE needs at least one instance")
    predicted = [cross_run_prediction(runs) for runs in commits]
    confidence = np.array([c for _, c in predicted], dtype=np.float64)
    pairs = zip(predicted, gold, strict=True)
    correct = np.array([p is not None and p == g for (p, _), g in pairs], dtype=bool)
    return ece(confidence, correct, n_bins)
