"""Failures of the machine, not of the input: the disk is full, the run directory is read-only
or was removed under a run, the run store is corrupted. Each is one line the user can act on,
``<what> in <where>: <why>``, and its own exit code (:data:`EXIT_FAULT`), distinct from bad
input (2: nothing ran) since a run may have done work before it: what it committed is kept.

:class:`RunFault` is that failure, :func:`os_fault` reads an ``OSError`` as one (the run
store reads its SQLite errors as one: :class:`clearsight.store.RunStore`). The command line
turns either into its ``error:`` line (``clearsight.cli._options.Group``).
"""

from __future__ import annotations

import errno
from typing import Final

__all__ = ["EXIT_FAULT", "RunFault", "os_exit_code", "os_fault"]

#: Exit code of a command stopped by an I/O or database failure (see the module docstring).
EXIT_FAULT: Final = 4

#: What to do about an OSError, by errno.
_OS_HINTS: Final = {
    errno.ENOSPC: "free some space, then rerun the command: what was committed is kept",
    errno.EDQUOT: "free some space, then rerun the command: what was committed is kept",
    errno.EROFS: "the file system is read-only: choose a writable directory",
    errno.EACCES: "check the permissions of the directory",
    errno.EPERM: "check the permissions of the directory",
    errno.EEXIST: "a file is where a directory is wanted: choose another path",
    errno.ENOTDIR: "a file is where a directory is wanted: choose another path",
    errno.EISDIR: "a directory is where a file is wanted: choose another path",
}
#: Errors of a path that names the wrong kind of file: bad input (exit code 2), said before
#: anything is written, not a failure of the disk.
_WRONG_KIND: Final = frozenset({errno.EEXIST, errno.ENOTDIR, errno.EISDIR})


class RunFault(RuntimeError):  # noqa: N818 - the failure itself: `except RunFault`
    """An I/O or database failure the user can act on: ``WHAT in WHERE: WHY`` on one line;
    the command line exits with :data:`EXIT_FAULT`."""

    def __init__(self, what: str, where: object, why: str) -> None:
        self.what = what
        self.where = where
        self.why = why
        super().__init__(" ".join(f"{what} in {where}: {why}".split()))


def os_fault(exc: OSError, what: str = "I/O error") -> RunFault:
    """The ``OSError`` ``exc`` as a :class:`RunFault` at the file it names (both, for a
    rename): the system's message and what to do about it."""
    where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    why = exc.strerror or str(exc) or type(exc).__name__
    hint = _OS_HINTS.get(exc.errno or 0)
    return RunFault(what, where or "the file system", why + (f" ({hint})" if hint else ""))


def os_exit_code(exc: OSError) -> int:
    """The exit code of the ``OSError`` ``exc``: 2 for a path naming the wrong kind of file
    (bad input), else :data:`EXIT_FAULT`."""
    return 2 if exc.errno in _WRONG_KIND else EXIT_FAULT
