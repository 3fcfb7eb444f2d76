"""What every page of ``clearsight serve`` shares, whoever's pages they are: the templates
(autoescaped, :func:`environment`), the base context and the posted-form check
(:class:`Pages`), and the pass a person's session pages need (:class:`PassPages`).

The operator's pages (:mod:`clearsight.ui.app`) and each protocol's session pages (its face's
:attr:`~clearsight.faces.face.ProtocolFace.serve`) are built on these, from the
:class:`~clearsight.faces.serving.Site` the app makes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

import jinja2
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from clearsight.faces.serving import Site

__all__ = [
    "MAX_FORM_FIELDS",
    "PASS_COOKIE",
    "Pages",
    "PassPages",
    "environment",
    "int_param",
    "pretty",
]

#: Most fields of a posted form (the app's forms have four at most).
MAX_FORM_FIELDS = 32
#: The cookie holding a session's pass (one per session, scoped to the session's paths).
PASS_COOKIE = "clearsight-pass"

_STATIC = {"app.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8"}


def environment() -> jinja2.Environment:
    """The template environment: package templates, autoescape on for every template."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("clearsight.ui", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def pretty(value: Any) -> str:
    """Indented JSON for a page (NaN kept as a token, non-ASCII kept readable)."""
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=True, default=str)


def int_param(request: Request, name: str, default: int) -> int:
    """An integer query parameter, 400 if it is not one."""
    value = request.query_params.get(name, "")
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise HTTPException(400, f"{name} must be an integer, got {value!r}") from None


class Pages:
    """What both modes share: the template rendering (:meth:`render`, the base context), the
    posted-form check (:meth:`form`, the token), the error page and the static assets."""

    #: Which pages the navigation bar offers (each mode its own).
    operator = False
    #: The mode's home page, linked from the navigation bar outside operator mode.
    home_path = "/play"

    def __init__(self, site: Site) -> None:
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


class PassPages(Pages):
    """A mode that hosts people's sessions: a session's page and actions (the paths under
    ``{scope}/{key}``) need the pass cookie the browser that started (or resumed) the session
    was given (:meth:`grant`), so a key alone (another person's, say) opens nothing."""

    #: The path prefix of a session's pages (its cookie is scoped to ``{scope}/{key}``).
    scope = "/session"
    #: Why a page of a session this browser holds no pass for is 404.
    no_pass = "no session of yours with this key"

    def __init__(self, site: Site) -> None:
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
