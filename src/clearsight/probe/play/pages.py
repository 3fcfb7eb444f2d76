"""The pages of the probe's human sessions (``clearsight serve``, the default mode): the play
page, starting a session, its page and its three actions (ask, commit, abandon).

Nothing of the run beyond a session's own question, options and replies is served: no record,
no file, no gold; a session's page and actions need the pass the browser that started (or
resumed) it was given (:class:`~clearsight.ui.pages.PassPages`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from clearsight.faces.serving import Site
from clearsight.probe.play.views import SessionRow, SessionView
from clearsight.ui.pages import PassPages
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.probe.instances import Instance

__all__ = ["Play", "PlayPages"]


class Play(Protocol):
    """What the pages ask of the sessions they serve
    (:class:`~clearsight.probe.play.session.HumanPlay`)."""

    def blocked_reason(self) -> str | None:
        """Why sessions are refused, or None."""

    def instances(self) -> list[Instance]:
        """The instances a person can play."""

    def public_id(self, instance_id: str) -> str:
        """The id a player sees for an instance."""

    def sessions(self) -> list[SessionRow]:
        """Every human session of the run."""

    def view(self, key: str) -> SessionView | None:
        """Session ``key``'s page as its player sees it."""

    def start(self, name: str, instance_id: str) -> str:
        """Start or resume a session; its key."""

    def ask(self, key: str, query: str) -> None:
        """Ask the sensor the person's query."""

    def commit(self, key: str, letter: str) -> None:
        """Commit the person's answer."""

    def abandon(self, key: str) -> None:
        """End the session without an answer."""


#: What a posted turn does to a session: (session runner, key, posted form).
_Action = Callable[[Play, str, Mapping[str, str]], None]


class PlayPages(PassPages):
    """The human sessions (the default mode): the play page, starting one, its page and its
    three actions. Nothing of the run beyond a session's own question, options and replies is
    served: no record, no file, no gold. A session's page and actions need the pass cookie
    that the browser which started (or resumed) it was given (:meth:`grant`)."""

    no_pass = (
        "no session of yours with this key: start it from the play page (the same name on the "
        "same instance resumes an unfinished session)"
    )

    def __init__(self, site: Site, play: Play) -> None:
        super().__init__(site)
        self.play = play

    def routes(self) -> list[Route]:
        """Home (the play page), starting a session, its page, its three actions, assets."""
        return [
            Route("/", self.home),
            Route("/play", self.play_page),
            Route("/play", self.start, methods=["POST"]),
            Route("/session/{key}", self.session),
            Route("/session/{key}/query", self.turn_route(_do_ask), methods=["POST"]),
            Route("/session/{key}/commit", self.turn_route(_do_commit), methods=["POST"]),
            Route("/session/{key}/abandon", self.turn_route(_do_abandon), methods=["POST"]),
            Route("/static/{name}", self.static),
        ]

    async def home(self, request: Request) -> Response:
        """The play page is the home page of a server that hosts sessions."""
        return RedirectResponse("/play", status_code=303)

    async def play_page(self, request: Request) -> Response:
        """The instances to play and the player's own sessions (or why play is blocked)."""
        name = request.query_params.get("name", "").strip()
        public = self.play.public_id
        mine = [
            dataclasses.replace(row, instance_id=public(row.instance_id))
            for row in self.play.sessions()
            if row.human == f"human:{name}"
        ]
        return self.render(
            request,
            "play.html",
            blocked=self.play.blocked_reason(),
            instances=[(public(inst.id), inst) for inst in self.play.instances()],
            sessions=mine if name else [],
            player=name,
        )

    async def start(self, request: Request) -> Response:
        """Start (or resume) a session for the posted name and instance, give this browser its
        pass, then go to its page."""
        fields = await self.form(request)
        try:
            key = await run_in_threadpool(
                self.play.start, fields.get("name", ""), fields.get("instance", "")
            )
        except InputError as exc:
            raise HTTPException(400, str(exc)) from None
        return self.grant(RedirectResponse(f"/session/{key}", status_code=303), key)

    async def session(self, request: Request) -> Response:
        """The page of the player's own session (404 without its pass)."""
        view = self.play.view(self.own_key(request))
        if view is None:
            raise HTTPException(404, "no human session with this key")
        return self.render(request, "session.html", view=view)

    def turn_route(self, action: _Action) -> Callable[[Request], Awaitable[Response]]:
        """The endpoint that applies ``action`` to the player's own session the URL names,
        with the posted form, and goes back to the session's end."""

        async def endpoint(request: Request) -> Response:
            key = self.own_key(request)
            fields = await self.form(request)
            try:
                # the sensor may take seconds: keep the event loop free for other pages
                await run_in_threadpool(action, self.play, key, fields)
            except KeyError:
                raise HTTPException(404, "no human session with this key") from None
            except InputError as exc:
                raise HTTPException(400, str(exc)) from None
            return RedirectResponse(f"/session/{key}#end", status_code=303)

        return endpoint


def _do_ask(p: Play, key: str, fields: Mapping[str, str]) -> None:
    """Ask the sensor the posted query."""
    p.ask(key, fields.get("query", ""))


def _do_commit(p: Play, key: str, fields: Mapping[str, str]) -> None:
    """Commit to the posted letter."""
    p.commit(key, fields.get("letter", ""))


def _do_abandon(p: Play, key: str, fields: Mapping[str, str]) -> None:
    """End the session without an answer."""
    p.abandon(key)
