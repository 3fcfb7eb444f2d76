"""The Starlette app of ``clearsight serve``: play the blind reasoner, browse a run's records.

Pages are rendered on the server from Jinja2 templates with autoescaping on for every template,
so model output (sensor replies, raw records, errors) always reaches the page as text; no
template marks run data ``|safe``. Further defences, each cheap:

* **Content-Security-Policy** ``script-src 'self'`` on every page: even if some text slipped
  through unescaped, an injected inline ``<script>`` would not run. Files of the run are served
  with ``sandbox`` (an HTML report opens in an opaque origin, without scripts).
* **Files**: one route serves files, through :func:`clearsight.ui.runs.safe_file`, which
  resolves the path and refuses anything outside the run directory (``../``, its
  percent-encoded forms, absolute paths, symlinks out) with 404.
* **Forms** carry a per-process random token (a page of another site cannot post a query or a
  commit into a session), and a **Host check** refuses requests for names other than the
  loopback ones when bound to loopback (DNS rebinding).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clearsight.ui.runs import (
    HIDDEN,
    MAX_PER_PAGE,
    list_files,
    public_record,
    read_record,
    record_page,
    run_summary,
    safe_file,
)
from clearsight.ui.settings import LOOPBACK_HOSTS, ServeSettings
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.ui.session import HumanPlay

__all__ = ["PAGE_CSP", "create_app"]

#: Policy of every page the app renders: its own script and style only, nothing inline.
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
#: Policy of files served from the run directory: sandboxed, no scripts, inline CSS and data:
#: images allowed (the self-contained report.html needs both).
FILE_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"
#: Largest form body accepted (a query is a sentence; this is generous).
MAX_FORM_BYTES = 64 * 1024
#: Characters of a record's raw JSON shown on its page (the raw.json link has it all).
RAW_LIMIT = 200_000

_STATIC = {"app.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8"}


class _SecurityHeaders:
    """ASGI middleware adding the page CSP and hardening headers to responses lacking them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                for name, value in (
                    (b"content-security-policy", PAGE_CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"cache-control", b"no-store"),
                ):
                    if name not in present:
                        headers.append((name, value))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _environment() -> jinja2.Environment:
    """The template environment: package templates, autoescape on for every template."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("clearsight.ui", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _pretty(value: Any) -> str:
    """Indented JSON for a page (NaN kept as a token, non-ASCII kept readable)."""
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=True, default=str)


def _int_param(request: Request, name: str, default: int) -> int:
    """An integer query parameter, 400 if it is not one."""
    value = request.query_params.get(name, "")
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise HTTPException(400, f"{name} must be an integer, got {value!r}") from None


#: What a posted turn does to a session: (session runner, key, posted form).
_Action = Callable[["HumanPlay", str, Mapping[str, str]], None]


class _Pages:
    """The app's endpoints over one run directory, grouped by what they serve: the run's
    records and files, and the human sessions. Every page goes through :meth:`render` (the
    base context), every posted form through :meth:`form` (the token check)."""

    def __init__(
        self,
        run_dir: Path,
        settings: ServeSettings,
        play: HumanPlay | None,
        env: jinja2.Environment,
        token: str,
    ) -> None:
        """Serve ``run_dir``; ``play`` runs the human sessions (None: browsing only)."""
        self.run_dir = run_dir
        self.settings = settings
        self.play = play
        self.env = env
        self.token = token

    # ----------------------------------------------------------------------------- helpers

    def render(
        self, request: Request, name: str, *, http_status: int = 200, **context: Any
    ) -> HTMLResponse:
        """The template ``name`` with the base context (run name, settings, form token)."""
        base = {
            "run_name": self.run_dir.name or str(self.run_dir),
            "settings": self.settings,
            "csrf": self.token,
            "request": request,
        }
        return HTMLResponse(self.env.get_template(name).render({**base, **context}), http_status)

    async def form(self, request: Request) -> dict[str, str]:
        """The posted urlencoded form (last value per field), after the token check."""
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            raise HTTPException(415, "post an application/x-www-form-urlencoded form")
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, f"form larger than {MAX_FORM_BYTES} bytes")
        try:
            parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
        except UnicodeDecodeError:
            raise HTTPException(400, "the form is not UTF-8") from None
        fields = {name: values[-1] for name, values in parsed.items()}
        if not secrets.compare_digest(fields.get("csrf", ""), self.token):
            raise HTTPException(403, "stale or missing form token: reload the page and retry")
        return fields

    def need_play(self) -> HumanPlay:
        """The session runner, or 404 when the server only browses."""
        if self.play is None:
            raise HTTPException(404, "this server browses records only (no sensor configured)")
        return self.play

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """Every HTTP error as the error page, with its status."""
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return self.render(request, "error.html", http_status=status, status=status, message=detail)

    # ------------------------------------------------------------------- records and files

    def browse_routes(self) -> list[Route]:
        """The run's pages: home, records (a page, one, its raw JSON), files, static assets."""
        return [
            Route("/", self.index),
            Route("/records", self.records),
            Route("/records/{key}", self.record),
            Route("/records/{key}/raw.json", self.record_json),
            Route("/files", self.files),
            Route("/files/{path:path}", self.file),
            Route("/static/{name}", self.static),
        ]

    async def index(self, request: Request) -> Response:
        """The home page: counts, records per kind, the manifest, whether play is possible."""
        summary = run_summary(self.run_dir)
        blocked = self.play.blocked_reason() if self.play is not None else "no sensor configured"
        return self.render(
            request,
            "index.html",
            summary=summary,
            manifest_json=_pretty(summary.manifest),
            play_blocked=blocked,
        )

    async def records(self, request: Request) -> Response:
        """A page of records, filtered by status and kind (400 for a bad page request)."""
        status = request.query_params.get("status") or None
        protocol = request.query_params.get("protocol") or None
        page_no = _int_param(request, "page", 1)
        per_page = _int_param(request, "per_page", 50)
        try:
            page = record_page(self.run_dir, page_no, per_page, status=status, protocol=protocol)
        except InputError as exc:
            raise HTTPException(400, str(exc)) from None

        def query(number: int) -> str:
            params = {"page": str(number), "per_page": str(per_page)}
            params.update({k: v for k, v in (("status", status), ("protocol", protocol)) if v})
            return urlencode(params)

        return self.render(
            request,
            "records.html",
            page=page,
            status=status or "",
            protocol=protocol or "",
            protocols=sorted(run_summary(self.run_dir).protocols),
            max_per_page=MAX_PER_PAGE,
            query=query,
        )

    def load_record(self, request: Request) -> dict[str, Any]:
        """The record the URL names as the browser may see it, or 404."""
        record = read_record(self.run_dir, request.path_params["key"])
        if record is None:
            raise HTTPException(404, "no record with this key in the run")
        return public_record(record)

    async def record(self, request: Request) -> Response:
        """One record: spec, read-outs, raw output (cut), and a probe record's conversation."""
        rec = self.load_record(request)
        raw_json = _pretty(rec["raw"])
        transcript = None
        if rec["protocol"] == "probe" and rec["raw"] is not HIDDEN:
            from clearsight.ui.session import record_conversation

            transcript = record_conversation(rec)
        return self.render(
            request,
            "record.html",
            record=rec,
            transcript=transcript,
            readouts_json=_pretty(rec["readouts"]),
            spec_json=_pretty(rec["spec"]),
            raw_json=raw_json[:RAW_LIMIT],
            raw_truncated=len(raw_json) > RAW_LIMIT,
            raw_limit=RAW_LIMIT,
        )

    async def record_json(self, request: Request) -> Response:
        """One record, whole, as JSON."""
        text = json.dumps(self.load_record(request), ensure_ascii=False, allow_nan=True)
        return Response(text, media_type="application/json")

    async def files(self, request: Request) -> Response:
        """The files of the run directory."""
        return self.render(request, "files.html", files=list_files(self.run_dir))

    async def file(self, request: Request) -> Response:
        """One file inside the run directory, sandboxed (404 for anything outside)."""
        path = safe_file(self.run_dir, request.path_params["path"])
        if path is None:
            raise HTTPException(404, "no such file in the run directory")
        return FileResponse(path, headers={"content-security-policy": FILE_CSP})

    async def static(self, request: Request) -> Response:
        """The app's own script and style sheet (fixed names only)."""
        name = request.path_params["name"]
        if name not in _STATIC:
            raise HTTPException(404, "no such asset")
        text = resources.files("clearsight.ui").joinpath("static", name).read_text("utf-8")
        return Response(text, media_type=_STATIC[name])

    # ---------------------------------------------------------------------- human sessions

    def play_routes(self) -> list[Route]:
        """The human sessions: the play page, starting one, its page and its three actions."""
        return [
            Route("/play", self.play_page),
            Route("/play", self.start, methods=["POST"]),
            Route("/session/{key}", self.session),
            Route("/session/{key}/query", self.turn_route(_do_ask), methods=["POST"]),
            Route("/session/{key}/commit", self.turn_route(_do_commit), methods=["POST"]),
            Route("/session/{key}/abandon", self.turn_route(_do_abandon), methods=["POST"]),
        ]

    async def play_page(self, request: Request) -> Response:
        """The instances to play and the sessions so far (or why play is blocked)."""
        p = self.need_play()
        name = request.query_params.get("name", "")
        return self.render(
            request,
            "play.html",
            blocked=p.blocked_reason(),
            instances=p.instances(),
            sessions=p.sessions(),
            player=name,
        )

    async def start(self, request: Request) -> Response:
        """Start a session for the posted name and instance, then go to its page."""
        p = self.need_play()
        fields = await self.form(request)
        try:
            key = await run_in_threadpool(
                p.start, fields.get("name", ""), fields.get("instance", "")
            )
        except InputError as exc:
            raise HTTPException(400, str(exc)) from None
        return RedirectResponse(f"/session/{key}", status_code=303)

    async def session(self, request: Request) -> Response:
        """The page of one human session (404 if the key is not one)."""
        p = self.need_play()
        view = p.view(request.path_params["key"])
        if view is None:
            raise HTTPException(404, "no human session with this key")
        return self.render(request, "session.html", view=view)

    def turn_route(self, action: _Action) -> Callable[[Request], Awaitable[Response]]:
        """The endpoint that applies ``action`` to the session the URL names, with the posted
        form, and goes back to the session's end."""

        async def endpoint(request: Request) -> Response:
            p = self.need_play()
            key = request.path_params["key"]
            fields = await self.form(request)
            try:
                # the sensor may take seconds: keep the event loop free for other pages
                await run_in_threadpool(action, p, key, fields)
            except KeyError:
                raise HTTPException(404, "no human session with this key") from None
            except InputError as exc:
                raise HTTPException(400, str(exc)) from None
            return RedirectResponse(f"/session/{key}#end", status_code=303)

        return endpoint


