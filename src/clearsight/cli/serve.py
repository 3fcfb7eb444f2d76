"""``clearsight serve``: the web page where a person plays the probe's blind reasoner, or
(``--operator``) a browser of a run's records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clearsight.cli._options import _fail


def serve(
    run: Annotated[Path, typer.Argument(help="Run directory: human sessions are stored here.")],
    host: Annotated[str, typer.Option(help="Interface to bind (loopback by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    sensor: Annotated[str, typer.Option(help="Sensor backend name.")] = "perceiver",
    judge: Annotated[
        str, typer.Option(help="Judge of u: embedding, embedding:<t>, exact, llm:<model>.")
    ] = "embedding",
    k: Annotated[int, typer.Option("--k", help="Samples K per sensor query.")] = 5,
    budget: Annotated[int, typer.Option(help="Budget T: turns per session.")] = 100,
    instances: Annotated[
        str, typer.Option(help="Instance set: bundled, DATASET:PATH or a JSONL file.")
    ] = "bundled",
    seed: Annotated[int, typer.Option(help="Run seed of the sensor draws.")] = 0,
    signal: Annotated[
        str,
        typer.Option(
            help="Consistency signal shown with each reply (Fig. 3's ablation): true, none, "
            "random, or balanced (each person's sessions cycle through the three, in a seeded "
            "order). Stored with each session; the person's pages never name it."
        ),
    ] = "true",
    operator: Annotated[
        bool,
        typer.Option(
            "--operator",
            help="Browse RUN's records and report files instead of hosting human sessions.",
        ),
    ] = False,
    sweep: Annotated[
        bool,
        typer.Option(
            "--sweep",
            help="Sweep mode: people answer the sweep run RUN's boxed-object questions on its "
            "degraded images, stored as human:<name> sweep records the report draws.",
        ),
    ] = False,
    wording: Annotated[
        str | None,
        typer.Option(help="Sweep mode: the wording answered (default: the main letter one)."),
    ] = None,
) -> None:
    """Web page where a person plays the blind reasoner through the sensor (sessions are stored
    as transcripts in RUN's store; the page serves nothing else of the run), with --sweep a
    page where people answer a sweep run's questions on its images (stored as human:<name>
    sweep records), or with --operator a browser of the run's records (any protocol) that
    hosts no session."""
    from pydantic import ValidationError

    from clearsight.credentials import refuse_credentials
    from clearsight.ui import ServeSettings, serve_forever
    from clearsight.validate import InputError, invalid_options

    try:
        settings = ServeSettings(
            host=host,
            port=port,
            sensor=sensor,
            judge=judge,
            k=k,
            budget=budget,
            instances=instances,
            seed=seed,
            signal=signal,
            operator=operator,
            sweep=sweep,
            wording=wording,
        )
    except ValidationError as exc:
        raise _fail(str(invalid_options(exc, "serve options"))) from exc
    try:
        refuse_credentials(settings.model_dump(), "serve options")
        serve_forever(run, settings)
    except InputError as exc:
        raise _fail(str(exc)) from exc
