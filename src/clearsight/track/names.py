"""What the command line needs of the trackers before any is imported: their names, how a
tracker is asked for (:func:`tracker_spec`: ``NAME`` or ``trackio:PROJECT``) and the sample
table's defaults (a light module: the CLI starts without pandas or numpy)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["OWN_SETTING", "PROJECT", "SAMPLE_ROWS", "SAMPLE_SEED", "TRACKERS", "tracker_spec"]

#: Tracker name -> the class that sends to it (``module:attribute``, imported when asked); the
#: name is also its package's and its extra's (``pip install 'clearsight[mlflow]'``). Read
#: only: the trackers' own process (:mod:`clearsight.track.process`) imports this module
#: afresh, so a tracker added here at run time would be unknown there.
TRACKERS: Mapping[str, str] = MappingProxyType(
    {
        "mlflow": "clearsight.track.to_mlflow:MlflowSink",
        "trackio": "clearsight.track.to_trackio:TrackioSink",
        "wandb": "clearsight.track.to_wandb:WandbSink",
    }
)
#: Rows of the sample's table by default (as many as the export's sample) and its draw's seed.
SAMPLE_ROWS, SAMPLE_SEED = 64, 0
#: The trackio project of a run asked for as plain ``trackio`` (trackio reads none from its
#: environment, and its ``init`` needs one).
PROJECT = "clearsight"
#: The trackers that name where a run goes by a setting of their own, so take no
#: ``:PROJECT``: that setting, as the refusal says it.
OWN_SETTING = {
    "mlflow": "its experiment is MLflow's own MLFLOW_EXPERIMENT_NAME (or MLFLOW_EXPERIMENT_ID)",
    "wandb": "its project is W&B's own WANDB_PROJECT",
}
#: A trackio project as trackio stores it: the characters it keeps in the project's file
#: names (another would be dropped there, so two names would share one project).
_PROJECT = re.compile(r"[A-Za-z0-9_-]+")


def tracker_spec(text: str) -> tuple[str, str | None]:
    """``text`` (``NAME`` or ``trackio:PROJECT``) as the tracker's name and the project it
    names (None: the tracker's default); ValueError saying why for anything else: a name that
    is no tracker, a project after a tracker that names it by its own setting, a trackio
    project of characters trackio does not keep (trackio's own reserved names are refused
    when the session opens, by trackio: :func:`clearsight.track.session.check_trackers`)."""
    name, colon, project = text.partition(":")
    if name not in TRACKERS:
        raise ValueError(f"{name!r} is not one of {', '.join(TRACKERS)}")
    if not colon:
        return name, None
    if name in OWN_SETTING:
        raise ValueError(f"{name} takes no ':PROJECT' ({text!r}): {OWN_SETTING[name]}")
    if not _PROJECT.fullmatch(project):
        raise ValueError(
            f"trackio project {project!r}: only letters, digits, '_' and '-' (as trackio "
            "stores a project)"
        )
    return name, project
