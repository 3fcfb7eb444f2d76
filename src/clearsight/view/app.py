"""The Starlette app of ``clearsight view``: the pages of one or more runs, read-only.

Routes (``N``: a run's place on the command line; ``KEY``: an item key, 64 hex digits)::

    /                      the runs
    /run/N/                the run's curve points, each a link to its items
    /run/N/items?...       a listing: filters, outcome, confidence sort, page
    /run/N/item/KEY        one item: its image, question, options as bars, answer, raw text
    /run/N/image/KEY.png   the image the model was shown, re-rendered on request
    /run/N/related/KEY/G   item KEY side by side with its group G (:mod:`~clearsight.view.side`)
    /run/N/across/KEY      item KEY side by side with the same item in every other run

No path from a request reaches the file system: runs are named by number and items by key,
and an image is rendered only for an item the run holds. Pages are rendered from autoescaped
Jinja2 templates (model output reaches the page as text) under a Content-Security-Policy with
no script at all; bound to loopback (the default), requests for other host names are refused
(DNS rebinding), as ``clearsight serve`` does. Bad input — a filter value the run does not
have, a malformed number — is a 400 page saying what the run has; an unknown run or item, 404.
No lock is taken and the run's database is only read (the one file written is the side index
beside it, :mod:`~clearsight.view.index`), so a run being written can be viewed. The app starts
serving at once: a run whose index is missing or far behind has it built in a background
thread (started with the app), and its points and listings answer 503 "indexing N of M items"
(reloading themselves every few seconds) until it is ready, so no request waits minutes.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from clearsight.faces.serving import LOOPBACK_HOSTS
from clearsight.faces.viewing import Query, RunView
from clearsight.validate import InputError
from clearsight.view.chart import curves_of
from clearsight.view.index import IndexNotReadyError
from clearsight.view.pages import render
from clearsight.view.query import OUTCOMES, SORTS, parse_query
from clearsight.view.side import side_links, side_routes

__all__ = ["VIEW_CSP", "create_view_app"]

#: Policy of every response: its own style sheet and images, no script, no form elsewhere.
VIEW_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": VIEW_CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_KEY = re.compile(r"[0-9a-f]{64}")
#: Seconds between the reloads of a page that waits for its run's index.
_RETRY_S = 2


@dataclass(frozen=True)
class _Pages:
    """The app's endpoints over the runs' views."""

    views: Sequence[RunView]

    def page(self, name: str, root: str, code: int = 200, **context: Any) -> HTMLResponse:
        html = render(name, root, **context)
        return HTMLResponse(html, status_code=code, headers=_HEADERS)

    def view(self, request: Request) -> RunView:
        number = str(request.path_params["run"])
        if not number.isdigit() or int(number) >= len(self.views):
            raise HTTPException(404, f"no run {number}: this viewer shows {len(self.views)}")
        return self.views[int(number)]

    async def error(self, request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        root = "../" * max(request.url.path.count("/") - 1, 0)
        return self.page("error.html", root, status, title="", status=status, message=detail)

    async def indexing(self, request: Request, exc: Exception) -> Response:
        """The page while a run's side index is built in the background: how far it is, and
        a reload every few seconds (no script: a refresh header)."""
        assert isinstance(exc, IndexNotReadyError)
        root = "../" * max(request.url.path.count("/") - 1, 0)
        title = self.view(request).title
        page = self.page(
            "indexing.html", root, 503, title=title, retry=_RETRY_S, done=exc.done, total=exc.total
        )
        page.headers["Retry-After"] = str(_RETRY_S)
        return page

    async def index(self, request: Request) -> Response:
        return self.page("index.html", "", title="", runs=[v.title for v in self.views])

    async def run_home(self, request: Request) -> Response:
        return RedirectResponse(f"/run/{request.path_params['run']}/", status_code=308)

    async def points(self, request: Request) -> Response:
        view = self.view(request)
        points = await run_in_threadpool(view.points)
        curves = curves_of(points, lambda _, p: f"items?{urlencode(dict(p.filters))}")
        return self.page(
            "points.html",
            "../../",
            title=view.title,
            curves=curves,
            every="items",
            intro="a point lists exactly the items its n counts.",
        )

    async def items(self, request: Request) -> Response:
        view = self.view(request)
        offered = view.filters()
        try:
            query = parse_query(dict(request.query_params), offered)
        except InputError as exc:
            raise HTTPException(400, str(exc)) from None
        listing = await run_in_threadpool(view.listing, query)
        pages = max(math.ceil(listing.total / query.per_page), 1)
        return self.page(
            "items.html",
            "../../",
            title=view.title,
            offered=offered,
            outcomes=OUTCOMES,
            sorts=SORTS,
            query=query,
            listing=listing,
            item_url=lambda key: f"item/{key}",
            image_url=lambda key: f"image/{key}.png",
            pages=pages,
            previous=_query_string(query, query.page - 1),
            next=_query_string(query, query.page + 1),
        )

    def key(self, request: Request) -> str:
        key = str(request.path_params["key"])
        if not _KEY.fullmatch(key):
            raise HTTPException(404, "no such item: an item is named by its 64-digit key")
        return key

    async def item(self, request: Request) -> Response:
        view, key = self.view(request), self.key(request)
        detail = await run_in_threadpool(view.detail, key)
        if detail is None:
            raise HTTPException(404, f"this run has no item {key}")
        number = int(str(request.path_params["run"]))
        sides = await run_in_threadpool(side_links, self.views, number, key)
        return self.page("item.html", "../../../", title=view.title, detail=detail, sides=sides)

    async def image(self, request: Request) -> Response:
        view, key = self.view(request), self.key(request)
        try:
            png = await run_in_threadpool(view.image, key)
        except InputError as exc:
            raise HTTPException(409, str(exc)) from None
        if png is None:
            raise HTTPException(404, f"this run has no item {key}")
        return Response(png, media_type="image/png", headers=_HEADERS)

    async def style(self, request: Request) -> Response:
        css = resources.files("clearsight.view").joinpath("static/view.css").read_text("utf-8")
        return Response(css, media_type="text/css; charset=utf-8", headers=_HEADERS)


def _query_string(query: Query, page: int) -> str:
    """The query string of ``query`` at ``page``."""
    params = {**query.filters, "outcome": query.outcome, "threshold": str(query.threshold)}
    params |= {"sort": query.sort, "page": str(page)}
    return urlencode({k: v for k, v in params.items() if v})


def create_view_app(
    views: Sequence[RunView], *, host: str = "127.0.0.1", allowed_hosts: list[str] | None = None
) -> Starlette:
    """The viewer's app over ``views`` (one per run, in order). ``allowed_hosts``: the Host
    header names accepted; by default the loopback names when ``host`` is a loopback address,
    else any (the user chose to expose the viewer)."""
    if allowed_hosts is None:
        allowed_hosts = sorted(LOOPBACK_HOSTS) if host in LOOPBACK_HOSTS else ["*"]
    pages = _Pages(tuple(views))
    get: list[tuple[str, Callable[[Request], Awaitable[Response]]]] = [
        ("/", pages.index),
        ("/static/view.css", pages.style),
        ("/run/{run}", pages.run_home),
        ("/run/{run}/", pages.points),
        ("/run/{run}/items", pages.items),
        ("/run/{run}/item/{key}", pages.item),
        ("/run/{run}/image/{key}.png", pages.image),
        *side_routes(pages),
    ]
    return Starlette(
        routes=[Route(path, endpoint, methods=["GET"]) for path, endpoint in get],
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)],
        exception_handlers={
            HTTPException: pages.error,
            IndexNotReadyError: pages.indexing,
            Exception: pages.error,
        },
        lifespan=_indexing(views),
    )


def _indexing(views: Sequence[RunView]) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """The app's lifespan: on start, each run's side index brought up to date in the
    background where it is far behind (the pages say how far until it is ready)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        for view in views:
            await run_in_threadpool(view.index.start)
        yield

    return lifespan
