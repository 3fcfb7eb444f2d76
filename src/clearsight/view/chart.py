"""The points page's small charts: each curve's points placed on an SVG, a link per point.

Values are shares and probabilities, drawn on a fixed 0-1 axis. Points are placed evenly in the
order the view gives them, clearest first, so a curve's levels read left to right from clear
to blind whatever their spacing in metres. A curve whose axis labels do not all fit the width
of a point (:data:`TICK_CHARS`) is ticked by the points' numbers instead (1, 2, ...), each
number beside its label in the table under the chart, so no two labels overlap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from clearsight.faces.viewing import Point

__all__ = ["Curve", "PlacedPoint", "curves_of"]

#: Chart size (px): width per point, plotting height and the margins for ticks.
STEP, HEIGHT, TOP, BOTTOM = 60, 100, 8, 22
#: The longest axis label that fits under a point (the ticks' 9 px font in ``STEP`` px).
TICK_CHARS = 10


@dataclass(frozen=True)
class PlacedPoint:
    """A point on its chart: the point, its centre (px), the link to its listing and its tick
    (its label, or its number where its curve's labels do not fit)."""

    point: Point
    cx: float
    cy: float
    href: str
    tick: str


#: The link of a point's listing, from its place among all the points and the point.
Href = Callable[[int, Point], str]


@dataclass(frozen=True)
class Curve:
    """One curve's chart: its name, size, the polyline through its points and the points."""

    name: str
    width: int
    height: int
    path: str
    points: tuple[PlacedPoint, ...]


def _placed(members: Sequence[tuple[int, Point]], href: Href) -> tuple[PlacedPoint, ...]:
    placed = []
    fits = all(len(p.x_label) <= TICK_CHARS for _, p in members)
    for i, (number, p) in enumerate(members):
        share = min(max(p.value, 0.0), 1.0) if p.value == p.value else 0.0
        cy = TOP + (1.0 - share) * HEIGHT
        cx = STEP / 2 + i * STEP
        link = href(number, p)
        placed.append(PlacedPoint(p, cx, round(cy, 1), link, p.x_label if fits else str(i + 1)))
    return tuple(placed)


def curves_of(points: Sequence[Point], href: Href) -> list[Curve]:
    """The points grouped into their curves, in the order each curve first appears, each
    point linking to ``href(its place in points, the point)``."""
    grouped: dict[str, list[tuple[int, Point]]] = {}
    for number, p in enumerate(points):
        grouped.setdefault(p.curve, []).append((number, p))
    curves = []
    for name, members in grouped.items():
        placed = _placed(members, href)
        path = " ".join(f"{p.cx},{p.cy}" for p in placed) if len(placed) > 1 else ""
        curves.append(Curve(name, STEP * len(placed), TOP + HEIGHT + BOTTOM, path, placed))
    return curves
