"""``clearsight card`` and ``clearsight board``: one page per model across the three protocols,
and the models side by side (docs/card.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from clearsight.cli._options import Fresh, _fail, _interrupted


def card(
    model: Annotated[str, typer.Argument(help="The model by name, e.g. observer, perceiver:llm.")],
    out: Annotated[Path | None, typer.Option(help="Card directory (default: cards/MODEL).")] = None,
    config: Annotated[Path | None, typer.Option(help="YAML file of CardConfig fields.")] = None,
    workers: Annotated[
        int, typer.Option(min=1, help="Worker processes of the sweep (1: this process).")
    ] = 1,
    fresh: Fresh = False,
) -> None:
    """A compact run of all three protocols for MODEL (resumable), then DIR/card.html and
    DIR/card.json: the headline numbers with intervals beside the reference observer and the
    blind control, what was skipped and why, links to the full reports."""
    from clearsight.card import CardConfig, run_card
    from clearsight.config import load_config
    from clearsight.execute import Interrupted
    from clearsight.validate import InputError

    target = out if out is not None else Path("cards") / model.replace(":", "-").replace("/", "-")
    started = time.perf_counter()
    try:
        result = run_card(
            model,
            target,
            load_config(config, CardConfig),
            workers=workers,
            fresh=fresh,
            say=typer.echo,
        )
    except InputError as exc:
        raise _fail(str(exc)) from exc
    except Interrupted as exc:  # Ctrl-C or SIGTERM: what finished is committed
        raise _interrupted(exc) from None
    if any(not p.runs for p in result.parts):
        from clearsight.card.parts import FETCH_COMMAND

        typer.echo(
            f"skipped parts are listed on the card; `{FETCH_COMMAND}` fetches what a "
            "download provides"
        )
    typer.echo(f"card: {result.html} ({time.perf_counter() - started:.0f} s)")
    if result.failed:
        raise typer.Exit(code=3)


def board(
    cards: Annotated[list[Path], typer.Argument(help="Card directories (two or more).")],
    out: Annotated[Path, typer.Option(help="Board directory.")] = Path("board"),
) -> None:
    """DIR/board.html and DIR/board.csv: every card number side by side with its rank, and
    paired differences with intervals on the sweep items two cards share."""
    from clearsight.card.board import write_board
    from clearsight.validate import InputError

    try:
        paths = write_board(cards, out)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    typer.echo(f"board: {paths[0]}\ncsv: {paths[1]}")
