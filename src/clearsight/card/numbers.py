"""The card's numbers as ``card.json`` holds them (:class:`CardJSON`, the file's layout), and
the cost table of its runs.

Every number is a :class:`~clearsight.faces.card.Number` its run's protocol gives in its card
section (:attr:`ProtocolFace.card <clearsight.faces.face.ProtocolFace.card>`): its key exactly
as the page shows it, the estimate with its 95 % bootstrap interval, a censoring or bound flag
where the estimate is one, and the text the page shows. ``card.json`` holds the same values
under the same keys (:func:`numbers_json`); the cost of every run of the card is one table
(:func:`card_cost`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

import pandas as pd

from clearsight.faces.card import Number, NumberJSON
from clearsight.faces.card_run import PartJSON
from clearsight.store import COST_COLUMNS

__all__ = ["CardJSON", "card_cost", "cost_json", "numbers_json"]


class CardJSON(TypedDict):
    """card.json: the card's model, the hash of what made it, the card's configuration (its
    ``model_dump``), each sweep model's role and numbers (model -> key -> number), the parts
    and the part reports' paths relative to the card directory."""

    card_version: int
    model: str
    manifest_hash: str
    config: dict[str, Any]
    roles: dict[str, str]
    numbers: dict[str, dict[str, NumberJSON]]
    cost: list[dict[str, str | int | float | None]]
    parts: list[PartJSON]
    reports: dict[str, str]


def numbers_json(numbers: Iterable[Number]) -> dict[str, NumberJSON]:
    """``{key: number}`` as card.json holds a model's numbers."""
    return {n.key: n.to_json() for n in numbers}


def card_cost(costs: Mapping[str, pd.DataFrame | None]) -> pd.DataFrame:
    """The cost tables of the card's parts (part -> :func:`clearsight.store.run_cost`'s table)
    as one, each model labelled with its part (``observer (sweep)``)."""
    frames = [
        cost.assign(model=[f"{m} ({part})" for m in cost["model"]])
        for part, cost in costs.items()
        if cost is not None and not cost.empty
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COST_COLUMNS)


def cost_json(cost: pd.DataFrame) -> list[dict[str, str | int | float | None]]:
    """:func:`card_cost`'s rows as card.json holds them (NaN as null)."""
    return [
        {
            str(k): (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in row.items()
        }
        for row in cost.astype(object).to_dict("records")
    ]
