"""What an executor runs: a unit of independent items, the same four attributes for every
protocol, so no executor guesses at a unit's shape."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from clearsight.specs import Spec
from clearsight.store import Record, as_items


class Unit(Protocol):
    """A picklable piece of work: the items it writes records for, and how to schedule it.

    ``keys``: the item keys it writes (a unit that keeps failing is recorded as failed under
    them); ``size``: its number of items (progress); ``cost``: relative run time (the costliest
    start first); ``model``: the model spec whose replica runs it on Ray (empty: any replica).
    """

    @property
    def keys(self) -> tuple[str, ...]: ...

    @property
    def size(self) -> int: ...

    @property
    def cost(self) -> float: ...

    @property
    def model(self) -> str: ...


class KeyedItems:
    """Mix-in for a frozen dataclass unit that holds its items as typed specs in an ``items``
    field (a tuple, or a :class:`~clearsight.store.SpecGrid`): their keys, its size, and a
    cost of one per item (override where an item costs more)."""

    items: Sequence[Spec]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(as_items(self.items).keys())

    @property
    def size(self) -> int:
        return len(self.items)

    @property
    def cost(self) -> float:
        return float(len(self.items))


#: What a process learns as it runs units (the batch sizes its models chose, by model).
F = TypeVar("F")


@dataclass(frozen=True)
class Findings(Generic[F]):
    """What the process that runs units learns as it runs, carried to the writer's process
    with each unit's records (the batch sizes its models chose, which the driver writes to
    the run's manifest): ``read``, a module-level (picklable) function called in the running
    process after each unit, and ``hear``, called in the writer's process with what ``read``
    returned, when not empty. Every executor carries them (on Ray, from the replica that ran
    the unit)."""

    read: Callable[[], F]
    hear: Callable[[F], None]

    def after_unit(self, found: F) -> None:
        """Hand what ``read`` returned after a unit to ``hear`` (nothing when empty)."""
        if found:
            self.hear(found)


class Heard(Protocol):
    """What an executor tells the run's writer as the units run: how far a unit in flight has
    got (``partial``: its share done) and what it is doing (``note``), and each finished unit's
    records with what the process that ran it learned (``commit``; ``findings``' ``read`` is
    what that process calls)."""

    findings: Findings[Any] | None

    def partial(self, unit: Unit, share: float) -> None: ...

    def note(self, unit: Unit, text: str) -> None: ...

    def commit(self, records: list[Record], unit: Unit, found: object = None) -> None: ...


def hear(heard: Heard, unit: Unit, share: float | None, note: str | None) -> None:
    """One report from the process running ``unit``: its share done or a note."""
    if share is not None:
        heard.partial(unit, share)
    if note is not None:
        heard.note(unit, note)


def failed_records(unit: Unit, reason: str | BaseException) -> list[Record]:
    """Every item of ``unit`` as a failed record with ``reason`` (a unit whose ``run`` raised,
    or that failed every attempt on Ray)."""
    return [Record.failed(key, reason) for key in unit.keys]
