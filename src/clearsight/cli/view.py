"""``clearsight view RUN [RUN ...]``: a local, read-only web viewer of runs — their curve
points, the items behind each and the image each model was shown (:mod:`clearsight.view`),
or (``--bundle DIR``) a static site of one run, or (``--index``) the runs' side indexes built
ahead of time; its options are generated from
:class:`~clearsight.view.settings.ViewSettings`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli.generate import ConfigCommand

if TYPE_CHECKING:
    from clearsight.faces.viewing import RunView
    from clearsight.view.settings import ViewSettings


def view(
    settings: ViewSettings,
    runs: Annotated[list[Path], typer.Argument(help="Run directories to view.")],
) -> None:
    """Look at a run's items: from each curve point to the items behind it, each with the
    image the model was shown (re-rendered from its stored spec), its question, options with
    their probabilities, answer, gold and confidences. Reads only (a run being written can be
    viewed; reload for new records). With --bundle, a static site of one run instead; with
    --index, each run's side index built ahead of time (else built in the background while the
    pages say how far it is)."""
    from clearsight.validate import InputError
    from clearsight.view import open_views

    if settings.index:
        _index(open_views(runs))
        return
    if settings.bundle is not None:
        from clearsight.view.bundle import write_bundle

        if len(runs) != 1:
            raise InputError(f"--bundle writes the site of one run; {len(runs)} were given")
        written = write_bundle(open_views(runs)[0], settings.bundle, settings.sample)
        typer.echo(f"bundle: {written.path} ({written.n_points} points, {written.n_items} items)")
        return
    _serve(open_views(runs), settings)


def _index(views: list[RunView]) -> None:
    """Bring each view's side index up to date, with its progress on standard error."""
    for view in views:
        started = time.perf_counter()

        def told(done: int, total: int, title: str = view.title) -> None:
            typer.echo(f"indexing {title}: {done:,} of {total:,} items read", err=True)

        view.index.build(told)
        typer.echo(f"index ready: {view.title} ({time.perf_counter() - started:.1f} s)")


def _serve(views: list[RunView], settings: ViewSettings) -> None:
    """Serve ``views`` with uvicorn on the settings' address until interrupted."""
    import uvicorn

    from clearsight.ui import LOOPBACK_HOSTS, listening_socket
    from clearsight.view.app import create_view_app

    app = create_view_app(views, host=settings.host)
    with listening_socket(settings.host, settings.port) as sock:
        host, port = sock.getsockname()[:2]
        if settings.host not in LOOPBACK_HOSTS:
            typer.echo(
                f"warning: viewing on {settings.host}: anyone who can reach this machine can "
                "read the runs' items"
            )
        typer.echo(f"clearsight view: http://{host}:{port}/  ({len(views)} run(s))")
        config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning")
        uvicorn.Server(config).run(sockets=[sock])


def _settings() -> type[ViewSettings]:
    from clearsight.view.settings import ViewSettings

    return ViewSettings


VIEW = ConfigCommand("view", _settings, view, what="view options", files=False)