def _do_ask(p: HumanPlay, key: str, fields: Mapping[str, str]) -> None:
    """Ask the sensor the posted query."""
    p.ask(key, fields.get("query", ""))


def _do_commit(p: HumanPlay, key: str, fields: Mapping[str, str]) -> None:
    """Commit to the posted letter."""
    p.commit(key, fields.get("letter", ""))


def _do_abandon(p: HumanPlay, key: str, fields: Mapping[str, str]) -> None:
    """End the session without an answer."""
    p.abandon(key)


def create_app(
    run_dir: Path,
    settings: ServeSettings | None = None,
    play: HumanPlay | None = None,
    *,
    allowed_hosts: list[str] | None = None,
) -> Starlette:
    """The web app for ``run_dir``.

    ``play`` runs the human sessions (None: browsing only, the play pages say so).
    ``allowed_hosts`` are the Host header names accepted; by default the loopback names when
    ``settings.host`` is a loopback address, else any (the user chose to expose the app).
    """
    settings = settings or ServeSettings()
    if allowed_hosts is None:
        allowed_hosts = sorted(LOOPBACK_HOSTS) if settings.host in LOOPBACK_HOSTS else ["*"]
    pages = _Pages(Path(run_dir), settings, play, _environment(), secrets.token_urlsafe(32))
    return Starlette(
        routes=[*pages.browse_routes(), *pages.play_routes()],
        middleware=[
            Middleware(_SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts),
        ],
        exception_handlers={HTTPException: pages.http_error},
    )
