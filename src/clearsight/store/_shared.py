"""A run read once while it is in use: :func:`read_shared`.

A finished run can be read by two threads of one process at the same moment: the report's
analysis and an experiment tracker's sample table (:mod:`clearsight.track`), which needs a few
rows of the same data. At the paper's scale one read of a sweep is over a minute of CPU and
1.5 GB; reading it twice at once doubles both. A reader decorated with :func:`read_shared`
hands every caller the value another caller still holds, as long as the run's files are
unchanged (the store's file and its write-ahead log, by modification time and size); a caller
that comes while the value is being read waits for that read. Nothing is kept once no caller
holds the value (a weak reference), so memory is what the callers hold, never more.

The value is shared, not copied: a caller must not modify it (the readers' values are frames
and tables that the analyses only read).
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from clearsight.store._connect import DB_NAME

__all__ = ["read_shared"]

T = TypeVar("T")
A = TypeVar("A", bound="Path | str")

#: A run's state: its directory and, per file of its store, (mtime in ns, size) or None.
_State = tuple[str, tuple[tuple[int, int] | None, ...]]


def _state(run_dir: Path | str) -> _State:
    """The run directory's resolved path and its store files' modification times and sizes."""
    root = Path(run_dir).resolve()
    stats: list[tuple[int, int] | None] = []
    for name in (DB_NAME, f"{DB_NAME}-wal"):
        try:
            found = (root / name).stat()
        except OSError:
            stats.append(None)
        else:
            stats.append((found.st_mtime_ns, found.st_size))
    return str(root), tuple(stats)


def read_shared(read: Callable[[A], T]) -> Callable[[A], T]:
    """``read`` (a run directory -> its value) made to return the value a caller still holds
    for the same unchanged run, and to read each run once at a time (see the module
    docstring). The value's type must take weak references (a dataclass instance does)."""
    held: weakref.WeakValueDictionary[_State, Any] = weakref.WeakValueDictionary()
    locks: dict[str, threading.Lock] = {}
    guard = threading.Lock()

    @functools.wraps(read)
    def shared(run_dir: A) -> T:
        state = _state(run_dir)
        with guard:
            lock = locks.setdefault(state[0], threading.Lock())
        with lock:
            value: T | None = held.get(state)
            if value is None:
                value = read(run_dir)
                held[state] = value
            return value

    return shared
