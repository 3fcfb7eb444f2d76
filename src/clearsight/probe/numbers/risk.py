"""The risk-coverage curves of a probe run: the cross-run confidence of each setting
(:func:`clearsight.probe.numbers.accuracy.cross_run`) gating its cross-run predictions, one panel
per reasoner and sensor, one curve per strategy, K and signal
(:func:`~clearsight.metrics.risk_coverage`; AURC and E-AURC are in
:func:`~clearsight.probe.numbers.accuracy.summary_table`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.metrics.selective import RiskCoverage, risk_coverage
from clearsight.probe.numbers.accuracy import cross_run

__all__ = ["RiskCurve", "RiskPanel", "risk_panels"]


@dataclass(frozen=True)
class RiskCurve:
    """One setting's cross-run predictions: its label (strategy and signal), each instance's
    cross-run confidence and whether its prediction was right (1.0) or not (0.0), and their
    risk-coverage curve (:func:`~clearsight.metrics.risk_coverage`; None without an
    instance)."""

    label: str
    confidence: npt.NDArray[np.float64]
    correct: npt.NDArray[np.float64]
    curve: RiskCoverage | None


@dataclass(frozen=True)
class RiskPanel:
    """The risk-coverage curves of one reasoner with one sensor."""

    title: str
    curves: tuple[RiskCurve, ...]


def _risk_curve(label: str, sub: pd.DataFrame) -> RiskCurve:
    """The :class:`RiskCurve` of one setting's cross-run rows."""
    conf, correct = sub["confidence"].to_numpy(float), sub["correct"].to_numpy(float)
    return RiskCurve(label, conf, correct, risk_coverage(conf, correct) if conf.size else None)


def risk_panels(frame: pd.DataFrame) -> tuple[RiskPanel, ...]:
    """The cross-run confidence gating the cross-run predictions: one panel per reasoner and
    sensor, one curve per strategy and signal (settings with at least two runs per instance;
    an instance no run committed is a wrong prediction at confidence 0, as in the ECE)."""
    if frame.empty:
        return ()
    per = cross_run(frame)
    per = per[per["runs"] >= 2]
    panels = []
    for (reasoner, sensor), group in per.groupby(["reasoner", "sensor"], sort=True):
        curves = tuple(
            _risk_curve(f"{strategy}, K {k}, signal {signal}", sub)
            for (strategy, k, signal), sub in group.groupby(["strategy", "k", "signal"], sort=True)
        )
        panels.append(RiskPanel(f"{reasoner} with sensor {sensor}", curves))
    return tuple(panels)
