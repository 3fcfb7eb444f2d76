"""The blind-spot card: a compact run of all three protocols for one model on one page, and
the board that sets several cards side by side (docs/card.md).

:mod:`~clearsight.card.config` holds the sizes, :mod:`~clearsight.card.parts` decides which
parts run, :mod:`~clearsight.card.run` runs them and writes ``card.html`` / ``card.json``
(numbers read by :mod:`~clearsight.card.numbers`, page by :mod:`~clearsight.card.page`), and
:mod:`~clearsight.card.board` compares cards.
"""

from clearsight.card.config import CardConfig
from clearsight.card.run import CardResult, load_card, run_card

__all__ = ["CardConfig", "CardResult", "load_card", "run_card"]
