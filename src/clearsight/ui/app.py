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

import json
import secrets
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clearsight.faces import face_of_kind
from clearsight.faces.serving import LOOPBACK_HOSTS, ServeSettings, SessionHost, Site, SitePages
from clearsight.ui.pages import Pages, environment, int_param, pretty
from clearsight.ui.runs import (
    MAX_PER_PAGE,
    RecordJSON,
    list_files,
    public_record,
    read_record,
    record_page,
    run_summary,
    safe_file,
)
from clearsight.validate import InputError

__all__ = ["PAGE_CSP", "create_app"]

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
#: Characters of a record's raw JSON shown on its page (the raw.json link has it all).
RAW_LIMIT = 200_000

#: Methods that change nothing; any other request must come from the app's own pages.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


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


class _RunPages(Pages):
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
            request, "index.html", summary=summary, manifest_json=pretty(summary.manifest)
        )

    async def records(self, request: Request) -> Response:
        """A page of records, filtered by status and kind (400 for a bad page request)."""
        status = request.query_params.get("status") or None
        protocol = request.query_params.get("protocol") or None
        page_no = int_param(request, "page", 1)
        per_page = int_param(request, "per_page", 50)
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
        """One record: spec, read-outs, raw output (cut), and its conversation where its
        protocol's face shows one (:attr:`Serving.conversation
        <clearsight.faces.serving.Serving>`; none of a withheld record, whose raw output is
        the reason)."""
        rec = self.load_record(request)
        raw_json = pretty(rec["raw"])
        face = face_of_kind(rec["protocol"])
        serve = None if face is None else face.serve
        show = None if serve is None else serve.conversation
        transcript = None if show is None else show(rec)
        return self.render(
            request,
            "record.html",
            record=rec,
            transcript=transcript,
            readouts_json=pretty(rec["readouts"]),
            spec_json=pretty(rec["spec"]),
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


def create_app(
    run_dir: Path,
    settings: ServeSettings | None = None,
    host: SessionHost | None = None,
    *,
    allowed_hosts: list[str] | None = None,
) -> Starlette:
    """The web app for ``run_dir``, in one of two modes that never mix.

    With ``host`` (a protocol's human sessions: the probe's by default, the sweep's with
    ``--sweep``) it serves the sessions' own pages and nothing else of the run: no record, no
    file, no gold; the host makes what its sessions need before the first request
    (:meth:`~clearsight.faces.serving.SessionHost.prepare`). Without (``--operator``) it is
    the operator's browser of the run's records and report files, and hosts no session.
    ``allowed_hosts`` are the Host header names accepted; by default the loopback names when
    ``settings.host`` is a loopback address, else any (the user chose to expose the app).
    """
    settings = settings or ServeSettings()
    if allowed_hosts is None:
        allowed_hosts = sorted(LOOPBACK_HOSTS) if settings.host in LOOPBACK_HOSTS else ["*"]
    site = Site(Path(run_dir), settings, environment(), secrets.token_urlsafe(32))
    pages: SitePages
    if host is not None:
        host.prepare()  # the store, made before the first request (many may come at once)
        pages = host.pages(site)
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
