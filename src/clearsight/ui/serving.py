"""The writer lock a server holds while people take part in a run: no run or second server
writes a run under the people answering in it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

__all__ = ["serving_lock"]


@contextmanager
def serving_lock(run_dir: Path, playable: bool) -> Iterator[str | None]:
    """While a server hosts people on a run where they can take part (``playable``), hold the
    run's writer lock (:func:`clearsight.driver.run_lock`) so no run or second server writes it
    under them; yields why sessions are refused when another process holds it (its pid), else
    None."""
    from clearsight.driver import RunLocked, run_lock

    held = ExitStack()
    writer = None
    if playable:
        try:
            held.enter_context(run_lock(run_dir))
        except RunLocked as exc:
            writer = str(exc)
    with held:
        yield writer
