"""``clearsight export RUN --format parquet|eval-results|eee`` and ``clearsight push RUN --hub
ORG/NAME``: a finished run's results where researchers keep them (:mod:`clearsight.export`,
docs/export.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

_FORMAT_HELP = (
    "parquet: the details dataset (data/details.parquet, README.md); eval-results: each "
    "model's .eval_results/clearsight-PROTOCOL.yaml; eee: Every Eval Ever records."
)
_RUN = typer.Argument(help="A finished run directory (of any protocol).")
_MODEL = typer.Option(
    "--model", help="Only this model of the run (a one-model run's numbers: their model's name)."
)
_N_BOOT = typer.Option("--n-boot", min=100, help="Bootstrap draws of every interval.")
_SEED = typer.Option(help="Seed of the bootstrap and of the details' sample.")
_IMAGES = typer.Option(
    "--images", min=0, help="Rows of the details' sample with the image the model was shown."
)


def export(
    run: Annotated[Path, _RUN],
    fmt: Annotated[str, typer.Option("--format", help=_FORMAT_HELP)],
    out: Annotated[Path | None, typer.Option(help="Export folder (default: RUN/export).")] = None,
    hub: Annotated[
        str | None, typer.Option(help="The Hub dataset ORG/NAME holding the details.")
    ] = None,
    model: Annotated[str | None, _MODEL] = None,
    n_boot: Annotated[int, _N_BOOT] = 1000,
    seed: Annotated[int, _SEED] = 0,
    images: Annotated[int, _IMAGES] = 64,
) -> None:
    """Write a finished run's results as a Hub dataset, Hub eval results or Every Eval Ever.

    The numbers (W, V*_acc, ECE, AURC, accuracy, TGS, ...) are the run's card numbers with
    their 95 % bootstrap intervals; docs/export.md says what each file holds."""
    from clearsight.export import ExportOptions, export_run, parse_repo_id

    options = ExportOptions(
        n_boot, seed, model, None if hub is None else parse_repo_id(hub), images
    )
    for path in export_run(run, fmt, out, options):
        typer.echo(f"wrote {path}")


def push(
    run: Annotated[Path, _RUN],
    hub: Annotated[str, typer.Option(help="The Hub dataset ORG/NAME the details go to.")],
    pr: Annotated[bool, typer.Option("--pr", help="Open the dataset's upload as a PR.")] = False,
    model_repo: Annotated[
        str | None,
        typer.Option(help="The model repository ORG/NAME (default: the one the model names)."),
    ] = None,
    model: Annotated[str | None, _MODEL] = None,
    n_boot: Annotated[int, _N_BOOT] = 1000,
    seed: Annotated[int, _SEED] = 0,
    images: Annotated[int, _IMAGES] = 64,
) -> None:
    """Upload a finished run's details dataset and open a PR with its eval results.

    Through huggingface_hub (pip install 'clearsight[hub]'): its token (HF_TOKEN or hf auth
    login) and endpoint (HF_ENDPOINT); the eval results go to the model repository as a pull
    request. Nothing is written locally."""
    from clearsight.export import ExportOptions, push_run

    options = ExportOptions(n_boot, seed, model, images=images)
    pushed = push_run(run, hub, options, pr=pr, model_repo=model_repo)
    typer.echo(f"details: {pushed.dataset}\neval results: {pushed.model_pr}")
