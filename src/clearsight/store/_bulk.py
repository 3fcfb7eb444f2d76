"""Bulk work without the cyclic garbage collector's rescans.

Planning a sweep of 1.8 million items allocates as many item objects that all stay alive; CPython's
cyclic collector, triggered by the allocation count, rescans the growing heap again and again
while they are made, which doubled planning's time (measured at 1.8M items: 7.4 µs an item with
the collector, 3.2 without). Reference counting still frees everything at once; only cycles
wait for the next collection after the block.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """The block runs with the cyclic collector off (back on after it, if it was on)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
