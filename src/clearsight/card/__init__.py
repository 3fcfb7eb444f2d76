"""The blind-spot card: a compact run of every protocol that takes part in a card for one
model on one page, and the board that sets several cards side by side (docs/card.md).

The sizes are :class:`~clearsight.faces.card_run.CardConfig`; each protocol says through its
face how it takes part (:class:`~clearsight.faces.card_run.CardRun`: its parts, its run, what a
board pairs), so this package iterates the registry and names no protocol.
:mod:`~clearsight.card.parts` decides which parts run, :mod:`~clearsight.card.run` runs them
and writes ``card.html`` / ``card.json`` (numbers read by :mod:`~clearsight.card.numbers`,
page by :mod:`~clearsight.card.page`), and :mod:`~clearsight.card.board` compares cards.
"""

from clearsight.card.run import CardResult, load_card, run_card
from clearsight.faces.card_run import CardConfig

__all__ = ["CardConfig", "CardResult", "load_card", "run_card"]
