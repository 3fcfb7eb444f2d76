"""Progress inside a unit: a backend says how far its current call has got, the executor turns
that into items of the unit in flight on the progress bar.

A unit asks its model in one batch (a sweep unit is a scene's 360 questions), so a bar that
moved only when a unit's records were stored sat at 0 % for minutes. A backend calls
:func:`report` as its requests are answered (``done`` of ``total``); the executor that runs the
unit holds a sink (:func:`reporting_to`) that shows ``size x done / total`` of the unit's items,
never going back, and the unit's stored records settle the count. Where a backend calls another
(the LLM-reading perceiver asks SmolLM2 after it has looked at every image), :func:`within`
maps the inner call's progress onto its share of the outer one. No sink: :func:`report` does
nothing (a backend used outside a run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: The sinks of the units running in this process (innermost last): each takes the share of
#: its unit done, in [0, 1].
_SINKS: list[Callable[[float], None]] = []


def report(done: float, total: int) -> None:
    """``done`` of the ``total`` requests of the backend call in progress are answered."""
    if _SINKS and total > 0:
        _SINKS[-1](min(max(done / total, 0.0), 1.0))


@contextmanager
def reporting_to(sink: Callable[[float], None]) -> Iterator[None]:
    """Send the reports made inside the block to ``sink`` (the share of the unit done)."""
    _SINKS.append(sink)
    try:
        yield
    finally:
        _SINKS.pop()


@contextmanager
def within(start: float, end: float) -> Iterator[None]:
    """Reports made inside the block cover ``start`` to ``end`` of the call around it (the
    block's own calls count from 0 to 1)."""
    if not _SINKS:
        yield
        return
    outer = _SINKS[-1]
    with reporting_to(lambda share: outer(start + share * (end - start))):
        yield


class UnitProgress:
    """The items of one unit shown on a bar before its records are stored: a share of its
    ``size`` that never goes back, and never the last item (its stored records count that)."""

    def __init__(self, bar_update: Callable[[int], object], size: int) -> None:
        self._update = bar_update
        self.size = size
        self.shown = 0

    def __call__(self, share: float) -> None:
        """Move the bar to ``share`` of the unit (rounded down; at most ``size - 1`` items)."""
        items = min(int(self.size * share), self.size - 1)
        if items > self.shown:
            self._update(items - self.shown)
            self.shown = items

    def settle(self, stored: int) -> None:
        """The unit's ``stored`` records are in: the bar counts them instead of the share."""
        self._update(stored - self.shown)
        self.shown = 0
