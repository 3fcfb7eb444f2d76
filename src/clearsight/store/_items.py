"""The items a stage offers the driver: one sequence protocol, :class:`Items`, whatever holds them.

A stage's items are typed :class:`~clearsight.specs.Spec` values. The driver and the store ask
the same four things of them, whatever their form: their keys (:meth:`Items.keys`), their kinds
(:meth:`Items.kinds`), the ones whose key is wanted (:meth:`Items.only`) and their stored rows
(:meth:`Items.rows`, encoded by the store's tables). Two forms answer:

* :class:`SpecList`, specs already made, in the caller's list or tuple, answered item by item;
* :class:`SpecGrid`, items that are every combination of a few groups of field values, without
  an object each, and :class:`SpecGrids`, several grids as one sequence.

:func:`as_items` wraps a plain sequence once (the driver does it for each stage), so a protocol
may offer a list, and nothing else looks at the form.

The paper's sweep is a product: each scene's questions under every condition, for each model.
Planning 1.8 million of them as typed :class:`~clearsight.specs.Spec` objects cost more than
storing them, and each object lived until the run ended. A :class:`SpecGrid` holds the groups
instead (a unit's fixed fields, its questions, its conditions): it is a ``Sequence`` of the typed
items, built when asked for (a unit's worker iterates them), while the store encodes each item's
key and stored row straight from the groups' pieces
(:meth:`clearsight.store._rows.RowEncoder.grid_rows`). Either way an item is exactly the spec
``cls(**fields)`` and its key is :attr:`Spec.key` (``tests/test_spec_grid.py`` checks both).
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from abc import abstractmethod
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeAlias, TypeVar, overload

from pydantic import JsonValue

from clearsight.specs import Spec
from clearsight.store._rows import key_encoder

__all__ = [
    "ItemEncoder",
    "ItemTriple",
    "Items",
    "Row",
    "SpecGrid",
    "SpecGrids",
    "SpecList",
    "as_items",
    "keys_of",
    "select",
]

S = TypeVar("S", bound=Spec)

#: An item given by its parts: ``(key, kind, JSON form of the spec)`` (a kind without a spec
#: class, or a spec read back).
ItemTriple: TypeAlias = tuple[str, str, Mapping[str, JsonValue]]
#: A row of the store's ``items`` table: ``(stored key, kind id, packed spec)``.
Row: TypeAlias = tuple[bytes | str, int, str]

DIGEST = 32
"""Bytes of a key's SHA-256 digest (its hex text is the key)."""


class ItemEncoder(Protocol):
    """What turns items into rows of the store (its tables,
    :class:`clearsight.store._tables.Tables`): one item at a time, or a grid from its groups."""

    def item_row(self, item: Spec | ItemTriple) -> tuple[str, Row]:
        """``(key, row)`` of one item."""
        ...

    def grid_rows(self, grid: SpecGrid[Any]) -> list[Row]:
        """The rows of a grid's items, in order."""
        ...


class Items(Sequence[S]):
    """The items of one stage, in order: a sequence of typed specs that also says their keys,
    their kinds, which of them are wanted and how they are stored (see the module docstring).
    """

    __slots__ = ()

    @abstractmethod
    def keys(self) -> Sequence[str]:
        """Every item's key, in order."""

    @abstractmethod
    def kinds(self) -> frozenset[str]:
        """The item kinds among the items."""

    @abstractmethod
    def only(self, keys: Container[str]) -> Items[S]:
        """The items whose key is in ``keys``, in order, in the same form."""

    @abstractmethod
    def rows(self, encoder: ItemEncoder) -> Iterator[Row]:
        """The items' rows of the store, in order, as ``encoder`` encodes them."""


class SpecList(Items[S]):
    """Specs already made, in the caller's sequence (not copied): each answers for itself."""

    __slots__ = ("specs",)

    def __init__(self, specs: Sequence[S]) -> None:
        self.specs = specs

    def __len__(self) -> int:
        return len(self.specs)

    @overload
    def __getitem__(self, index: int) -> S: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[S]: ...

    def __getitem__(self, index: int | slice) -> S | Sequence[S]:
        return self.specs[index]

    def __iter__(self) -> Iterator[S]:
        return iter(self.specs)

    def keys(self) -> list[str]:
        """Every item's key, in order."""
        return [item.key for item in self.specs]

    def kinds(self) -> frozenset[str]:
        """The item kinds among the items."""
        return frozenset(item.kind for item in self.specs)

    def only(self, keys: Container[str]) -> SpecList[S]:
        """The items whose key is in ``keys``, in order."""
        return SpecList([item for item in self.specs if item.key in keys])

    def rows(self, encoder: ItemEncoder) -> Iterator[Row]:
        """Each item's row, encoded one by one."""
        return (encoder.item_row(item)[1] for item in self.specs)


