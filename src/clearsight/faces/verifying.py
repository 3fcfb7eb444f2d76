"""What a protocol tells ``clearsight verify`` of its item kinds: the kind it asks again
(:class:`Reaskable`: how its items are stratified, had again as typed items, what a model must
do to answer one and how a batch is answered) and, per kind, its read-outs derived again from a
record's raw output (:data:`Derive`). Each protocol writes its own (its package's ``protocol``
module); :mod:`clearsight.verify` runs them and knows no protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypedDict, TypeVar

from pydantic import JsonValue

from clearsight.models.base import Capabilities
from clearsight.specs import Spec
from clearsight.store import Record

__all__ = [
    "Answer",
    "Derive",
    "ItemLabels",
    "Reaskable",
    "Typed",
    "View",
    "as_stored",
    "no_context",
    "no_labels",
    "number_at",
    "rebuilt",
    "text_at",
]

#: What a kind's every re-ask needs from its run's configuration (:attr:`Reaskable.context`:
#: the sweep's depth model and generation budget; None where it needs nothing).
C = TypeVar("C")

#: A batch of typed items, the model spec and options that answer them, and the context of
#: :attr:`Reaskable.context` -> their records, under the items' own keys.
Answer = Callable[[Sequence[Any], str, Mapping[str, JsonValue], C], list[Record]]

#: A run's configuration (from its manifest) and the stored specs of the sampled items by key
#: -> the typed items that could be had again, by key.
Typed = Callable[[Mapping[str, Any], Mapping[str, Mapping[str, Any]]], dict[str, Spec]]

#: Read-outs as verify compares them (a probe's: its committed answer).
View = Callable[[Mapping[str, object]], Mapping[str, object]]

#: A record's stored spec, raw output and stored read-outs -> its read-outs derived again.
Derive = Callable[[Mapping[str, Any], Any, Mapping[str, Any]], Mapping[str, Any]]


class ItemLabels(TypedDict):
    """How a re-asked item is labelled in verify's tables: the model that answered it, its
    scene (a problem, an instance), its condition (a variant, a strategy), its level (a masked
    share) and its wording (a read-out); None where the kind has no such thing."""

    model: str | None
    scene: str | None
    condition: str | None
    level_m: float | None
    wording: str | None


def no_labels(spec: Mapping[str, object]) -> ItemLabels:
    """The labels of an item no face labels: none."""
    return ItemLabels(model=None, scene=None, condition=None, level_m=None, wording=None)


def _at(spec: Mapping[str, object], path: tuple[str, ...]) -> object:
    """The value at ``path`` of a stored spec (nested objects by field name), None where the
    spec has none."""
    value: object = spec
    for name in path:
        value = value.get(name) if isinstance(value, Mapping) else None
    return value


def text_at(spec: Mapping[str, object], *path: str) -> str | None:
    """The text at ``path`` of a stored spec (``text_at(spec, "scene", "id")``), None where it
    holds none (a label the kind lacks, or a value that is no text)."""
    value = _at(spec, path)
    return value if isinstance(value, str) else None


def number_at(spec: Mapping[str, object], *path: str) -> float | None:
    """The number at ``path`` of a stored spec, None where it holds none."""
    value = _at(spec, path)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def no_context(config: Mapping[str, object]) -> None:
    """The context of a kind whose re-asks need nothing from their run's configuration."""


def _every(spec: Mapping[str, object]) -> bool:
    return True


def as_stored(readouts: Mapping[str, object]) -> Mapping[str, object]:
    """Read-outs compared as they are stored."""
    return readouts


@dataclass(frozen=True)
class Reaskable(Generic[C]):
    """The item kind ``kind`` that verify re-asks (see the module docstring); ``C``: what every
    unit needs from the run's configuration (:attr:`context`)."""

    kind: str
    stratum: Callable[[Mapping[str, object]], tuple[object, ...]]
    typed: Typed
    needs: Callable[[Any], Capabilities]
    answer: Answer[C]
    context: Callable[[Mapping[str, object]], C]
    """What every unit needs from the run's configuration (the sweep: its depth model and
    generation budget; :func:`no_context` where nothing)."""
    eligible: Callable[[Mapping[str, object]], bool] = _every
    """Which stored items of the kind can be re-asked (the probe: direct answers)."""
    view: View = as_stored
    """The read-outs as :func:`clearsight.faces.pairs.paired_readouts` reads them."""
    model_field: str = "model"
    """The spec field that names the model that answered (the probe: ``sensor``)."""
    labels: Callable[[Mapping[str, object]], ItemLabels] = no_labels
    """A stored item's labels in verify's tables (:class:`ItemLabels`)."""


def rebuilt(
    rebuild: Callable[[Mapping[str, Any]], Spec], stored: Mapping[str, Mapping[str, Any]]
) -> dict[str, Spec]:
    """The items ``rebuild`` makes again from their stored form whose key is the stored one
    (a stored form this code no longer reads, or reads into another item, is left out)."""
    found: dict[str, Spec] = {}
    for key, spec in stored.items():
        try:
            item = rebuild(spec)
        except (KeyError, TypeError, ValueError):
            continue
        if item.key == key:
            found[key] = item
    return found
