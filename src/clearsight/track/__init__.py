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

import importlib
from typing import Any

#: Each public name -> the module that holds it, imported when first asked: ``clearsight.cli``
#: reads :mod:`clearsight.track.names` at start-up without pandas, numpy or the faces.
_LAZY = {
    "TRACKERS": "clearsight.track.names",
    "Content": "clearsight.track.content",
    "Session": "clearsight.track.session",
    "StepMetric": "clearsight.track.content",
    "check_trackers": "clearsight.track.session",
    "open_session": "clearsight.track.session",
    "track_run": "clearsight.track.runs",
}


def __getattr__(name: str) -> Any:
    """A public name of the package, from its module (see :data:`_LAZY`)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)


__all__ = [
    "TRACKERS",
    "Content",
    "Session",
    "StepMetric",
    "check_trackers",
    "open_session",
    "track_run",
]
