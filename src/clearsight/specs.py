"""Typed item specs and the one recipe for their keys.

Every item a protocol plans is a :class:`Spec`: a frozen dataclass whose class names the item
kind (``kind``). Workers get the typed value; the store keeps its JSON form, :meth:`Spec.to_json`
(fields by name; nested dataclasses as their fields, tuples as lists; a field marked
:data:`OMIT_NONE` left out while it is None). Every item of every protocol is keyed the same way:

.. math::

    \\mathrm{key} = \\mathrm{sha256}\\big(\\mathrm{json}([\\,kind,\\ payload\\,])\\big)

where ``json`` is the canonical form of :func:`clearsight.seeding.content_hash` and *payload* is
the JSON form except that each field named in the class's ``parts`` — a value many items share,
such as a sweep question asked under every condition by every model — contributes the part's own
content hash. A key therefore depends on everything an item is made of, while a shared part is
encoded once per plan instead of once per item. :func:`json_key` computes the same key from a
stored spec, which is how a store written before this recipe is re-keyed.

The spec classes of the protocols are registered by kind as their modules are imported;
:func:`spec_class` imports the protocols' spec modules (:data:`SPEC_MODULES`) when asked for a
kind no imported module has registered.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import PurePath
from typing import Any, ClassVar

from pydantic import JsonValue
from typing_extensions import is_typeddict

from clearsight.seeding import content_hash

__all__ = [
    "OMIT_NONE",
    "REASK_KIND",
    "SPEC_MODULES",
    "Options",
    "Part",
    "Spec",
    "json_key",
    "spec_class",
    "to_plain",
]

#: Field metadata: leave the field out of the JSON form (and the key) while it is None.
OMIT_NONE: Mapping[str, bool] = {"omit_none": True}

#: The item kind of ``clearsight verify``'s re-asks: records a run's own results leave out (its
#: report shows them in its Reproducibility section).
REASK_KIND = "verify"

#: The modules that define the protocols' spec classes (imported by :func:`spec_class`).
SPEC_MODULES = (
    "clearsight.sweep.specs",
    "clearsight.grounding.specs",
    "clearsight.grounding.bench.specs",
    "clearsight.probe.specs",
    "clearsight.verify.specs",
)

_REGISTRY: dict[str, type[Spec]] = {}
# Per spec class: its fields as (name, omitted while None), read once.
_FIELD_NAMES: dict[type, tuple[tuple[str, bool], ...]] = {}


_SCALARS = frozenset({str, int, float, bool, type(None)})


def to_plain(value: Any) -> Any:
    """``value`` as plain JSON data: specs by :meth:`Spec.to_json`, other dataclasses field by
    field, tuples and lists as lists, mappings with their values converted, paths as strings."""
    kind = type(value)
    if kind in _SCALARS:  # the common case first: planning converts millions of fields
        return value
    if isinstance(value, Spec):  # before Mapping: an ABC check costs more
        return value.to_json()
    if kind is tuple or kind is list:
        return [v if type(v) in _SCALARS else to_plain(v) for v in value]
    if kind is dict or isinstance(value, Mapping):
        return {k: v if type(v) in _SCALARS else to_plain(v) for k, v in value.items()}
    if isinstance(value, PurePath):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


class Spec:
    """Base of a typed item spec (subclasses are frozen dataclasses).

    ``kind``: the item kind the spec is stored under (a subclass that sets it is registered for
    :func:`spec_class`). ``parts``: names of fields holding a :class:`Part`, which enter the key
    by their content hash (see the module docstring). ``stored``: the fields of the JSON form
    where it is not every field (the others only serve planning). ``readout_type``: the
    ``TypedDict`` of the read-outs its records hold, declared beside the spec, which the store
    reads them back as (:meth:`clearsight.store.RunStore.iter_records` with ``readouts=``).
    """

    kind: ClassVar[str]
    parts: ClassVar[tuple[str, ...]] = ()
    stored: ClassVar[tuple[str, ...] | None] = None
    readout_type: ClassVar[type[Mapping[str, object]] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        readouts = cls.__dict__.get("readout_type")
        if readouts is not None and not is_typeddict(readouts):
            raise TypeError(
                f"{cls.__qualname__}.readout_type must be a TypedDict, got {readouts!r}"
            )
        kind = cls.__dict__.get("kind")
        if isinstance(kind, str):
            known = _REGISTRY.get(kind)
            if known is not None and known.__qualname__ != cls.__qualname__:
                raise TypeError(f"item kind {kind!r} is already the spec of {known.__qualname__}")
            _REGISTRY[kind] = cls

    @classmethod
    def _stored_fields(cls) -> tuple[tuple[str, bool], ...]:
        """(name, left out while None) of each field of the JSON form, computed once per class:
        every field, or those ``stored`` names."""
        names = _FIELD_NAMES.get(cls)
        if names is None:
            fields = dataclasses.fields(cls)  # type: ignore[arg-type]
            names = tuple(
                (f.name, bool(f.metadata.get("omit_none")))
                for f in fields
                if cls.stored is None or f.name in cls.stored
            )
            _FIELD_NAMES[cls] = names
        return names

    def to_json(self) -> dict[str, JsonValue]:
        """The stored form: plain JSON data (see the module docstring)."""
        out: dict[str, JsonValue] = {}
        for name, omit in self._stored_fields():  # a loop, not to_plain: it runs per item
            value = getattr(self, name)
            if type(value) in _SCALARS:
                if value is None and omit:
                    continue
                out[name] = value
            elif isinstance(value, Part):
                out[name] = value.json
            else:
                out[name] = to_plain(value)
        return out

    @cached_property
    def key(self) -> str:
        """The item's key: ``content_hash([kind, payload])``, parts by their content hash."""
        return self._key_of(self.to_json())

    def row(self) -> tuple[str, str, dict[str, JsonValue]]:
        """``(key, kind, JSON form)`` as the store adds an item, the JSON form computed once."""
        stored = self.to_json()
        if "key" not in self.__dict__:
            self.__dict__["key"] = self._key_of(stored)
        return self.key, self.kind, stored

    def _key_of(self, stored: dict[str, JsonValue]) -> str:
        payload = dict(stored)
        for name in self.parts:
            if name in payload:
                value = getattr(self, name)
                if not isinstance(value, Part):
                    raise TypeError(f"{type(self).__name__}.{name} is a part but holds {value!r}")
                payload[name] = value.digest
        return content_hash([self.kind, payload])


