"""``clearsight export RUN --format parquet|eval-results|eee`` and ``clearsight push RUN --hub
ORG/NAME``: a finished run's results where researchers keep them (:mod:`clearsight.export`,
docs/export.md). Their options are generated from :class:`ExportCommandOptions` and
:class:`PushOptions`; the four both take (``--model``, ``--n-boot``, ``--seed``,
``--images``) are declared once, as annotated field types."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, ConfigDict, Field

from clearsight.cli.generate import ConfigCommand

_FORMAT_HELP = (
    "parquet: the details dataset (data/details.parquet, README.md); eval-results: each "
    "model's .eval_results/clearsight-PROTOCOL.yaml; eee: Every Eval Ever records."
)
_RUN = typer.Argument(help="A finished run directory (of any protocol).")

#: The options both commands take: which model's numbers, how they are bootstrapped, and how
#: many rows of the details' sample carry their image.
_Model = Annotated[
    str | None,
    Field(
        description="Only this model of the run (a one-model run's numbers: their model's name)."
    ),
]
_NBoot = Annotated[int, Field(ge=100, description="Bootstrap draws of every interval.")]
_Seed = Annotated[int, Field(description="Seed of the bootstrap and of the details' sample.")]
_Images = Annotated[
    int, Field(ge=0, description="Rows of the details' sample with the image the model was shown.")
]


class ExportCommandOptions(BaseModel):
    """What ``clearsight export`` writes, and where."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = Field(description=_FORMAT_HELP)
    out: Path | None = Field(None, description="Export folder (default: RUN/export).")
    hub: str | None = Field(None, description="The Hub dataset ORG/NAME holding the details.")
    model: _Model = None
    n_boot: _NBoot = 1000
    seed: _Seed = 0
    images: _Images = 64


class PushOptions(BaseModel):
    """Where ``clearsight push`` uploads a run's details and eval results."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hub: str = Field(description="The Hub dataset ORG/NAME the details go to.")
    pr: bool = Field(False, description="Open the dataset's upload as a PR.")
    model_repo: str | None = Field(
        None, description="The model repository ORG/NAME (default: the one the model names)."
    )
    model: _Model = None
    n_boot: _NBoot = 1000
    seed: _Seed = 0
    images: _Images = 64


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
    "export", lambda: ExportCommandOptions, export, what="export options", files=False
)
PUSH = ConfigCommand("push", lambda: PushOptions, push, what="push options", files=False)
