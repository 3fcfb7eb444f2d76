"""``clearsight serve``: a web page where a person plays the blind reasoner of the probe
protocol, or (``--sweep``) answers a sweep run's questions on its degraded images as one more
observer, or (``--operator``) a browser of any run's records.

The person sees the question and its options, never the image; types queries; reads the
sensor's reply with its consistency (u/K: the true u, none or a random one, the session's
signal, which the page never names); commits an answer or runs out of budget. Each
session is stored turn by turn as a probe transcript in the run's store (reasoner
``human:<name>``), so humans and models appear in one report. Such a server serves nothing
else of the run. In operator mode (a server that hosts no session) it lists a run's records
of any protocol, shows one record's raw JSON and read-outs, and serves the run's report files
(nothing else, and nothing outside the run directory). See ``docs/serve.md``.

The sessions are their protocol's: each protocol whose runs people take part in declares them
in its face (:attr:`ProtocolFace.serve <clearsight.faces.face.ProtocolFace.serve>`, whose
``sessions`` make a :class:`~clearsight.faces.serving.SessionHost`), and this package hosts
whichever the mode asks for (:attr:`ServeSettings.hosted
<clearsight.faces.serving.ServeSettings.hosted>`) without knowing whose they are; what the
operator's pages show or withhold of a record is the record's protocol's to say too.
Modules: :mod:`~clearsight.ui.runs` (read-only views of a run,
the path check), :mod:`~clearsight.ui.serving` (the writer lock a server holds),
:mod:`~clearsight.ui.pages` (what every page shares: templates, forms, session passes),
:mod:`~clearsight.ui.app` (the Starlette app, the operator's pages, the security headers); the
options are :class:`~clearsight.faces.serving.ServeSettings`.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clearsight.faces import face_of
from clearsight.faces.serving import LOOPBACK_HOSTS, ServeSettings
from clearsight.validate import InputError

__all__ = ["LOOPBACK_HOSTS", "ServeSettings", "serve_forever"]


def serve_forever(run_dir: Path, settings: ServeSettings) -> None:
    """Serve ``run_dir`` with uvicorn until interrupted (Ctrl-C).

    The port is taken first (:func:`listening_socket`): a port in use is bad input, said
    before anything is created. In operator mode the run is only browsed: no lock. Otherwise
    the sessions of the protocol the mode names are made from its face (a run they cannot be
    served from is bad input, said at once), and where they can be taken the server holds the
    run directory's writer lock while it runs (:meth:`SessionHost.writing
    <clearsight.faces.serving.SessionHost.writing>`): no run starts writing into a served one.
    What the sessions load (a sensor) loads in a background thread, so the page is up at once.
    A run another process writes has its sessions refused, with the reason on the page.
    """
    from clearsight.ui.app import create_app

    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise InputError(f"{run_dir} is not a directory; give a run directory to serve")
    with listening_socket(settings.host, settings.port) as sock:
        address = f"http://{_host_port(sock)}/  (run {run_dir})"
        if settings.operator:
            app = create_app(run_dir, settings, None)
            _warn_exposed(settings, "read the run's records")
            print(f"clearsight serve: operator mode (records and reports, no sessions): {address}")
            _run_server(app, settings, sock)
            return
        face = face_of(settings.hosted)
        serve = face.serve.sessions if face.serve is not None else None
        host = face.need(serve, "human sessions")(run_dir, settings)
        with host.writing():  # the lock first: the app makes a new run's store under it
            app = create_app(run_dir, settings, host)
            _warn_exposed(settings, host.exposes)
            if (blocked := host.blocked_reason()) is None:
                import threading

                threading.Thread(target=host.warm_up, name="warm-up", daemon=True).start()
            else:
                print(f"clearsight serve: sessions refused: {blocked}")
            print(f"clearsight serve: {host.title}: {address}")
            _run_server(app, settings, sock)


def _warn_exposed(settings: ServeSettings, what: str) -> None:
    """Say that anyone who can reach the machine can ``what`` when the server is not on a
    loopback address."""
    if settings.host not in LOOPBACK_HOSTS:
        print(f"warning: serving on {settings.host}: anyone who can reach this machine can {what}")


@contextmanager
def listening_socket(host: str, port: int) -> Iterator[socket.socket]:
    """A TCP socket bound to ``host:port`` for the block (closed after it): InputError, with
    the system's reason, when the port is in use or the address cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise InputError(
                f"cannot serve on {host}:{port}: {exc.strerror or exc} (another server may be "
                "using the port: choose another with --port)"
            ) from None
        yield sock
    finally:
        sock.close()


def _host_port(sock: socket.socket) -> str:
    """``host:port`` the socket is bound to (the port chosen when 0 was asked for)."""
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _run_server(app: Any, settings: ServeSettings, sock: socket.socket) -> None:
    """Serve ``app`` with uvicorn on the bound ``sock`` until interrupted."""
    import uvicorn

    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level="info")
    uvicorn.Server(config).run(sockets=[sock])
