"""``clearsight view``: a local, read-only web viewer of runs, from a curve point to the items
behind it and the image each model was shown.

The viewer never names a protocol: a run's protocol offers its
:class:`~clearsight.faces.viewing.RunView` through its face's ``view`` part
(:attr:`clearsight.faces.face.ProtocolFace.view`), found by :func:`open_views`, and the pages
(:mod:`~clearsight.view.app`) render what the view answers; the view and its values are the
faces' (:mod:`clearsight.faces.viewing`, beside the other parts' types). Modules:
:mod:`~clearsight.view.settings` (the command's options), :mod:`~clearsight.view.query` (a
listing's query string, checked), :mod:`~clearsight.view.chart` (the points' charts),
:mod:`~clearsight.view.pages` (the templates rendered), :mod:`~clearsight.view.index` (the
side index a protocol's listings are SQL queries over), :mod:`~clearsight.view.app` (the Starlette
app), :mod:`~clearsight.view.bundle` (the static site), :mod:`~clearsight.view.side` (items side by
side: an item's related groups, the same item in each run). See ``docs/view.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from clearsight.faces.viewing import RunView
from clearsight.validate import InputError

__all__ = ["RunView", "open_views"]


def open_views(runs: Sequence[Path]) -> list[RunView]:
    """Each run's view, from the face of the protocol its manifest names: an InputError for a
    path that holds no run, a run whose protocol has no view, or runs of two protocols (the
    runs a viewer shows are matched item by item, as ``clearsight compare`` matches runs of
    one protocol)."""
    from clearsight.faces import face_of
    from clearsight.store import run_protocol

    protocols = [run_protocol(run) for run in runs]
    for run, protocol in zip(runs, protocols, strict=True):
        if protocol != protocols[0]:
            raise InputError(
                f"{runs[0]} is a {protocols[0]} run and {run} a {protocol} run: clearsight "
                "view shows several runs of one protocol, side by side"
            )
    views = []
    for run, protocol in zip(runs, protocols, strict=True):
        face = face_of(protocol)
        views.append(face.need(face.view, "viewer (clearsight view)")(Path(run)))
    return views
