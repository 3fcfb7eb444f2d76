"""What ``clearsight view`` asks of a run, whatever its protocol: :class:`RunView` and the
values it answers with.

A protocol's face offers ``view`` (:attr:`clearsight.faces.face.ProtocolFace.view`): a run
directory in, a :class:`RunView` out. The viewer's pages (:mod:`clearsight.view.app`) only
render these values, so a protocol becomes viewable by declaring its part, never by an edit of
this package: points (its curve points, each with the filters that list the items behind it),
the filters a listing takes and the values each may have, a page of items, one item and its
image. Every label is text the page shows as it is.

An item need not be an image: a text protocol's rows and pages say they have none
(``image=False``), its pages show the item's text as :class:`Section` s of :class:`Span` s (a
span marked as the page should set it apart: masked, removed, added) and more than one
distribution as :class:`Chart` s of bars.

Items are seen side by side two ways: an item's groups (the view's :meth:`RunView.groups`,
each found with its members by :meth:`RunView.related`: the same item for each model, the same
scene across levels), and the same item in other runs of the protocol, matched by what
``clearsight compare`` matches two runs' items by (:meth:`RunView.identity` of an item in one
run, :meth:`RunView.find` in the other).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "Bar",
    "Chart",
    "Detail",
    "Group",
    "Identity",
    "Listing",
    "Member",
    "Point",
    "Query",
    "Related",
    "Row",
    "RunView",
    "Section",
    "Span",
    "ViewIndex",
    "as_groups",
    "named",
]


@dataclass(frozen=True)
class Point:
    """One point of a curve: the curve's name (``curve``: the points of one curve share it,
    in the order of its x axis), where on that axis (``x_label``), the value, the number of
    items behind it and ``filters``, the listing that shows exactly those items."""

    curve: str
    x_label: str
    value: float
    n: int
    filters: Mapping[str, str]


@dataclass(frozen=True)
class Query:
    """A listing asked for: ``filters`` (name -> one of the values :meth:`RunView.filters`
    offers), ``outcome`` (``""``: any; ``correct``, ``wrong``, ``abstained`` or
    ``confidently-wrong``: wrong with a confidence above ``threshold``), the sort by
    confidence (``""``: the run's order; ``asc`` or ``desc``) and the page (from 0) of
    ``per_page`` items."""

    filters: Mapping[str, str] = field(default_factory=dict)
    outcome: str = ""
    threshold: float = 0.8
    sort: str = ""
    page: int = 0
    per_page: int = 50


@dataclass(frozen=True)
class Row:
    """One item of a listing: its key (what its page and image are reached by), its labels
    (column -> text, in the listing's column order: the listing's columns are its rows'),
    its confidence (None: it has none) and whether it has an image."""

    key: str
    labels: Mapping[str, str]
    confidence: float | None
    image: bool = True


@dataclass(frozen=True)
class Listing:
    """One page of a listing: its rows and how many items the whole listing holds."""

    rows: tuple[Row, ...]
    total: int


@dataclass(frozen=True)
class Bar:
    """One option of an item with the probability the model gave it (None: none read), and
    whether it is the answer given and the right one."""

    label: str
    probability: float | None
    answered: bool
    gold: bool


@dataclass(frozen=True)
class Span:
    """A stretch of an item's text: its name (``label``, e.g. the part of a trajectory it is;
    empty: none) and ``mark``, how the page sets it apart (empty: plain text; else a word the
    page shows beside it, such as ``masked``, ``removed`` or ``added``)."""

    text: str
    label: str = ""
    mark: str = ""


@dataclass(frozen=True)
class Section:
    """A titled piece of an item's text, span by span."""

    title: str
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class Chart:
    """A titled distribution of an item beside its options: one bar per value."""

    title: str
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Detail:
    """One item as its page shows it: its labels (field -> text), the question as the model
    read it, its options as bars, what the model returned (``raw_text``) and the other values
    of its record (``values``: name -> text); ``sections`` (its text span by span),
    ``charts`` (further distributions) and whether it has an image (:meth:`RunView.image`)."""

    key: str
    labels: Mapping[str, str]
    prompt: str
    bars: tuple[Bar, ...]
    values: Mapping[str, str]
    raw_text: str
    sections: tuple[Section, ...] = ()
    charts: tuple[Chart, ...] = ()
    image: bool = True


class ViewIndex(Protocol):
    """A run view's side index (:class:`clearsight.view.index.RunIndex`): what the pages read
    listings from, built ahead of time or in the background so that no page waits minutes."""

    def build(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Bring the index up to date now, telling ``progress`` (items read, of how many) as
        it goes."""
        ...

    def start(self) -> None:
        """Bring the index up to date in a background thread where it is far behind the run;
        returns at once."""
        ...


@dataclass(frozen=True)
class Member:
    """One item of a :class:`Related` group: what sets it apart in the group (``label``: its
    model, its level) and its key."""

    label: str
    key: str


@dataclass(frozen=True)
class Group:
    """A group an item can be seen side by side in, as its page links to it: ``name`` (a
    word, unique among the item's groups) and ``title``; its members are found only when it is
    asked for (:meth:`RunView.related`)."""

    name: str
    title: str


@dataclass(frozen=True)
class Related:
    """Items to see side by side with one item (itself among them): ``name`` (the group's
    name in a link: a word, unique among the item's groups), ``title`` (what the items share)
    and the ``members`` in the order the page shows them."""

    name: str
    title: str
    members: tuple[Member, ...]


def as_groups(found: Iterable[Related]) -> tuple[Group, ...]:
    """The groups of related items already found (a view that finds them cheaply answers
    :meth:`RunView.groups` with them)."""
    return tuple(Group(r.name, r.title) for r in found)


def named(found: Iterable[Related], name: str) -> Related | None:
    """The group ``name`` among those found (None: none of that name)."""
    return next((r for r in found if r.name == name), None)


#: What an item is across runs of one protocol (:meth:`RunView.identity`): plain values.
Identity = tuple[object, ...]


class RunView(Protocol):
    """What the viewer reads of one run (module docstring). Reads are lazy: nothing is held
    but what a page shows, and a run still being written is read as it stands."""

    @property
    def title(self) -> str:
        """The run's name and protocol, as the pages head it."""
        ...

    def filters(self) -> Mapping[str, tuple[str, ...]]:
        """Each filter a listing takes and the values it may have, in the pages' order."""
        ...

    def points(self) -> tuple[Point, ...]:
        """The run's curve points, curves in the report's order."""
        ...

    def listing(self, query: Query) -> Listing:
        """The page of items ``query`` asks for (its filters checked by the caller)."""
        ...

    def detail(self, key: str) -> Detail | None:
        """The item ``key`` (None: the run has no record of it in this view)."""
        ...

    def image(self, key: str) -> bytes | None:
        """The PNG the model was shown for item ``key`` (None: no such item in the run, or an
        item without an image)."""
        ...

    @property
    def index(self) -> ViewIndex:
        """The run's side index, which :meth:`points` and :meth:`listing` read."""
        ...

    def groups(self, key: str) -> tuple[Group, ...]:
        """The groups item ``key``'s page links to (() where it has none, or the run has no
        such item): cheap, as every item page asks it; a group may turn out to hold the item
        alone."""
        ...

    def related(self, key: str, name: str) -> Related | None:
        """The group ``name`` of item ``key`` with its members (None: it has no such group)."""
        ...

    def identity(self, key: str) -> Identity | None:
        """What item ``key`` is whatever the run (what ``clearsight compare`` matches two
        runs' items by; it may hold the model's place in the run's list): None where the run
        has no such item, or the protocol matches no runs."""
        ...

    def find(self, identity: Identity) -> str | None:
        """The key of this run's item of ``identity`` (another run's :meth:`identity`), None
        where it has none."""
        ...
