"""A listing's query string read into a :class:`~clearsight.faces.viewing.Query`, every value
checked: a filter the run does not offer, or a value it does not have, is an InputError naming
what it has (a 4xx page, never an empty listing that looks like an answer)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from clearsight.faces.viewing import Query
from clearsight.validate import InputError

__all__ = ["OUTCOMES", "PER_PAGE", "SORTS", "parse_query"]

#: The outcomes a listing selects by (``""``: any).
OUTCOMES: tuple[str, ...] = ("", "correct", "wrong", "abstained", "confidently-wrong")
#: The sorts by confidence (``""``: the run's order).
SORTS: tuple[str, ...] = ("", "desc", "asc")
#: Items a page lists.
PER_PAGE = 50
#: Parameters that are not filters.
_OWN = ("outcome", "threshold", "sort", "page")


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        named = ", ".join(repr(v) for v in allowed if v) or "none"
        raise InputError(f"{name} {value!r} does not exist in this run: it has {named}")
    return value


def _number(name: str, text: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{name} must be a number, got {text!r}") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise InputError(f"{name} must lie in [{low:g}, {high:g}], got {text!r}")
    return value


def parse_query(params: Mapping[str, str], offered: Mapping[str, tuple[str, ...]]) -> Query:
    """The :class:`Query` of a listing's parameters (``offered``: the run's filters and their
    values, :meth:`~clearsight.faces.viewing.RunView.filters`); an empty value leaves its filter
    out. InputError for an unknown parameter or a value that does not exist."""
    filters: dict[str, str] = {}
    for name, value in params.items():
        if name in _OWN or value == "":
            continue
        if name not in offered:
            raise InputError(f"no filter {name!r}: this run offers {', '.join(offered)}")
        filters[name] = _choice(name, value, offered[name])
    page = _number("page", params.get("page") or "0", 0, 10**9)
    if page != int(page):
        raise InputError(f"page must be a whole number, got {params.get('page')!r}")
    return Query(
        filters=filters,
        outcome=_choice("outcome", params.get("outcome", ""), OUTCOMES),
        threshold=_number("threshold", params.get("threshold") or "0.8", 0.0, 1.0),
        sort=_choice("sort", params.get("sort", ""), SORTS),
        page=int(page),
        per_page=PER_PAGE,
    )
