"""``clearsight card`` and ``clearsight board``: one page per model across the three protocols
(its options generated from :class:`~clearsight.card.CardConfig`), and the models side by side
(docs/card.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli.generate import ConfigCommand

if TYPE_CHECKING:
    from clearsight.card import CardConfig


def card(
    config: CardConfig,
    model: Annotated[str, typer.Argument(help="The model by name, e.g. observer, perceiver:llm.")],
    out: Annotated[Path | None, typer.Option(help="Card directory (default: cards/MODEL).")] = None,
    workers: Annotated[
        int, typer.Option(min=1, help="Worker processes of the sweep (1: this process).")
    ] = 1,
    fresh: Annotated[bool, typer.Option(help="Delete the card's runs first.")] = False,
) -> None:
    """A compact run of all three protocols for MODEL, then DIR/card.html and DIR/card.json.

    Resumable. The card holds the headline numbers with intervals beside the reference observer
    and the blind control, what was skipped and why, and links to the full reports."""
    from clearsight.card import run_card

    target = out if out is not None else Path("cards") / model.replace(":", "-").replace("/", "-")
    started = time.perf_counter()
    result = run_card(model, target, config, workers=workers, fresh=fresh, say=typer.echo)
    if any(not p.runs for p in result.parts):
        from clearsight.card.parts import FETCH_COMMAND

        typer.echo(
            f"skipped parts are listed on the card; `{FETCH_COMMAND}` fetches what a "
            "download provides"
        )
    typer.echo(f"card: {result.html} ({time.perf_counter() - started:.0f} s)")
    if result.failed:
        raise typer.Exit(code=3)


def _card_config() -> type[CardConfig]:
    from clearsight.card import CardConfig

    return CardConfig


CARD = ConfigCommand("card", _card_config, card)


def board(
    cards: Annotated[
        list[Path] | None, typer.Argument(help="Card directories (two or more).")
    ] = None,
    out: Annotated[Path, typer.Option(help="Board directory.")] = Path("board"),
    records: Annotated[
        list[Path] | None,
        typer.Option(help="A folder of exported Every Eval Ever records (repeatable)."),
    ] = None,
) -> None:
    """DIR/board.html and DIR/board.csv: every card number side by side with its rank.

    And paired differences with intervals on the sweep items two cards share. With --records
    (folders of `clearsight export --format eee` records), DIR/leaderboard.html and
    DIR/leaderboard.csv: the models ranked per evaluation with intervals and which are not
    separable."""
    if records:
        from clearsight.export import write_leaderboard

        html, csv = write_leaderboard(records, out)
        typer.echo(f"leaderboard: {html}\ncsv: {csv}")
    if cards or not records:
        from clearsight.card.board import write_board

        paths = write_board(cards or [], out)
        typer.echo(f"board: {paths[0]}\ncsv: {paths[1]}")
