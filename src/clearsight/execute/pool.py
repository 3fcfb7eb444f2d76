"""The process-pool executor: spawned workers that use one numba/BLAS/torch thread each (or the
run's ``threads``) and exit with their parent, kept ``2 x workers`` units deep, costliest unit
first; each worker sends how far its unit has got and what it is doing
(:mod:`clearsight.execute.progress`, cut to the reports that change the bar) to the parent,
which moves the bar between the units' commits; a unit's records come back with what the worker
has learned (:class:`~clearsight.execute.unit.Findings`)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any

from clearsight.execute import progress
from clearsight.execute.threads import use_threads
from clearsight.execute.unit import Heard, Unit, failed_records, hear
from clearsight.store import Record
from clearsight.validate import InputError

# How often a pool worker checks that the process that started it is still alive.
_PARENT_POLL_S = 0.5


def _watch_parent(parent: int, poll_s: float = _PARENT_POLL_S) -> None:
    """Exit this process as soon as its parent ``parent`` is gone (re-parented: ``kill -9`` of
    the driver leaves no orphaned worker computing for nobody)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="clearsight-parent-watch", daemon=True).start()


#: In a pool worker: the queue its progress reports go to (set by :func:`_init_worker`).
_REPORTS: list[Any] = []


def _init_worker(parent: int, threads: int, reports: Any) -> None:
    """Pool worker start-up: ``threads`` numba/BLAS/torch threads, progress reports sent to
    ``reports``, and exit with the parent."""
    use_threads(threads)
    _REPORTS[:] = [reports]
    _watch_parent(parent)


#: A unit's records and what its worker has learned (:class:`Findings`' ``read``).
Done = tuple[list[Record], object]


def _run_reported(
    run: Callable[[Any], list[Record]],
    read: Callable[[], object] | None,
    unit: Unit,
    index: int,
) -> Done:
    """``run(unit)`` in a worker, its progress sent to the parent as ``(index, share, note)``
    (one of the two None), and ``read()`` after it (what the worker has learned; empty without
    ``read``)."""
    changes = progress.Changes(unit.size, lambda share, note: _REPORTS[0].put((index, share, note)))
    with changes.reporting():
        records = run(unit)
    return records, read() if read is not None else {}


def worker_died(exc: BaseException) -> str:
    """What to tell the user when a spawned process died (the usual cause: a script without a
    ``__main__`` guard, which every spawned process re-imports)."""
    return (
        f"a worker process died ({exc}); if clearsight runs from your own script, put the "
        'call under `if __name__ == "__main__":` (process workers re-import the main '
        "module); otherwise see the system log (out of memory?) and rerun to resume"
    )


def run_pool(
    units: Sequence[Unit],
    run: Callable[[Any], list[Record]],
    workers: int,
    heard: Heard,
    *,
    threads: int = 1,
) -> None:
    """Keep ``workers`` units in flight, costliest first, committing each to ``heard`` as it
    completes (a unit whose ``run`` raised as its items' failed records with the reason) with
    what its worker learned; ``heard`` also hears how far each unit in flight has got and what
    it is doing, twice a second."""
    ordered = sorted(units, key=lambda u: -u.cost)
    pool, reports = _spawn_pool(workers, threads)
    running: dict[Future[Done], tuple[int, Unit]] = {}
    queue = enumerate(ordered)
    read = heard.findings.read if heard.findings is not None else None

    def submit(index: int, unit: Unit) -> None:
        running[pool.submit(_run_reported, run, read, unit, index)] = (index, unit)

    try:
        for index, unit in queue:
            submit(index, unit)
            if len(running) >= 2 * workers:
                break
        while running:
            finished, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
            _drain(reports, ordered, heard)
            for fut in finished:
                _, unit = running.pop(fut)
                records, found = _unit_done(fut, unit)
                heard.commit(records, unit, found)
                nxt = next(queue, None)
                if nxt is not None:
                    submit(*nxt)
    except BrokenProcessPool as exc:
        stop_pool(pool)
        raise InputError(worker_died(exc)) from None
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def _spawn_pool(workers: int, threads: int) -> tuple[ProcessPoolExecutor, Any]:
    """A pool of ``workers`` spawned processes, each set up by :func:`_init_worker` to use
    ``threads`` threads and report its progress on the returned queue."""
    context = get_context("spawn")
    reports = context.SimpleQueue()
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(os.getpid(), threads, reports),
    )
    return pool, reports


def _unit_done(fut: Future[Done], unit: Unit) -> Done:
    """The records of a finished unit and what its worker learned: what its run returned or,
    where it raised, its items' failed records with the reason (the run goes on). A broken
    pool is raised as it is."""
    try:
        return fut.result()
    except BrokenProcessPool:
        raise
    except Exception as exc:  # its items fail with the reason; the run goes on
        return failed_records(unit, exc), {}


def _drain(reports: Any, ordered: Sequence[Unit], heard: Heard) -> None:
    """Hand the progress reports and notes the workers sent so far to ``heard``."""
    while not reports.empty():
        index, share, note = reports.get()
        hear(heard, ordered[index], share, note)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and stop the workers now (a unit in flight is lost; its
    items stay pending for the rerun)."""
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
    # A worker stopped while it was sending its result leaves the pool's manager thread
    # reading the rest of that message forever (this process holds the pipe's write end, so no
    # end of file comes), and interpreter exit joins that thread: the run hung after SIGTERM.
    # With the workers gone, closing this end gives the reader its end of file.
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None:
        writer.close()
