"""Items that are every combination of a few groups of field values, without an object each.

The paper's sweep is a product: each scene's questions under every condition, for each model.
Planning 1.8 million of them as typed :class:`~clearsight.specs.Spec` objects cost more than
storing them, and each object lived until the run ended. A :class:`SpecGrid` holds the groups
instead (a unit's fixed fields, its questions, its conditions): it is a ``Sequence`` of the typed
items, built when asked for (a unit's worker iterates them), while the store encodes each item's
key and stored row straight from the groups' pieces
(:meth:`clearsight.store._rows.RowEncoder.grid_rows`). Either way an item is exactly the spec
``cls(**fields)`` and its key is :attr:`Spec.key` (``tests/test_spec_grid.py`` checks both).

:class:`SpecGrids` is several grids as one sequence (a stage's items). :func:`keys_of`,
:func:`kinds_of` and :func:`select` are what the driver asks of any stage's items: a grid
answers from its groups and its 32-byte digests, a plain sequence of specs item by item.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from abc import abstractmethod
from collections.abc import Container, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar, overload

from clearsight.specs import Spec

__all__ = ["SpecGrid", "SpecGrids", "keys_of", "kinds_of", "select"]

S = TypeVar("S", bound=Spec)

DIGEST = 32
"""Bytes of a key's SHA-256 digest (its hex text is the key)."""


