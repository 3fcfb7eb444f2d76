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

Modules: :mod:`~clearsight.ui.settings` (the options), :mod:`~clearsight.ui.runs` (read-only
views of a run, the path check), :mod:`~clearsight.ui.session` (human probe sessions),
:mod:`~clearsight.ui.sweep` (human sweep sessions), :mod:`~clearsight.ui.app` (the Starlette
app and its security headers).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clearsight.ui.settings import LOOPBACK_HOSTS, ServeSettings
from clearsight.validate import InputError

__all__ = ["LOOPBACK_HOSTS", "ServeSettings", "serve_forever"]


def serve_forever(run_dir: Path, settings: ServeSettings) -> None:
    """Serve ``run_dir`` with uvicorn until interrupted (Ctrl-C).

    The port is taken first (:func:`listening_socket`): a port in use is bad input, said
    before anything is created. In operator mode the run is only browsed: no sensor, no lock.
    In sweep mode people answer the sweep run's questions (:func:`_serve_sweep`). Otherwise
    the sensor loads in a background thread, so the page is up at once (a query made before
    it is ready waits for it), and where sessions can be played the server holds the run
    directory's writer lock while it runs (created if it does not exist yet): no run starts
    writing into a served one. A run another process writes, or one of another protocol, has
    its sessions refused.
    """
    from clearsight.ui.app import create_app
    from clearsight.ui.session import HumanPlay

    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise InputError(f"{run_dir} is not a directory; give a run directory to serve")
    with listening_socket(settings.host, settings.port) as sock:
        address = f"http://{_host_port(sock)}/  (run {run_dir})"
        if settings.sweep:
            _serve_sweep(run_dir, settings, sock, address)
            return
        if settings.operator:
            app = create_app(run_dir, settings, None)
            _warn_exposed(settings, "read the run's records")
            print(f"clearsight serve: operator mode (records and reports, no sessions): {address}")
            _run_server(app, settings, sock)
            return
        play = HumanPlay(run_dir, settings)
        with play.writing():  # the lock first: the app makes a new run's store under it
            app = create_app(run_dir, settings, play)
            _warn_exposed(settings, "add sessions to the run")
            if (blocked := play.blocked_reason()) is None:
                import threading

                threading.Thread(target=play.warm_up, name="sensor-warm-up", daemon=True).start()
            else:
                print(f"clearsight serve: sessions refused: {blocked}")
            print(f"clearsight serve: human sessions: {address}")
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


def _serve_sweep(run_dir: Path, settings: ServeSettings, sock: socket.socket, address: str) -> None:
    """Serve the sweep run ``run_dir`` to people answering its questions, holding the run's
    writer lock while it runs (sessions are refused, with the reason on the page, when the
    directory is not a sweep run or another process writes it)."""
    from clearsight.ui.app import create_app
    from clearsight.ui.sweep import HumanSweep

    sweep = HumanSweep(run_dir, settings)
    sweep.design()  # not a sweep run, or a wording it does not ask: a bad input, said at once
    app = create_app(run_dir, settings, sweep=sweep)
    _warn_exposed(settings, "add answers to the run")
    with sweep.writing():
        if (blocked := sweep.blocked_reason()) is not None:
            print(f"clearsight serve: sessions refused: {blocked}")
        print(f"clearsight serve: human sweep sessions: {address}")
        _run_server(app, settings, sock)
