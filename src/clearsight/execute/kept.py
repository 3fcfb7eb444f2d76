"""The image each of some items was shown, kept while the run runs (a tracker's sample).

:func:`keeping` runs a unit with the keys to keep; :func:`with_shown` puts the pixels on them.

An experiment tracker's table shows a sample of a run's items with the image each model was
shown (:mod:`clearsight.track`). Rather than draw those images again after the run, the driver
runs a stage's units inside :func:`keeping` the sample's keys (drawn before the stage runs:
:func:`clearsight.faces.sample.planned_keys`), and a protocol's unit puts on the record of each
kept item the pixels its request carried (:func:`with_shown`): the image the backend was sent,
not copied and not encoded in the unit. The record carries them back to the writer's process
(from a process or Ray worker too: pickled with the records), where the store never writes
them (:attr:`clearsight.store.Record.shown`) and the tracker's session keeps them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clearsight.models import Request
    from clearsight.store import Record

__all__ = ["keeping", "with_shown"]

#: The keys whose shown image the unit running now hands back (:func:`keeping`).
_KEPT: ContextVar[frozenset[str]] = ContextVar("clearsight_kept", default=frozenset())


def keeping(run: Callable[[Any], list[Record]], keys: frozenset[str], unit: Any) -> list[Record]:
    """``run(unit)`` with ``keys`` kept: a protocol's unit hands back the pixels it showed for
    each of them on its record (:func:`with_shown`). A module's function, so that a process or
    Ray worker is given it (with ``functools.partial``) as it is given ``run``."""
    token = _KEPT.set(keys)
    try:
        return run(unit)
    finally:
        _KEPT.reset(token)


def with_shown(
    records: list[Record], requests: Mapping[str, Request | BaseException]
) -> list[Record]:
    """``records``, each of a key :func:`keeping` keeps carrying the first image of its item's
    request (``requests`` by key; a failed build keeps none): the pixels the backend was sent,
    not copied. Outside :func:`keeping`, ``records`` as they are."""
    kept = _KEPT.get()
    if not kept:
        return records
    out = []
    for record in records:
        request = requests.get(record.key) if record.key in kept else None
        shown = None if request is None or isinstance(request, BaseException) else request
        images = [] if shown is None else [i for m in shown.messages for i in m.images]
        out.append(replace(record, shown=images[0]) if images else record)
    return out
