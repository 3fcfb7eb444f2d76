"""Typed read-outs: each item kind's read-outs as a ``TypedDict`` registered beside its spec, and
the check that stored read-outs are of that type, once per stored shape.

A kind registers its type on its spec class (:attr:`clearsight.specs.Spec.readout_type`)::

    class SweepReadouts(TypedDict):
        answer: str | None
        confidence: NotRequired[float | None]

    @dataclass(frozen=True)
    class SweepItem(Spec):
        kind = "sweep"
        readout_type = SweepReadouts

and a reader names it: ``store.iter_records("ok", kind="sweep", readouts=SweepReadouts)``
yields ``StoredRecord[SweepReadouts]``, whose ``record.readouts["answer"]`` the type checker
knows. A ``TypedDict`` is a ``dict`` at run time, so typed records cost what untyped ones cost:
what is checked is the key names of each stored object's *shape* (the store keeps the key tuple
of every JSON object once: :mod:`clearsight.store._packed`), the first time a read meets that
shape — every required key present, no key the type does not declare. Nested values are read
as stored; their declared types are the writer's promise.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typing_extensions

from clearsight.specs import spec_class
from clearsight.store._packed import Shapes
from clearsight.validate import InputError

__all__ = ["ReadoutCheck", "declared_keys", "readouts_of"]


def readouts_of(kind: str) -> type[Mapping[str, object]] | None:
    """The read-out type registered for item ``kind`` (None: its spec registers none, or no
    protocol defines the kind)."""
    cls = spec_class(kind)
    return None if cls is None else cls.readout_type


class ReadoutCheck:
    """Checks that the read-outs a read decodes are of ``readouts``, the type registered for
    item ``kind`` (InputError when it is not the registered one): each stored shape is checked
    the first time it is met (see the module docstring)."""

    def __init__(self, kind: str, readouts: type[Mapping[str, object]], path: Path) -> None:
        registered = readouts_of(kind)
        if registered is not readouts:
            have = "registers none" if registered is None else f"is {registered.__qualname__}"
            raise InputError(
                f"item kind {kind!r} is read with read-out type {readouts.__qualname__}, but "
                f"its registered read-out type {have} (clearsight.specs.Spec.readout_type)"
            )
        self.kind = kind
        self.type = readouts
        self.path = path
        self.required, self.known = declared_keys(readouts)
        self.good: set[int] = set()

    def __call__(self, packed: Any, shapes: Shapes, key: str) -> None:
        """Check the packed read-outs of record ``key`` (decoded JSON, not yet unpacked)."""
        head = packed[0] if type(packed) is list and packed else 0
        if head not in self.good:
            self._check(head, shapes, key)

    def _check(self, head: int, shapes: Shapes, key: str) -> None:
        """Check the shape ``head`` (0: not an object) of record ``key``'s read-outs."""
        names = set(shapes.keys.get(head, ())) if head else None
        missing = [] if names is None else sorted(self.required - names)
        unknown = [] if names is None else sorted(names - self.known)
        if names is None or missing or unknown:
            what = "not an object" if names is None else _difference(missing, unknown)
            raise InputError(
                f"the read-outs of record {key} in the run {self.path.parent} are not "
                f"{self.type.__qualname__} (item kind {self.kind!r}): {what}"
            )
        self.good.add(head)


@functools.cache
def declared_keys(readouts: type[Mapping[str, object]]) -> tuple[frozenset[str], frozenset[str]]:
    """The required keys and all keys of the TypedDict ``readouts``.

    Its own ``__required_keys__`` cannot be trusted where its module postpones annotations
    (``from __future__ import annotations``: before Python 3.14 a ``NotRequired[...]`` written
    as text counts as required), so each key's annotation is read again: ``NotRequired`` makes
    it optional and ``Required`` required whatever the class's ``total``.
    """
    hints: Mapping[str, object]
    try:
        hints = typing.get_type_hints(readouts, include_extras=True)
    except NameError:  # a name only imported for type checking: read the text
        hints = readouts.__annotations__
    required = set(getattr(readouts, "__required_keys__", ()))
    for name, hint in hints.items():
        wrapper = _wrapper(hint)
        if wrapper == "NotRequired":
            required.discard(name)
        elif wrapper == "Required":
            required.add(name)
    return frozenset(required), frozenset(hints)


def _wrapper(hint: Any) -> str | None:
    """``"Required"`` or ``"NotRequired"`` when ``hint`` (a type, or its text) is wrapped in
    one (inside ``Annotated`` too), else None."""
    if isinstance(hint, str):
        text = hint.removeprefix("typing.").removeprefix("typing_extensions.")
        for wrapper in ("NotRequired", "Required"):
            if text.startswith(f"{wrapper}["):
                return wrapper
        return None
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return _wrapper(typing.get_args(hint)[0])
    if origin in (typing.NotRequired, typing_extensions.NotRequired):
        return "NotRequired"
    if origin in (typing.Required, typing_extensions.Required):
        return "Required"
    return None


def _difference(missing: list[str], unknown: list[str]) -> str:
    """How stored key names differ from a type's: the missing and the undeclared ones."""
    parts = [f"missing {', '.join(missing)}"] if missing else []
    parts += [f"undeclared {', '.join(unknown)}"] if unknown else []
    return "; ".join(parts)
