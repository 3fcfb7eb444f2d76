"""``clearsight export RUN --format parquet|eval-results|eee`` and ``clearsight push RUN --hub
ORG/NAME``: a finished run's results where researchers keep them (:mod:`clearsight.export`,
docs/export.md). Their options are generated from :class:`ExportCommandOptions` and
:class:`PushOptions`; the four both take (``--model``, ``--n-boot``, ``--seed``,
``--images``) are declared once, as annotated field types."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli.generate import ConfigCommand, option_model

if TYPE_CHECKING:
    from clearsight.cli.options import ExportCommandOptions, PushOptions

_RUN = typer.Argument(help="A finished run directory (of any protocol).")


def export(options: ExportCommandOptions, run: Annotated[Path, _RUN]) -> None:
    """Write a finished run's results as a Hub dataset, Hub eval results or Every Eval Ever.

    The numbers (W, V*_acc, ECE, AURC, accuracy, TGS, ...) are the run's card numbers with
    their 95 % bootstrap intervals; docs/export.md says what each file holds."""
    from clearsight.export import ExportOptions, export_run, parse_repo_id

    hub = None if options.hub is None else parse_repo_id(options.hub)
    numbers = ExportOptions(options.n_boot, options.seed, options.model, hub, options.images)
    for path in export_run(run, options.format, options.out, numbers):
        typer.echo(f"wrote {path}")


def push(options: PushOptions, run: Annotated[Path, _RUN]) -> None:
    """Upload a finished run's details dataset and open a PR with its eval results.

    Through huggingface_hub (pip install 'clearsight[hub]'): its token (HF_TOKEN or hf auth
    login) and endpoint (HF_ENDPOINT); the eval results go to the model repository as a pull
    request. Nothing is written locally."""
    from clearsight.export import ExportOptions, push_run

    numbers = ExportOptions(options.n_boot, options.seed, options.model, images=options.images)
    pushed = push_run(run, options.hub, numbers, pr=options.pr, model_repo=options.model_repo)
    typer.echo(f"details: {pushed.dataset}\neval results: {pushed.model_pr}")


EXPORT = ConfigCommand(
    "export", option_model("ExportCommandOptions"), export, what="export options", files=False
)
PUSH = ConfigCommand("push", option_model("PushOptions"), push, what="push options", files=False)
