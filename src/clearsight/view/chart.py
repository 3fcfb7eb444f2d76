"""The points page's small charts: each curve's points placed on an SVG, a link per point.

Values are shares and probabilities, drawn on a fixed 0-1 axis. Points are placed evenly in the
order the view gives them, clearest first, so a curve's levels read left to right from clear
to blind whatever their spacing in metres.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from clearsight.view.model import Point

__all__ = ["Curve", "PlacedPoint", "curves_of"]

#: Chart size (px): width per point, plotting height and the margins for ticks.
STEP, HEIGHT, TOP, BOTTOM = 60, 100, 8, 22


@dataclass(frozen=True)
class PlacedPoint:
    """A point on its chart: its centre (px), the query string of its listing and what the
    page says of it."""

    cx: float
    cy: float
    query: str
    x_label: str
    value: float
    n: int


@dataclass(frozen=True)
class Curve:
    """One curve's chart: its name, size, the polyline through its points and the points."""

    name: str
    width: int
    height: int
    path: str
    points: tuple[PlacedPoint, ...]


def _placed(points: Sequence[Point]) -> tuple[PlacedPoint, ...]:
    placed = []
    for i, p in enumerate(points):
        share = min(max(p.value, 0.0), 1.0) if p.value == p.value else 0.0
        cy = TOP + (1.0 - share) * HEIGHT
        query = urlencode(dict(p.filters))
        cx = STEP / 2 + i * STEP
        placed.append(PlacedPoint(cx, round(cy, 1), query, p.x_label, p.value, p.n))
    return tuple(placed)


def curves_of(points: Sequence[Point]) -> list[Curve]:
    """The points grouped into their curves, in the order each curve first appears."""
    grouped: dict[str, list[Point]] = {}
    for p in points:
        grouped.setdefault(p.curve, []).append(p)
    curves = []
    for name, members in grouped.items():
        placed = _placed(members)
        path = " ".join(f"{p.cx},{p.cy}" for p in placed) if len(placed) > 1 else ""
        curves.append(Curve(name, STEP * len(placed), TOP + HEIGHT + BOTTOM, path, placed))
    return curves
