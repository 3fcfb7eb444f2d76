"""The pages of the sweep's human sessions (``clearsight serve RUN --sweep``): the start page,
a person's page (their current question), its image and its answer.

Nothing of the run beyond the current question's prompt, options and pixels is served; the
image is named by an opaque token, and a person's pages need the pass the browser that started
(or resumed) them was given (:class:`~clearsight.ui.pages.PassPages`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from clearsight.faces.serving import Site
from clearsight.ui.pages import PassPages
from clearsight.validate import InputError

__all__ = ["SweepPages", "SweepSessions", "SweepView"]


@dataclass(frozen=True)
class SweepView:
    """What a person's page shows: progress, and the current question (None when all are
    answered) by its opaque ``token``, its prompt and its lettered options."""

    name: str
    answered: int
    total: int
    token: str
    prompt: str
    options: list[tuple[str, str]]

    @property
    def done(self) -> bool:
        """Whether every question has been answered."""
        return self.answered >= self.total


class SweepSessions(Protocol):
    """What the pages ask of the sessions they serve
    (:class:`~clearsight.sweep.references.sessions.HumanSweep`)."""

    def blocked_reason(self) -> str | None:
        """Why sessions are refused, or None."""

    def start(self, name: str) -> str:
        """Start or resume ``name``'s session; the name."""

    def view(self, name: str) -> SweepView:
        """``name``'s page: progress and the current question."""

    def image(self, name: str, token: str) -> bytes | None:
        """The PNG of ``name``'s current question, if ``token`` names it."""

    def answer(self, name: str, token: str, letter: str, confidence: str) -> bool:
        """Store ``name``'s answer to the question ``token`` names."""


class SweepPages(PassPages):
    """The human sweep sessions (``--sweep``): the start page, a person's page (the current
    question), its image and its answer. Nothing of the run beyond the current question's
    prompt, options and pixels is served; the image is named by an opaque token, and a
    person's pages need the pass the browser that started (or resumed) them was given."""

    scope = "/sweep"
    home_path = "/sweep"
    no_pass = (
        "no session of yours with this name: start it from the start page (the same name "
        "resumes where it stopped)"
    )

    def __init__(self, site: Site, sweep: SweepSessions) -> None:
        super().__init__(site)
        self.sweep = sweep

    def routes(self) -> list[Route]:
        """Home (the start page), starting, a person's page, its image and answer, assets."""
        return [
            Route("/", self.home),
            Route("/sweep", self.start_page),
            Route("/sweep", self.start, methods=["POST"]),
            Route("/sweep/{key}", self.page),
            Route("/sweep/{key}/image/{token}", self.image),
            Route("/sweep/{key}/answer", self.answer, methods=["POST"]),
            Route("/static/{name}", self.static),
        ]

    async def home(self, request: Request) -> Response:
        """The start page is the home page of a server that hosts sweep sessions."""
        return RedirectResponse("/sweep", status_code=303)

    async def start_page(self, request: Request) -> Response:
        """The name form (or why sessions are refused)."""
        return self.render(request, "sweep_start.html", blocked=self.sweep.blocked_reason())

    async def start(self, request: Request) -> Response:
        """Start (or resume) the posted name's session, give this browser its pass, then go to
        its page."""
        fields = await self.form(request)
        try:
            name = await run_in_threadpool(self.sweep.start, fields.get("name", ""))
        except InputError as exc:
            raise HTTPException(400, str(exc)) from None
        return self.grant(RedirectResponse(f"/sweep/{name}", status_code=303), name)

    async def page(self, request: Request) -> Response:
        """The person's current question, or the end of their session."""
        name = self.own_key(request)
        view = await run_in_threadpool(self.sweep.view, name)
        return self.render(request, "sweep_item.html", view=view)

    async def image(self, request: Request) -> Response:
        """The PNG of the person's current question (404 for any other token)."""
        name = self.own_key(request)
        png = await run_in_threadpool(self.sweep.image, name, request.path_params["token"])
        if png is None:
            raise HTTPException(404, "no such image")
        return Response(png, media_type="image/png")

    async def answer(self, request: Request) -> Response:
        """Store the posted answer to the current question, then show the next one."""
        name = self.own_key(request)
        fields = await self.form(request)
        try:
            await run_in_threadpool(
                self.sweep.answer,
                name,
                fields.get("item", ""),
                fields.get("letter", ""),
                fields.get("confidence", ""),
            )
        except InputError as exc:
            raise HTTPException(400, str(exc)) from None
        return RedirectResponse(f"/sweep/{name}", status_code=303)
