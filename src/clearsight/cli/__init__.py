"""The ``clearsight`` command line: one typer app, one module per command group.

:mod:`~clearsight.cli._options` holds what every run command shares (the run options, how a
run starts and ends); each run command reads its protocol's configuration from ``--config``
YAML with its flags laid over it (:func:`clearsight.config.load_config`). Heavy imports happen
inside commands, so ``--help`` is fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

from clearsight.cli import (
    build,
    card,
    data,
    demo,
    fetch,
    grounding,
    guard,
    models,
    pages,
    probe,
    scenes,
    serve,
    sweep,
    tgs_bench,
)
from clearsight.cli._options import DEBUG_KEY, Group
from clearsight.cli.demo import PERCEIVERS, demo_config, demo_models

__all__ = ["PERCEIVERS", "app", "demo_config", "demo_models", "main"]

app = typer.Typer(
    cls=Group,
    help="Measure whether vision-language models know when they cannot see.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    ctx: typer.Context,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of an error, after its line.")
    ] = False,
) -> None:
    """Measure whether vision-language models know when they cannot see."""
    ctx.meta[DEBUG_KEY] = debug


app.add_typer(models.app, name="models")
app.command()(scenes.scenes)
app.command()(scenes.preview)
app.command()(scenes.equivalence)
app.command()(sweep.sweep)
app.command()(sweep.report)
app.command()(demo.demo)
app.command()(card.card)
app.command()(card.board)
app.command()(fetch.fetch)
app.command()(data.instances)
app.command()(data.problems)
app.command()(serve.serve)
app.command()(build.build)
app.command()(grounding.grounding)
app.command()(tgs_bench.build_bench)
app.add_typer(probe.app, name="probe")
app.add_typer(guard.app, name="guard")
app.command()(pages.docs)
app.command()(pages.examples)


def main() -> None:  # pragma: no cover - console entry point
    """Run the command line (the ``clearsight`` console script)."""
    app()
