"""Progress inside a unit: a backend says how far its current call has got, the executor turns
that into items of the unit in flight on the progress bar, beside a note of what the unit is
doing.

A unit asks its model in one batch (a sweep unit is a scene's 360 questions), so a bar that
moved only when a unit's records were stored sat at 0 % for minutes. A backend calls
:func:`report` as its requests are answered (``done`` of ``total``); the executor that runs the
unit holds a sink (:func:`reporting_to`) that shows that share of the unit's items, never going
back, and the unit's stored records settle the count. Where a backend calls another (the
LLM-reading perceiver asks SmolLM2 after it has looked at every image), :func:`within` maps the
inner call's progress onto its share of the outer one. A unit of one long item (a probe
conversation) says where it is with a note (:func:`within`'s ``note``, :func:`say`: "turn 3 of
10, sensor: 5 of 5 samples"), shown beside the bar, and moves the bar in hundredths of its item
(:func:`positions`). No sink: :func:`report` and :func:`say` do nothing (a backend used outside
a run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


def _silent(text: str) -> None:
    """A sink's note channel where nobody listens."""


@dataclass(frozen=True)
class _Sink:
    """Where the reports of a block go: the share of the unit done, in [0, 1], and notes."""

    share: Callable[[float], None]
    say: Callable[[str], None] = _silent


#: The sinks of the units running in this process (innermost last).
_SINKS: list[_Sink] = []


def report(done: float, total: int) -> None:
    """``done`` of the ``total`` requests of the backend call in progress are answered."""
    if _SINKS and total > 0:
        _SINKS[-1].share(min(max(done / total, 0.0), 1.0))


def say(text: str) -> None:
    """Say what the unit in progress is doing (shown beside the bar; at most once per step of
    the unit, never per token)."""
    if _SINKS:
        _SINKS[-1].say(text)


@contextmanager
def reporting_to(
    sink: Callable[[float], None], notes: Callable[[str], None] = _silent
) -> Iterator[None]:
    """Send the reports made inside the block to ``sink`` (the share of the unit done) and its
    notes to ``notes``."""
    _SINKS.append(_Sink(sink, notes))
    try:
        yield
    finally:
        _SINKS.pop()


@contextmanager
def within(start: float, end: float, note: str = "") -> Iterator[None]:
    """Reports made inside the block cover ``start`` to ``end`` of the call around it (the
    block's own calls count from 0 to 1). With a ``note`` the block says it and its ``start``
    as it begins, and the notes said inside it follow the note ("turn 3 of 10, ...")."""
    if not _SINKS:
        yield
        return
    outer = _SINKS[-1]
    if note:
        outer.say(note)
        outer.share(start)

    def inner(text: str) -> None:
        outer.say(f"{note}, {text}" if note else text)

    with reporting_to(lambda share: outer.share(start + share * (end - start)), inner):
        yield


def positions(size: int) -> int:
    """The positions a unit of ``size`` items moves the bar through: one per item, or a
    hundred for a unit of fewer (a probe unit is one conversation of many turns)."""
    return max(size, 100)


class UnitProgress:
    """The items of one unit shown on a bar before its records are stored: a share of its
    ``size`` that never goes back, in :func:`positions` steps, never the whole unit (its stored
    records count that)."""

    def __init__(self, bar_update: Callable[[float], object], size: int) -> None:
        self._update = bar_update
        self.size = size
        self._steps = positions(size)
        self._at = 0
        self.shown: float = 0

    def __call__(self, share: float) -> None:
        """Move the bar to ``share`` of the unit (rounded down to a position, at most the last
        one before the end)."""
        at = min(int(self._steps * share), self._steps - 1)
        if at > self._at:
            items = at if self._steps == self.size else at * self.size / self._steps
            self._update(items - self.shown)
            self._at, self.shown = at, items

    def settle(self, stored: int) -> None:
        """The unit's ``stored`` records are in: the bar counts them instead of the share."""
        self._update(stored - self.shown)
        self._at, self.shown = 0, 0


class Changes:
    """A unit's reports cut to the ones that change what its bar shows (its position or its
    note), before they cross to another process: a backend reports every generated token."""

    def __init__(self, size: int, send: Callable[[float | None, str | None], None]) -> None:
        self._steps = positions(size)
        self._send = send
        self._at = -1
        self._note: str | None = None

    def share(self, share: float) -> None:
        """Send ``share`` where it moves the unit to a new position."""
        at = int(self._steps * share)
        if at != self._at:
            self._at = at
            self._send(share, None)

    def say(self, text: str) -> None:
        """Send ``text`` where it is a new note."""
        if text != self._note:
            self._note = text
            self._send(None, text)

    @contextmanager
    def reporting(self) -> Iterator[None]:
        """The reports made inside the block, cut to their changes, sent."""
        with reporting_to(self.share, self.say):
            yield