@overload
def as_items(items: Iterable[S]) -> Items[S]: ...


@overload
def as_items(items: Iterable[Spec | ItemTriple]) -> Items[Any]: ...


def as_items(items: Iterable[Any]) -> Items[Any]:
    """``items`` as :class:`Items`: themselves when they are (a grid), else a :class:`SpecList`
    of them (an iterator is read into a tuple first). The one place that looks at the form."""
    if isinstance(items, Items):
        return items
    return SpecList(items if isinstance(items, Sequence) else tuple(items))


def keys_of(items: Iterable[Spec]) -> Sequence[str]:
    """The keys of ``items`` in order (a grid's from its digests): ``as_items(items).keys()``."""
    return as_items(items).keys()


def select(items: Iterable[S], keys: Container[str]) -> Items[S]:
    """The items whose key is in ``keys``, in order (a grid stays a grid):
    ``as_items(items).only(keys)``."""
    return as_items(items).only(keys)


class _Built(Items[S]):
    """Items that are built when asked for: indexing (negative indexes and slices too) comes
    down to ``_get`` of an index in range."""

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


class SpecGrid(_Built[S]):
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
        groups: Sequence[Sequence[Mapping[str, object]]],
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
        fields: dict[str, object] = {}
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
    def product(
        self,
    ) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[Mapping[str, object], ...], ...]]:
        """The field names of each group and the groups, the class defaults of the fields no
        group gives as a first group of one entry: what the items' keys and rows are made of
        (:meth:`clearsight.store._rows.RowEncoder.grid_rows`)."""
        if not self.defaults:
            return self.names, self.groups
        return (tuple(self.defaults), *self.names), ((self.defaults,), *self.groups)

    @property
    def digests(self) -> bytes:
        """The 32-byte key digests of the whole product, in order (computed once)."""
        if self._digests is None:
            self.learn(b"".join(key_encoder(self.cls).grid_rows(*self.product)[0]))
        assert self._digests is not None
        return self._digests

    def learn(self, digests: bytes) -> None:
        """Keep the product's digests, as the store computed them while adding the items."""
        if len(digests) != self.size * DIGEST:
            raise ValueError(f"{len(digests)} bytes of digests for a grid of {self.size}")
        self._digests = digests

    def keys(self) -> tuple[str, ...]:
        """The items' keys, in order (from the product's digests)."""
        d = self.digests
        return tuple(d[i * DIGEST : (i + 1) * DIGEST].hex() for i in self._kept())

    def kinds(self) -> frozenset[str]:
        """The grid's one item kind (none when it has no item)."""
        return frozenset((self.kind,)) if len(self) else frozenset()

    def only(self, keys: Container[str]) -> SpecGrid[S]:
        """The items whose key is in ``keys`` (the same grid when that is all of them)."""
        kept = [i for i, key in zip(self._kept(), self.keys(), strict=True) if key in keys]
        if len(kept) == len(self):
            return self
        return SpecGrid(self.cls, self.groups, kept, digests=self.digests)

    def rows(self, encoder: ItemEncoder) -> Iterator[Row]:
        """The items' rows, encoded from the groups (the grid learns its digests)."""
        return iter(encoder.grid_rows(self))

    def _kept(self) -> Sequence[int]:
        """The product positions of the grid's items, in order."""
        return range(self.size) if self.positions is None else self.positions


def _rebuild(
    cls: type[S],
    groups: tuple[tuple[Mapping[str, object], ...], ...],
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
    cls: type[Spec], groups: tuple[tuple[Mapping[str, object], ...], ...]
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


def _defaults(cls: type[Spec], given: set[str]) -> dict[str, object]:
    """The class defaults of the stored fields no group gives (what an item holds there)."""
    out: dict[str, object] = {}
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


class SpecGrids(_Built[S]):
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

    def keys(self) -> list[str]:
        """Every item's key, in order."""
        return list(itertools.chain.from_iterable(grid.keys() for grid in self.grids))

    def kinds(self) -> frozenset[str]:
        """The item kinds of the grids."""
        return frozenset(grid.kind for grid in self.grids)

    def only(self, keys: Container[str]) -> SpecGrids[S]:
        """The items whose key is in ``keys``."""
        return SpecGrids([grid.only(keys) for grid in self.grids])

    def rows(self, encoder: ItemEncoder) -> Iterator[Row]:
        """Each grid's rows in turn, encoded from its groups."""
        return itertools.chain.from_iterable(map(encoder.grid_rows, self.grids))
