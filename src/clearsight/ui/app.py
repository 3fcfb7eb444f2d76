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
    run_dir = Path(run_dir)
    env = _environment()
    token = secrets.token_urlsafe(32)
    if allowed_hosts is None:
        allowed_hosts = sorted(LOOPBACK_HOSTS) if settings.host in LOOPBACK_HOSTS else ["*"]

    def render(
        request: Request, name: str, *, http_status: int = 200, **context: Any
    ) -> HTMLResponse:
        base = {
            "run_name": run_dir.name or str(run_dir),
            "settings": settings,
            "csrf": token,
            "request": request,
        }
        return HTMLResponse(env.get_template(name).render({**base, **context}), http_status)

    async def form(request: Request) -> dict[str, str]:
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
        if not secrets.compare_digest(fields.get("csrf", ""), token):
            raise HTTPException(403, "stale or missing form token: reload the page and retry")
        return fields

    def need_play() -> HumanPlay:
        if play is None:
            raise HTTPException(404, "this server browses records only (no sensor configured)")
        return play

    async def index(request: Request) -> Response:
        summary = run_summary(run_dir)
        blocked = play.blocked_reason() if play is not None else "no sensor configured"
        return render(
            request,
            "index.html",
            summary=summary,
            manifest_json=_pretty(summary.manifest),
            play_blocked=blocked,
        )

    async def records(request: Request) -> Response:
        status = request.query_params.get("status") or None
        protocol = request.query_params.get("protocol") or None
        page_no = _int_param(request, "page", 1)
        per_page = _int_param(request, "per_page", 50)
        try:
            page = record_page(run_dir, page_no, per_page, status=status, protocol=protocol)
        except InputError as exc:
            raise HTTPException(400, str(exc)) from None

        def query(number: int) -> str:
            params = {"page": str(number), "per_page": str(per_page)}
            params.update({k: v for k, v in (("status", status), ("protocol", protocol)) if v})
            return urlencode(params)

        return render(
            request,
            "records.html",
            page=page,
            status=status or "",
            protocol=protocol or "",
            protocols=sorted(run_summary(run_dir).protocols),
            max_per_page=MAX_PER_PAGE,
            query=query,
        )

    def load_record(request: Request) -> dict[str, Any]:
        record = read_record(run_dir, request.path_params["key"])
        if record is None:
            raise HTTPException(404, "no record with this key in the run")
        return public_record(record)

    async def record(request: Request) -> Response:
        rec = load_record(request)
        raw_json = _pretty(rec["raw"])
        transcript = None
        if rec["protocol"] == "probe" and rec["raw"] is not HIDDEN:
            from clearsight.ui.session import record_conversation

            transcript = record_conversation(rec)
        return render(
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

    async def record_json(request: Request) -> Response:
        text = json.dumps(load_record(request), ensure_ascii=False, allow_nan=True)
        return Response(text, media_type="application/json")

    async def files(request: Request) -> Response:
        return render(request, "files.html", files=list_files(run_dir))

    async def file(request: Request) -> Response:
        path = safe_file(run_dir, request.path_params["path"])
        if path is None:
            raise HTTPException(404, "no such file in the run directory")
        return FileResponse(path, headers={"content-security-policy": FILE_CSP})

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            raise HTTPException(404, "no such asset")
        text = resources.files("clearsight.ui").joinpath("static", name).read_text("utf-8")
        return Response(text, media_type=_STATIC[name])

    # ------------------------------------------------------------------------ human sessions

    async def play_page(request: Request) -> Response:
        p = need_play()
        name = request.query_params.get("name", "")
        return render(
            request,
            "play.html",
            blocked=p.blocked_reason(),
            instances=p.instances(),
            sessions=p.sessions(),
            player=name,
        )

    async def start(request: Request) -> Response:
        p = need_play()
        fields = await form(request)
        try:
            key = await run_in_threadpool(
                p.start, fields.get("name", ""), fields.get("instance", "")
            )
        except InputError as exc:
            raise HTTPException(400, str(exc)) from None
        return RedirectResponse(f"/session/{key}", status_code=303)

    async def session(request: Request) -> Response:
        p = need_play()
        view = p.view(request.path_params["key"])
        if view is None:
            raise HTTPException(404, "no human session with this key")
        return render(request, "session.html", view=view)

    def turn_route(
        action: Callable[[HumanPlay, str, Mapping[str, str]], None],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            p = need_play()
            key = request.path_params["key"]
            fields = await form(request)
            try:
                # the sensor may take seconds: keep the event loop free for other pages
                await run_in_threadpool(action, p, key, fields)
            except KeyError:
                raise HTTPException(404, "no human session with this key") from None
            except InputError as exc:
                raise HTTPException(400, str(exc)) from None
            return RedirectResponse(f"/session/{key}#end", status_code=303)

        return endpoint

    def do_ask(p: HumanPlay, key: str, fields: Mapping[str, str]) -> None:
        p.ask(key, fields.get("query", ""))

    def do_commit(p: HumanPlay, key: str, fields: Mapping[str, str]) -> None:
        p.commit(key, fields.get("letter", ""))

    def do_abandon(p: HumanPlay, key: str, fields: Mapping[str, str]) -> None:
        p.abandon(key)

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return render(request, "error.html", http_status=status, status=status, message=detail)

    routes = [
        Route("/", index),
        Route("/records", records),
        Route("/records/{key}", record),
        Route("/records/{key}/raw.json", record_json),
        Route("/files", files),
        Route("/files/{path:path}", file),
        Route("/static/{name}", static),
        Route("/play", play_page),
        Route("/play", start, methods=["POST"]),
        Route("/session/{key}", session),
        Route("/session/{key}/query", turn_route(do_ask), methods=["POST"]),
        Route("/session/{key}/commit", turn_route(do_commit), methods=["POST"]),
        Route("/session/{key}/abandon", turn_route(do_abandon), methods=["POST"]),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(_SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts),
        ],
        exception_handlers={HTTPException: http_error},
    )
