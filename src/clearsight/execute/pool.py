"""The process-pool executor: spawned workers that use one numba/BLAS thread each and exit with
their parent, kept ``2 x workers`` units deep, costliest unit first."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any

from clearsight.execute.unit import Unit, failed_records
from clearsight.store import Record
from clearsight.validate import InputError

# How often a pool worker checks that the process that started it is still alive.
_PARENT_POLL_S = 0.5


def limit_worker_threads(threads: int = 1) -> None:
    """Each worker uses ``threads`` threads for numba and BLAS (one in a pool worker: the pool
    supplies the parallelism). Effective only before numba or the BLAS library is imported."""
    for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(threads)


def _watch_parent(parent: int, poll_s: float = _PARENT_POLL_S) -> None:
    """Exit this process as soon as its parent ``parent`` is gone (re-parented: ``kill -9`` of
    the driver leaves no orphaned worker computing for nobody)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="clearsight-parent-watch", daemon=True).start()


def _init_worker(parent: int) -> None:
    """Pool worker start-up: one numba/BLAS thread, and exit with the parent."""
    limit_worker_threads()
    _watch_parent(parent)


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
    commit: Callable[[list[Record]], None],
) -> None:
    """Keep ``workers`` units in flight, costliest first, committing each as it completes (a
    unit whose ``run`` raised as its items' failed records with the reason)."""
    ordered = sorted(units, key=lambda u: -u.cost)
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("spawn"),
        initializer=_init_worker,
        initargs=(os.getpid(),),
    )
    running: dict[Future[list[Record]], Unit] = {}
    queue = iter(ordered)
    try:
        for unit in queue:
            running[pool.submit(run, unit)] = unit
            if len(running) >= 2 * workers:
                break
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                unit = running.pop(fut)
                try:
                    records = fut.result()
                except BrokenProcessPool:
                    raise
                except Exception as exc:  # its items fail with the reason; the run goes on
                    records = failed_records(unit, exc)
                commit(records)
                nxt = next(queue, None)
                if nxt is not None:
                    running[pool.submit(run, nxt)] = nxt
    except BrokenProcessPool as exc:
        stop_pool(pool)
        raise InputError(worker_died(exc)) from None
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


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