class _Items(Sequence[S], Generic[S]):
    """A sequence of typed items that builds each when asked: indexing (negative indexes and
    slices too) comes down to ``_get`` of an index in range."""

    __slots__ = ()

    @overload
    def __getitem__(self, index: int) -> S: ...

    @overload
    def __getitem__(self, index: slice) -> list[S]: ...

    def __getitem__(self, index: int | slice) -> S | list[S]:
        if isinstance(index, slice):
            return [self._get(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"item {index} of {len(self)}")
        return self._get(index)

    @abstractmethod
    def _get(self, index: int) -> S:
        """The item at ``index`` (``0 <= index < len(self)``)."""


class SpecGrid(_Items[S]):
    """The items ``cls(**a, **b, ...)`` for every ``a`` of ``groups[0]``, ``b`` of ``groups[1]``
    and so on, the last group varying fastest; with ``positions``, only the items at those
    positions of that product, in that order.

    Every entry of a group names the same fields, no field is in two groups, and the groups name
    every field of ``cls`` without a default (ValueError otherwise). A stored field left out
    takes the class's default, in the key as in the item. Entries are read as they are: share
    one entry object among grids (the store encodes it once, by identity) but do not change it
    once a grid holds it.
    """

    __slots__ = ("_digests", "cls", "defaults", "groups", "names", "positions", "size")

    def __init__(
        self,
        cls: type[S],
        groups: Sequence[Sequence[Mapping[str, Any]]],
        positions: Sequence[int] | None = None,
        *,
        digests: bytes | None = None,
    ) -> None:
        self.cls = cls
        self.groups = tuple(tuple(group) for group in groups)
        self.names = _group_names(cls, self.groups)
        self.defaults = _defaults(cls, {n for names in self.names for n in names})
        self.size = math.prod(len(group) for group in self.groups)
        self.positions = None if positions is None else tuple(positions)
        if self.positions and not 0 <= min(self.positions) <= max(self.positions) < self.size:
            raise IndexError(f"a position is outside the grid's {self.size} items")
        self._digests = digests
        """The 32-byte digests of the whole product, in order, once known."""

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its digests (a worker's unit keys need no hashing)."""
        return (_rebuild, (self.cls, self.groups, self.positions, self._digests))

    def __len__(self) -> int:
        return self.size if self.positions is None else len(self.positions)

    def _get(self, index: int) -> S:
        return self.at(index if self.positions is None else self.positions[index])

    def at(self, position: int) -> S:
        """The item at ``position`` of the whole product (whatever ``positions`` keeps)."""
        combo, rest = [], position
        for group in reversed(self.groups):
            rest, j = divmod(rest, len(group))
            combo.append(group[j])
        return self._item(position, reversed(combo))

    def __iter__(self) -> Iterator[S]:
        if self.positions is not None:
            yield from (self[i] for i in range(len(self)))
            return
        for at, combo in enumerate(itertools.product(*self.groups)):
            yield self._item(at, combo)

    def _item(self, at: int, combo: Any) -> S:
        """The typed item at product position ``at`` from its entries (its key set when known)."""
        fields: dict[str, Any] = {}
        for entry in combo:
            fields.update(entry)
        item = self.cls(**fields)
        if self._digests is not None:
            item.__dict__["key"] = self._digests[at * DIGEST : (at + 1) * DIGEST].hex()
        return item

    @property
    def kind(self) -> str:
        """The item kind of every item."""
        return self.cls.kind

    @property
    def digests(self) -> bytes:
        """The 32-byte key digests of the whole product, in order (computed once)."""
        if self._digests is None:
            from clearsight.store._rows import key_encoder

            self.learn(b"".join(key_encoder(self.cls).grid_rows(self)[0]))
        assert self._digests is not None
        return self._digests

    def learn(self, digests: bytes) -> None:
        """Keep the product's digests, as the store computed them while adding the items."""
        if len(digests) != self.size * DIGEST:
            raise ValueError(f"{len(digests)} bytes of digests for a grid of {self.size}")
        self._digests = digests

    @property
    def keys(self) -> tuple[str, ...]:
        """The items' keys, in order."""
        d = self.digests
        return tuple(d[i * DIGEST : (i + 1) * DIGEST].hex() for i in self._kept())

    def only(self, keys: Container[str]) -> SpecGrid[S]:
        """The items whose key is in ``keys`` (the same grid when that is all of them)."""
        kept = [i for i, key in zip(self._kept(), self.keys, strict=True) if key in keys]
        if len(kept) == len(self):
            return self
        return SpecGrid(self.cls, self.groups, kept, digests=self.digests)

    def _kept(self) -> Sequence[int]:
        """The product positions of the grid's items, in order."""
        return range(self.size) if self.positions is None else self.positions


def _rebuild(
    cls: type[S],
    groups: tuple[tuple[Mapping[str, Any], ...], ...],
    positions: tuple[int, ...] | None,
    digests: bytes | None,
) -> SpecGrid[S]:
    return SpecGrid(cls, groups, positions, digests=digests)


_FIELDS: dict[type[Spec], dict[str, dataclasses.Field[Any]]] = {}


def _fields_of(cls: type[Spec]) -> dict[str, dataclasses.Field[Any]]:
    """The dataclass fields of a spec class by name, read once per class (a sweep makes a grid
    per unit)."""
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return found


def _group_names(
    cls: type[Spec], groups: tuple[tuple[Mapping[str, Any], ...], ...]
) -> tuple[tuple[str, ...], ...]:
    """The field names of each group, checked (see :class:`SpecGrid`)."""
    if not groups:
        raise ValueError("a grid needs at least one group of entries")
    fields = _fields_of(cls)
    names: list[tuple[str, ...]] = []
    seen: set[str] = set()
    for g, group in enumerate(groups):
        first = tuple(group[0]) if group else ()
        if any(entry.keys() != group[0].keys() for entry in group):
            raise ValueError(f"the entries of group {g} name different fields")
        unknown = [n for n in first if n not in fields or not fields[n].init]
        if unknown:
            raise ValueError(f"{cls.__name__} has no field {unknown[0]!r} to set (group {g})")
        twice = seen.intersection(first)
        if twice:
            raise ValueError(f"field {sorted(twice)[0]!r} is in two groups")
        seen.update(first)
        names.append(first)
    missing = [
        n
        for n, f in fields.items()
        if n not in seen
        and f.init
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing and all(groups):
        raise ValueError(f"no group gives {cls.__name__}'s field {missing[0]!r}")
    return tuple(names)


def _defaults(cls: type[Spec], given: set[str]) -> dict[str, Any]:
    """The class defaults of the stored fields no group gives (what an item holds there)."""
    out: dict[str, Any] = {}
    fields = _fields_of(cls)
    for name, _ in cls._stored_fields():
        if name in given:
            continue
        f = fields[name]
        if f.default is not dataclasses.MISSING:
            out[name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[name] = f.default_factory()
    return out


class SpecGrids(_Items[S]):
    """Several grids as one sequence of items, in order (a stage's items)."""

    __slots__ = ("_starts", "grids")

    def __init__(self, grids: Sequence[SpecGrid[S]]) -> None:
        self.grids = tuple(g for g in grids if len(g))
        self._starts = list(itertools.accumulate((len(g) for g in self.grids), initial=0))

    def __len__(self) -> int:
        return self._starts[-1]

    def _get(self, index: int) -> S:
        g = bisect.bisect_right(self._starts, index) - 1
        return self.grids[g][index - self._starts[g]]

    def __iter__(self) -> Iterator[S]:
        for grid in self.grids:
            yield from grid

    @property
    def keys(self) -> list[str]:
        """Every item's key, in order."""
        return [key for grid in self.grids for key in grid.keys]

    def only(self, keys: Container[str]) -> SpecGrids[S]:
        """The items whose key is in ``keys``."""
        return SpecGrids([grid.only(keys) for grid in self.grids])


def keys_of(items: Sequence[Spec]) -> Sequence[str]:
    """The keys of a stage's items (a grid's from its digests)."""
    if isinstance(items, SpecGrid | SpecGrids):
        return items.keys
    return [item.key for item in items]


def kinds_of(items: Sequence[Spec]) -> set[str]:
    """The item kinds among ``items`` (a grid's without building an item)."""
    if isinstance(items, SpecGrid):
        return {items.kind} if len(items) else set()
    if isinstance(items, SpecGrids):
        return {grid.kind for grid in items.grids}
    return {item.kind for item in items}


def select(items: Sequence[S], keys: Container[str]) -> Sequence[S]:
    """The items whose key is in ``keys``, in order (a grid stays a grid)."""
    if isinstance(items, SpecGrid | SpecGrids):
        return items.only(keys)
    return [item for item in items if item.key in keys]
