"""Items side by side in ``clearsight view``: an item's related groups (the same item for each
model, its scene across levels) and the same item in each run the viewer shows.

Routes (added to the app's, :func:`side_routes`)::

    /run/N/related/KEY/NAME   the group NAME of item KEY (RunView.related), a column each
    /run/N/across/KEY         item KEY of run N and its match in every other run

A run's item is matched in another run by what its view says the item is
(:meth:`~clearsight.faces.viewing.RunView.identity`, the protocol's ``clearsight compare``
matching) and found there by :meth:`~clearsight.faces.viewing.RunView.find`; the runs a
viewer shows are of one protocol (:func:`clearsight.view.open_views`). Each column is the
item's :class:`~clearsight.faces.viewing.Detail` with its image, the labels all columns share
said once in the heading rather than in each column.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from clearsight.faces.viewing import Detail, RunView

__all__ = ["Column", "side_links", "side_routes"]


@dataclass(frozen=True)
class Column:
    """One item of a side-by-side page: its heading, the links to its page and image (empty:
    none), its detail, and the labels every column shares (not repeated in each)."""

    label: str
    href: str
    image: str
    detail: Detail
    shared: frozenset[str]


class Site(Protocol):
    """What the side pages need of the app (:class:`clearsight.view.app._Pages`)."""

    @property
    def views(self) -> Sequence[RunView]:
        """The runs' views, in the command line's order."""
        ...

    def page(self, name: str, root: str, code: int = 200, **context: Any) -> HTMLResponse:
        """The template ``name`` as a response."""
        ...

    def view(self, request: Request) -> RunView:
        """The run a request names (404 for none)."""
        ...

    def key(self, request: Request) -> str:
        """The item key a request names (404 for a malformed one)."""
        ...


def side_links(views: Sequence[RunView], number: int, key: str) -> list[tuple[str, str]]:
    """The side-by-side pages of item ``key`` of run ``number``, as (link from its item page,
    text): each related group, and the item in every run where the viewer shows several."""
    links = [(f"../related/{key}/{group.name}", group.title) for group in views[number].groups(key)]
    if len(views) > 1 and views[number].identity(key) is not None:
        links.append((f"../across/{key}", f"this item in each of the {len(views)} runs"))
    return links


def _columns(
    root: str, found: Sequence[tuple[str, int, str]], views: Sequence[RunView]
) -> list[Column]:
    """Each found item (its label, run number and key) as a column."""
    details = [(label, n, views[n].detail(key)) for label, n, key in found]
    present = [(label, n, d) for label, n, d in details if d is not None]
    values = [d.labels for _, _, d in present]
    shared = frozenset(
        name for name in (values[0] if values else {}) if len({v.get(name) for v in values}) == 1
    )
    return [
        Column(
            label,
            f"{root}run/{n}/item/{d.key}",
            f"{root}run/{n}/image/{d.key}.png" if d.image else "",
            d,
            shared if len(present) > 1 else frozenset(),
        )
        for label, n, d in present
    ]


@dataclass(frozen=True)
class _SidePages:
    """The side-by-side endpoints over the app's ``site``."""

    site: Site

    def _number(self, request: Request) -> tuple[RunView, int, str]:
        view, key = self.site.view(request), self.site.key(request)
        return view, int(str(request.path_params["run"])), key

    async def related(self, request: Request) -> Response:
        view, number, key = self._number(request)
        name = str(request.path_params["name"])
        group = await run_in_threadpool(view.related, key, name)
        if group is None:
            groups = await run_in_threadpool(view.groups, key)
            named = ", ".join(g.name for g in groups) or "none"
            raise HTTPException(404, f"item {key} has no group {name!r}: it has {named}")
        found = [(m.label, number, m.key) for m in group.members]
        root = "../../../../"
        columns = await run_in_threadpool(_columns, root, found, self.site.views)
        return self.site.page(
            "side.html", root, title=view.title, heading=group.title, side=columns, missing=()
        )

    async def across(self, request: Request) -> Response:
        view, number, key = self._number(request)
        views = self.site.views
        identity = await run_in_threadpool(view.identity, key)
        if identity is None:
            raise HTTPException(404, f"run {number} has no item {key} to match in other runs")
        keys = [
            key if n == number else await run_in_threadpool(v.find, identity)
            for n, v in enumerate(views)
        ]
        found = [(v.title, n, k) for n, (v, k) in enumerate(zip(views, keys, strict=True)) if k]
        missing = [v.title for v, k in zip(views, keys, strict=True) if k is None]
        root = "../../../"
        columns = await run_in_threadpool(_columns, root, found, views)
        heading = "The same item in each run (matched as clearsight compare matches)"
        return self.site.page(
            "side.html", root, title=view.title, heading=heading, side=columns, missing=missing
        )


def side_routes(site: Site) -> list[tuple[str, Callable[[Request], Awaitable[Response]]]]:
    """The side-by-side pages' routes (module docstring) over the app's ``site``."""
    pages = _SidePages(site)
    return [
        ("/run/{run}/related/{key}/{name}", pages.related),
        ("/run/{run}/across/{key}", pages.across),
    ]
