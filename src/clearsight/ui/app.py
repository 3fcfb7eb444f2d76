"""The Starlette app of ``clearsight serve``: a person plays the blind reasoner, or (sweep
mode) answers a sweep run's questions on its images, or (operator mode) the run's records and
reports are browsed — one of the three per server.

**The experiment stays blind.** A server that hosts human sessions serves the play page, a
session's own page and its actions, and two static assets: no record page, no raw JSON, no
file of the run (the store, instance files, images, reports), and no gold letter or verdict
even after a commit. A session's page and actions need the pass cookie the browser that
started (or resumed) it was given, so a key alone (another player's, say) opens nothing. The
records and the run's report files are the operator's (``--operator``), a server that hosts
no session. A sweep-mode server (``--sweep``) serves a person only their current question:
its prompt, options and image, the image by an opaque token and rendered at request time as
PNG bytes; no page, URL, form field or cookie names the condition, the level or the answer.

Pages are rendered on the server from Jinja2 templates with autoescaping on for every template,
so model output (sensor replies, raw records, errors) always reaches the page as text; no
template marks run data ``|safe``. Further defences, each cheap:

* **Content-Security-Policy** ``script-src 'self'`` on every page: even if some text slipped
  through unescaped, an injected inline ``<script>`` would not run. Report files are served
  with ``sandbox`` (an HTML report opens in an opaque origin, without scripts).
* **Files** (operator mode): one route serves files, through
  :func:`clearsight.ui.runs.safe_file`, which resolves the path and refuses (404) anything
  outside the run directory (``../``, its percent-encoded forms, absolute paths, symlinks out)
  and anything that is not a report file (the store, instances, images).
* **Forms** carry a per-process random token, every state-changing request must come from the
  app's own origin (``Origin``, else ``Referer``), and a **Host check** refuses requests for
  names other than the loopback ones when bound to loopback (DNS rebinding).
* **Bodies** are bounded: one longer than :data:`MAX_BODY_BYTES` is refused (413) as soon as
  its ``Content-Length`` or its streamed bytes pass the limit, before the rest is read; a
  form that is not UTF-8 (``%FF%FE``) is refused (400) before any action, so it costs no turn.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clearsight.ui.runs import (
    HIDDEN,
    MAX_PER_PAGE,
    RecordJSON,
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
    from clearsight.ui.sweep import HumanSweep

__all__ = ["PAGE_CSP", "PASS_COOKIE", "create_app"]

#: Policy of every page the app renders: its own script and style only, nothing inline.
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
#: Policy of files served from the run directory: sandboxed, no scripts, inline CSS and data:
#: images allowed (the self-contained report.html needs both).
FILE_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"
#: Largest request body accepted (a form's query is a sentence; this is generous): a longer
#: one is refused with 413 as soon as that is known, before it is read (:class:`_BodyLimit`).
MAX_BODY_BYTES = 64 * 1024
#: Most fields of a posted form (the app's forms have four at most).
MAX_FORM_FIELDS = 32
#: Characters of a record's raw JSON shown on its page (the raw.json link has it all).
RAW_LIMIT = 200_000

#: The cookie holding a session's pass (one per session, scoped to the session's paths).
PASS_COOKIE = "clearsight-pass"
#: Methods that change nothing; any other request must come from the app's own pages.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

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
                    (b"referrer-policy", b"same-origin"),
                    (b"x-frame-options", b"DENY"),
                    (b"cache-control", b"no-store"),
                ):
                    if name not in present:
                        headers.append((name, value))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class _BodyLimit:
    """ASGI middleware refusing a request body longer than ``max_bytes`` with 413 as soon as
    that is known, so no more of it is read or held: by its ``Content-Length`` before a byte
    of it is read, else (a chunked body) when the bytes streamed to the app pass the limit.
    The refusal closes the connection (``Connection: close``), so the rest is never read."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_long = f"refused: a request body longer than {self.max_bytes} bytes"
        declared = Request(scope).headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            refusal = PlainTextResponse(too_long, 413, headers={"connection": "close"})
            await refusal(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(413, too_long)
            return message

        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start" and received > self.max_bytes:
                message = {**message, "headers": [*message["headers"], (b"connection", b"close")]}
            await send(message)

        await self.app(scope, limited, closing)


def _origin_of(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an http(s) URL, the port defaulted from the scheme; None
    for anything else (``null``, a bad port, another scheme)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80)


class _SameOrigin:
    """ASGI middleware refusing (403, nothing done) a state-changing request that another
    site's page sent: its ``Origin`` header, or without one its ``Referer``, must name the
    app's own origin (the scheme and Host the request was sent to); ``Origin: null`` (a
    sandboxed or opaque page) is refused too. A request with neither header (a script) goes on
    to the form token check; every current browser sends ``Origin`` with a POST."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            request = Request(scope)
            sent = request.headers.get("origin") or request.headers.get("referer")
            own = str(request.base_url).rstrip("/")
            if sent is not None and _origin_of(sent) != _origin_of(own):
                refusal = PlainTextResponse(
                    f"refused: a {scope['method']} from {sent[:200]!r}, not from this app's "
                    f"own pages ({own})",
                    status_code=403,
                )
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


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


@dataclasses.dataclass(frozen=True)
class _Site:
    """What every page of a served run shares: the run directory, the settings, the templates
    and the form token."""

    run_dir: Path
    settings: ServeSettings
    env: jinja2.Environment
    token: str


class _Pages:
    """What both modes share: the template rendering (:meth:`render`, the base context), the
    posted-form check (:meth:`form`, the token), the error page and the static assets."""

    #: Which pages the navigation bar offers (each mode its own).
    operator = False
    #: The mode's home page, linked from the navigation bar outside operator mode.
    home_path = "/play"

    def __init__(self, site: _Site) -> None:
        self.run_dir = site.run_dir
        self.settings = site.settings
        self.env = site.env
        self.token = site.token

    def render(
        self, request: Request, name: str, *, http_status: int = 200, **context: Any
    ) -> HTMLResponse:
        """The template ``name`` with the base context (run name, settings, form token, mode)."""
        base = {
            "run_name": self.run_dir.name or str(self.run_dir),
            "settings": self.settings,
            "csrf": self.token,
            "operator": self.operator,
            "home_path": self.home_path,
            "request": request,
        }
        return HTMLResponse(self.env.get_template(name).render({**base, **context}), http_status)

    async def form(self, request: Request) -> dict[str, str]:
        """The posted urlencoded form (last value per field), after the token check."""
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            raise HTTPException(415, "post an application/x-www-form-urlencoded form")
        body = await request.body()  # at most MAX_BODY_BYTES (_BodyLimit)
        try:
            parsed = parse_qs(
                body.decode("utf-8"),
                keep_blank_values=True,
                errors="strict",  # a %FF%FE field is refused, not read as replacement marks
                max_num_fields=MAX_FORM_FIELDS,
            )
        except UnicodeDecodeError:
            raise HTTPException(
                400, "the form is not UTF-8 text (a field's bytes or %-escapes are not UTF-8)"
            ) from None
        except ValueError:
            raise HTTPException(400, f"a form has at most {MAX_FORM_FIELDS} fields") from None
        fields = {name: values[-1] for name, values in parsed.items()}
        if not secrets.compare_digest(fields.get("csrf", ""), self.token):
            raise HTTPException(403, "stale or missing form token: reload the page and retry")
        return fields

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """Every HTTP error as the error page, with its status."""
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return self.render(request, "error.html", http_status=status, status=status, message=detail)

    async def static(self, request: Request) -> Response:
        """The app's own script and style sheet (fixed names only)."""
        name = request.path_params["name"]
        if name not in _STATIC:
            raise HTTPException(404, "no such asset")
        text = resources.files("clearsight.ui").joinpath("static", name).read_text("utf-8")
        return Response(text, media_type=_STATIC[name])


class _RunPages(_Pages):
    """The operator's browser of the run (``clearsight serve --operator``): home, records (a
    page, one, its raw JSON) and the run's report files. It hosts no human sessions."""

    operator = True

    def routes(self) -> list[Route]:
        """Home, records (a page, one, its raw JSON), report files, static assets."""
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
        """The home page: counts, records per kind, the manifest."""
        summary = run_summary(self.run_dir)
        return self.render(
            request, "index.html", summary=summary, manifest_json=_pretty(summary.manifest)
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

    def load_record(self, request: Request) -> RecordJSON:
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


class _PassPages(_Pages):
    """A mode that hosts people's sessions: a session's page and actions (the paths under
    ``{scope}/{key}``) need the pass cookie the browser that started (or resumed) the session
    was given (:meth:`grant`), so a key alone (another person's, say) opens nothing."""

    #: The path prefix of a session's pages (its cookie is scoped to ``{scope}/{key}``).
    scope = "/session"
    #: Why a page of a session this browser holds no pass for is 404.
    no_pass = "no session of yours with this key"

    def __init__(self, site: _Site) -> None:
        super().__init__(site)
        self._pass_secret = secrets.token_bytes(32)

    def session_pass(self, key: str) -> str:
        """The pass of session ``key``: an HMAC of the scope and key under this process's
        secret."""
        message = f"{self.scope}/{key}".encode()
        return hmac.new(self._pass_secret, message, hashlib.sha256).hexdigest()

    def grant(self, response: Response, key: str) -> Response:
        """Give the browser the pass of session ``key``: a cookie scoped to the session's own
        paths, HttpOnly and SameSite=Strict (another site's page never sends it)."""
        response.set_cookie(
            PASS_COOKIE,
            self.session_pass(key),
            path=f"{self.scope}/{key}",
            httponly=True,
            samesite="strict",
        )
        return response

    def own_key(self, request: Request) -> str:
        """The session key the URL names, if this browser holds its pass (404 otherwise, the
        answer for a key that names no session: a key alone reveals nothing)."""
        key = str(request.path_params["key"])
        held = request.cookies.get(PASS_COOKIE, "")
        if not secrets.compare_digest(held, self.session_pass(key)):
            raise HTTPException(404, self.no_pass)
        return key


class _PlayPages(_PassPages):
    """The human sessions (the default mode): the play page, starting one, its page and its
    three actions. Nothing of the run beyond a session's own question, options and replies is
    served: no record, no file, no gold. A session's page and actions need the pass cookie
    that the browser which started (or resumed) it was given (:meth:`grant`)."""

    no_pass = (
        "no session of yours with this key: start it from the play page (the same name on the "
        "same instance resumes an unfinished session)"
    )

    def __init__(self, site: _Site, play: HumanPlay) -> None:
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


def _do_ask(p: HumanPlay, key: str, fields: Mapping[str, str]) -> None:
    """Ask the sensor the posted query."""
    p.ask(key, fields.get("query", ""))


def _do_commit(p: HumanPlay, key: str, fields: Mapping[str, str]) -> None:
    """Commit to the posted letter."""
    p.commit(key, fields.get("letter", ""))


def _do_abandon(p: HumanPlay, key: str, fields: Mapping[str, str]) -> None:
    """End the session without an answer."""
    p.abandon(key)


class _SweepPages(_PassPages):
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

    def __init__(self, site: _Site, sweep: HumanSweep) -> None:
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


def create_app(
    run_dir: Path,
    settings: ServeSettings | None = None,
    play: HumanPlay | None = None,
    *,
    sweep: HumanSweep | None = None,
    allowed_hosts: list[str] | None = None,
) -> Starlette:
    """The web app for ``run_dir``, in one of two modes that never mix.

    With ``play`` (the default of ``clearsight serve``) it hosts human probe sessions and
    serves nothing else of the run: no record, no file, no gold. With ``sweep`` (``--sweep``)
    it hosts human sweep sessions of a sweep run, serving only each person's current question
    and its image. With neither (``--operator``) it is the operator's browser of the run's
    records and report files, and hosts no session.
    ``allowed_hosts`` are the Host header names accepted; by default the loopback names when
    ``settings.host`` is a loopback address, else any (the user chose to expose the app).
    """
    settings = settings or ServeSettings()
    if allowed_hosts is None:
        allowed_hosts = sorted(LOOPBACK_HOSTS) if settings.host in LOOPBACK_HOSTS else ["*"]
    if play is not None and sweep is not None:
        raise InputError("a server hosts probe sessions or sweep sessions, not both")
    site = _Site(Path(run_dir), settings, _environment(), secrets.token_urlsafe(32))
    pages: _RunPages | _PlayPages | _SweepPages
    if sweep is not None:
        pages = _SweepPages(site, sweep)
    elif play is not None:
        play.prepare()  # the store, made before the first request (many may come at once)
        pages = _PlayPages(site, play)
    else:
        pages = _RunPages(site)
    return Starlette(
        routes=pages.routes(),
        middleware=[
            Middleware(_SecurityHeaders),
            Middleware(_BodyLimit),
            Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts),
            Middleware(_SameOrigin),
        ],
        exception_handlers={HTTPException: pages.http_error},
    )
