"""The ``clearsight`` command line: one typer app, a command group per protocol.

The run commands' options are generated from their configuration models
(:mod:`clearsight.cli.generate`): ``clearsight sweep run``, ``grounding run``, ``grounding
build-bench``, ``probe run``, ``probe build``, ``probe analyse``, ``probe distill``, ``card`` and
``serve`` each take ``--config FILE``, an option per field, ``--set FIELD=VALUE`` and a few
aliases; the run commands also the execution options (:mod:`clearsight.cli.execution`). The
options of ``verify``, ``compare``, ``fetch``, ``demo``, ``preview``, ``equivalence``, ``guard
calibrate``, ``probe judges``, ``probe query-types``, ``export``, ``push`` and ``view`` are
generated the same way from a model of the command's options (no ``--config``).
``clearsight report RUN`` writes the report of a run of any protocol. Every error ends as one
line and its exit code (:mod:`clearsight.cli.errors`). Heavy imports happen inside commands,
and a command's model is imported when the command is built (the option models of the commands
without a configuration in :mod:`clearsight.cli.options`), so ``clearsight --help`` imports
neither pydantic nor YAML; its help is click's plain one (no Rich), each command listed with
the first sentence of its help: it starts in about 0.13 s of CPU.
"""

from __future__ import annotations

from typing import Annotated

import typer

from clearsight.cli import (
    card,
    data,
    demo,
    export,
    fetch,
    grounding,
    guard,
    models,
    pages,
    plan,
    probe,
    report,
    scenes,
    serve,
    sweep,
    track,
    verify,
    view,
)
from clearsight.cli.demo import PERCEIVERS, demo_config, demo_models
from clearsight.cli.generate import command_group

__all__ = ["PERCEIVERS", "app", "demo_config", "demo_models", "main"]

app = typer.Typer(
    cls=command_group(
        card.CARD,
        plan.PLAN,
        serve.SERVE,
        fetch.FETCH,
        demo.DEMO,
        verify.VERIFY,
        verify.COMPARE,
        view.VIEW,
        scenes.PREVIEW,
        scenes.EQUIVALENCE,
        export.EXPORT,
        export.PUSH,
        moved={
            "build": "clearsight probe build",
            "build-bench": "clearsight grounding build-bench",
        },
        order=(
            *("sweep", "plan", "grounding", "probe", "report", "demo", "card", "board", "scenes"),
            *("preview", "equivalence", "instances", "problems", "serve", "fetch", "models"),
            *("verify", "compare", "export", "push", "view", "track"),
        ),
    ),
    help="Measure whether vision-language models know when they cannot see.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: never cut, and no Rich import (start-up)
)


@app.callback()
def _root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of an error, after its line.")
    ] = False,
) -> None:
    """Measure whether vision-language models know when they cannot see."""
    # --debug is read from the command line by the root group, which prints the errors


app.add_typer(sweep.app, name="sweep")
app.add_typer(grounding.app, name="grounding")
app.add_typer(probe.app, name="probe")
app.command()(report.report)
app.command()(track.track)
app.command()(card.board)
app.command()(scenes.scenes)
app.command()(data.instances)
app.command()(data.problems)
app.add_typer(models.app, name="models")
app.add_typer(guard.app, name="guard")
app.command()(pages.docs)
app.command()(pages.examples)


def main() -> None:  # pragma: no cover - console entry point
    """Run the command line (the ``clearsight`` console script)."""
    app()
