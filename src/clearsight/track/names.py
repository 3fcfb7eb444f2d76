"""What the command line needs of the trackers before any is imported: their names and the
sample table's defaults (a light module: the CLI starts without pandas or numpy)."""

from __future__ import annotations

__all__ = ["SAMPLE_ROWS", "SAMPLE_SEED", "TRACKERS"]

#: Tracker name -> the class that sends to it (``module:attribute``, imported when asked); the
#: name is also its package's and its extra's (``pip install 'clearsight[mlflow]'``).
TRACKERS: dict[str, str] = {
    "mlflow": "clearsight.track.to_mlflow:MlflowSink",
    "trackio": "clearsight.track.to_trackio:TrackioSink",
    "wandb": "clearsight.track.to_wandb:WandbSink",
}
#: Rows of the sample's table by default (as many as the export's sample) and its draw's seed.
SAMPLE_ROWS, SAMPLE_SEED = 64, 0
