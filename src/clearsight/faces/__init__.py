"""A protocol's face after its run, and the one registry that finds it from a run's manifest.

Every post-run feature — the report (:mod:`clearsight.report`), ``clearsight verify``, the card,
export — asks a run's protocol through its :class:`~clearsight.faces.face.ProtocolFace`, found
here by the name the run's manifest gives its protocol (``protocol``), and never branches on
that name itself. The registry maps names to faces by dotted path (``"module:attribute"``),
imported only when asked, as :mod:`clearsight.models.registry` does for backends: asking for a
grounding run's face never imports the sweep. :func:`register` adds a protocol written outside
the package (a face value, or its dotted path).

A record's item kind is its protocol's name or begins with it and a dot (``grounding.elicit``),
so :func:`face_of_kind` finds the face that knows a kind.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.faces.card_run import CardRun
    from clearsight.faces.face import ProtocolFace

__all__ = ["card_runs", "face_of", "face_of_kind", "register", "registered"]

#: Manifest protocol name -> its face, by dotted path or as a value (a benchmark build's
#: stage 1 is reported as the probe: its sensor samples are the probe report's Fig. 2).
_FACES: dict[str, str | ProtocolFace] = {
    "sweep": "clearsight.sweep.face:SWEEP_FACE",
    "grounding": "clearsight.grounding.face:GROUNDING_FACE",
    "grounding.build-bench": "clearsight.grounding.face:BUILD_BENCH_FACE",
    "probe": "clearsight.probe.face:PROBE_FACE",
    "probe.build": "clearsight.probe.face:PROBE_FACE",
}


def register(name: str, face: str | ProtocolFace) -> None:
    """Register ``face`` (a value, or ``"module:attribute"`` imported when first asked) for the
    runs whose manifest names protocol ``name``."""
    if isinstance(face, str) and ":" not in face:
        raise InputError(f"a face's path must be 'module:attribute', got {face!r}")
    _FACES[name] = face


def registered() -> list[str]:
    """The protocol names that have a face, sorted."""
    return sorted(_FACES)


def face_of(protocol: str) -> ProtocolFace:
    """The face of protocol ``protocol`` (an :class:`InputError` for a name without one)."""
    found = _FACES.get(protocol)
    if found is None:
        raise InputError(f"no protocol {protocol!r} is registered: known are {registered()}")
    if isinstance(found, str):
        module, _, attr = found.partition(":")
        found = _FACES[protocol] = getattr(importlib.import_module(module), attr)
    return found


def face_of_kind(kind: str) -> ProtocolFace | None:
    """The face of the protocol whose records are of item kind ``kind`` (None: no face)."""
    for name in (kind, kind.partition(".")[0]):
        if name in _FACES:
            return face_of(name)
    return None


def card_runs() -> list[tuple[str, CardRun]]:
    """Every registered protocol's card run (:attr:`ProtocolFace.card_run
    <clearsight.faces.face.ProtocolFace.card_run>`) by its face's name, in the registry's order
    (a face registered under two names counted once): the parts of a card and their page order."""
    found: dict[str, CardRun] = {}
    for name in list(_FACES):
        face = face_of(name)
        if face.card_run is not None:
            found.setdefault(face.name, face.card_run)
    return list(found.items())