class Part(Spec):
    """A value many items share (a frozen dataclass): its JSON form and content hash are
    computed once and kept on the object."""

    @cached_property
    def json(self) -> dict[str, JsonValue]:
        """The JSON form, computed once (treat as read-only: every item shares it)."""
        return super().to_json()

    def to_json(self) -> dict[str, JsonValue]:
        return self.json

    @cached_property
    def digest(self) -> str:
        """``content_hash`` of the JSON form."""
        return content_hash(self.json)


@dataclass(frozen=True)
class Options(Part):
    """A mapping many items share (say, a model's options), stored as the mapping itself."""

    values: Mapping[str, JsonValue]

    @cached_property
    def json(self) -> dict[str, JsonValue]:
        return {k: to_plain(v) for k, v in self.values.items()}


def spec_class(kind: str) -> type[Spec] | None:
    """The spec class of an item kind (None: a kind no protocol defines)."""
    if kind not in _REGISTRY:
        for module in SPEC_MODULES:
            importlib.import_module(module)
    return _REGISTRY.get(kind)


def json_key(kind: str, spec: Mapping[str, JsonValue]) -> str:
    """The key of a stored spec of ``kind``, by the recipe of :attr:`Spec.key` (a kind no
    protocol defines has no parts)."""
    cls = spec_class(kind)
    parts = cls.parts if cls is not None else ()
    payload = {name: content_hash(v) if name in parts else v for name, v in spec.items()}
    return content_hash([kind, payload])
