"""Two small cards shared by the card tests, each run once: the scripted model of
:mod:`fixtures.cards` beside the reference observer, and the observer's own card on the same
items (the board's pair)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clearsight.card import CardResult, run_card
from fixtures.cards import SMALL, scripted_model


@pytest.fixture(scope="session")
def cards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, CardResult]]:
    """``{"scripted": (model, result), "observer": (model, result)}``, each run once."""
    root = tmp_path_factory.mktemp("cards")
    model = scripted_model(root)
    quiet: Callable[[str], None] = lambda _: None  # noqa: E731
    scripted = run_card(model, root / "scripted", SMALL, say=quiet)
    alone = SMALL.model_copy(update={"anchors": ()})
    observer = run_card("observer", root / "observer", alone, say=quiet)
    return {"scripted": (model, scripted), "observer": ("observer", observer)}
