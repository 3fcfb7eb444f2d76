"""``clearsight track RUN --to NAME``: a finished run sent to experiment trackers.

MLflow, trackio or W&B (:func:`clearsight.track.track_run`), as ``--tracker`` sends a run while
it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clearsight.track.names import SAMPLE_ROWS


def track(
    run: Annotated[Path, typer.Argument(help="A finished run directory (of any protocol).")],
    to: Annotated[
        list[str],
        typer.Option(
            "--to",
            help="Tracker to send the run to: mlflow, trackio or wandb (repeatable), each "
            "configured as it always is (MLFLOW_TRACKING_URI, MLFLOW_EXPERIMENT_NAME, "
            "TRACKIO_DIR, WANDB_PROJECT, WANDB_MODE); trackio:PROJECT names trackio's project "
            "(default clearsight).",
        ),
    ],
    sample: Annotated[
        int,
        typer.Option(
            min=0,
            help="Items in each tracker's table of a stratified sample, with the image each "
            "was shown (0: no table).",
        ),
    ] = SAMPLE_ROWS,
) -> None:
    """Send a finished run to experiment trackers: its configuration and manifest as
    parameters, per model, arm and level the report's accuracy, confidences and abstain rate
    as step metrics, the card's numbers with their intervals as summary metrics and the
    report's files as artifacts and a table of a stratified sample of items with the image
    each was shown (docs/track.md). The report is written again first. Exit 1
    when a tracker could not be sent to (its warning line says why)."""
    from clearsight.track import track_run

    content, failed = track_run(run, to, sample)
    sent = [name for name in dict.fromkeys(to) if name not in failed]
    if sent:
        typer.echo(
            f"sent {run} to {', '.join(sent)}: {len(content.params)} parameters, "
            f"{len(content.steps)} step metrics, {len(content.summary)} summary metrics, "
            f"{len(content.artifacts)} files, a table of {len(content.sample)} items"
        )
    if failed:
        typer.echo(f"error: {run} was not sent to {', '.join(failed)}", err=True)
        raise typer.Exit(code=1)
