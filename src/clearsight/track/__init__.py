"""Experiment trackers: a run's numbers sent where researchers keep their other runs — MLflow,
trackio and Weights & Biases (docs/track.md).

``--tracker NAME`` on every run command sends the run while it runs (:class:`Session`, from
:meth:`clearsight.cli.execution.ExecutionOptions.start`), ``clearsight track RUN --to NAME`` a
finished run (:func:`track_run`). What is sent is asked of the run's protocol through its face
(:mod:`clearsight.track.session`, :mod:`clearsight.track.content`): this package names no
protocol. Each tracker is configured as it always is and installed as an extra
(``pip install 'clearsight[mlflow]'``).
"""

from __future__ import annotations

from clearsight.track.content import Content, StepMetric
from clearsight.track.runs import track_run
from clearsight.track.session import TRACKERS, Session, check_trackers, open_session

__all__ = [
    "TRACKERS",
    "Content",
    "Session",
    "StepMetric",
    "check_trackers",
    "open_session",
    "track_run",
]
