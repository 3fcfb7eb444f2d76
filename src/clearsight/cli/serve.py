"""``clearsight serve``: the web page where a person plays the probe's blind reasoner, answers a
sweep's questions (``--sweep``) or browses a run's records (``--operator``); its options are
generated from :class:`~clearsight.ui.ServeSettings`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli.generate import ConfigCommand

if TYPE_CHECKING:
    from clearsight.ui import ServeSettings


def serve(
    settings: ServeSettings,
    run: Annotated[Path, typer.Argument(help="Run directory: human sessions are stored here.")],
) -> None:
    """Web page where a person plays the blind reasoner through the sensor.

    Sessions are stored as transcripts in RUN's store (the page serves nothing else of the
    run); with --sweep, a page where people answer a sweep run's questions on its images
    (stored as human:<name> sweep records); with --operator, a browser of the run's records
    (any protocol) that hosts no session."""
    from clearsight.ui import serve_forever

    serve_forever(run, settings)


def _settings() -> type[ServeSettings]:
    from clearsight.ui import ServeSettings

    return ServeSettings


SERVE = ConfigCommand("serve", _settings, serve, what="serve options")
