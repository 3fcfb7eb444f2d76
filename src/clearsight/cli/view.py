"""``clearsight view RUN [RUN ...]``: a local, read-only web viewer of runs — their curve
points, the items behind each and the image each model was shown (:mod:`clearsight.view`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clearsight.view import DEFAULT_SAMPLE


def view(
    runs: Annotated[list[Path], typer.Argument(help="Run directories to view.")],
    host: Annotated[
        str,
        typer.Option(
            help="Interface to bind; the loopback default keeps the viewer private to this "
            "machine (anything else exposes the runs' items to the network)."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port (0: any free).")] = 8766,
    bundle: Annotated[
        Path | None,
        typer.Option(
            help="Write a static site of the run into this new directory instead of serving: "
            "its points, a stratified sample of its items and their images, readable from "
            "file:// or any static host (GitHub Pages, a Hugging Face Space)."
        ),
    ] = None,
    sample: Annotated[
        int, typer.Option(help="Items a --bundle holds, spread over the curve points.")
    ] = DEFAULT_SAMPLE,
) -> None:
    """Look at a run's items: from each curve point to the items behind it, each with the
    image the model was shown (re-rendered from its stored spec), its question, options with
    their probabilities, answer, gold and confidences. Reads only (a run being written can be
    viewed; reload for new records). With --bundle, a static site of one run instead."""
    import uvicorn

    from clearsight.ui import LOOPBACK_HOSTS, listening_socket
    from clearsight.validate import InputError
    from clearsight.view import open_views
    from clearsight.view.app import create_view_app

    if bundle is not None:
        from clearsight.view.bundle import write_bundle

        if len(runs) != 1:
            raise InputError(f"--bundle writes the site of one run; {len(runs)} were given")
        written = write_bundle(open_views(runs)[0], bundle, sample)
        typer.echo(f"bundle: {written.path} ({written.n_points} points, {written.n_items} items)")
        return
    app = create_view_app(open_views(runs), host=host)
    with listening_socket(host, port) as sock:
        bound_host, bound_port = sock.getsockname()[:2]
        if host not in LOOPBACK_HOSTS:
            typer.echo(
                f"warning: viewing on {host}: anyone who can reach this machine can "
                "read the runs' items"
            )
        typer.echo(f"clearsight view: http://{bound_host}:{bound_port}/  ({len(runs)} run(s))")
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        uvicorn.Server(config).run(sockets=[sock])
