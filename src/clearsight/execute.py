"""Executors: run independent work units, serially, in a process pool or on Ray, with one writer.

Workers return records; only the main process writes them, one transaction per finished unit,
so a run killed at any moment loses at most the units in flight and a rerun resumes from the
store. Ctrl-C (and SIGTERM, which :mod:`clearsight.driver` turns into the same stop) ends
cleanly: the pool's workers are stopped, what finished is already committed, and
:class:`Interrupted` tells the caller how far the run got. Pool workers also watch their parent
and exit within a second when it dies without a word (``kill -9``).

The Ray executor (:mod:`clearsight.ray_executor`) takes its settings (cluster address, replicas,
CPUs and GPUs per replica) from the ``ray`` argument.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from typing import TYPE_CHECKING, Any, Literal, Protocol

from clearsight.store import Record, RunStore
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.ray_executor import RayConfig

ExecutorName = Literal["serial", "process", "ray"]
EXECUTORS: tuple[str, ...] = ("serial", "process", "ray")

# How often a pool worker checks that the process that started it is still alive.
_PARENT_POLL_S = 0.5


class Unit(Protocol):
    """Anything picklable with a size (its number of items).

    Optional attributes executors use where a unit has them: ``cost`` (relative run time, so the
    costliest start first), ``model`` (the Ray executor runs a unit on a replica of that model;
    none or empty: any replica) and ``items`` as ``(key, spec)`` pairs or a single ``key`` (the
    Ray executor records a unit that keeps failing under these keys).
    """

    @property
    def size(self) -> int: ...


@dataclass(frozen=True)
class Summary:
    """What an execution did."""

    units: int
    ok: int
    failed: int


class Interrupted(Exception):  # noqa: N818 - reads as what happened: `except Interrupted`
    """Raised when Ctrl-C (or SIGTERM: ``terminated``) stopped a run; everything finished
    before it is committed."""

    def __init__(self, summary: Summary, *, terminated: bool = False) -> None:
        how = "terminated" if terminated else "interrupted"
        super().__init__(f"{how} after {summary.units} units ({summary.ok} ok records)")
        self.summary = summary
        self.terminated = terminated


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived (:mod:`clearsight.driver` raises it): stopped like Ctrl-C."""


def _limit_worker_threads(threads: int = 1) -> None:
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
    _limit_worker_threads()
    _watch_parent(parent)


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="item", disable=not enabled, smoothing=0.1)


def check_execution(executor: str, workers: int) -> None:
    """Refuse an unknown executor or fewer than one worker (protocols call this before they
    create a run's store, so a mistyped option leaves nothing behind)."""
    if executor not in EXECUTORS:
        raise InputError(f"unknown executor {executor!r}; use one of {', '.join(EXECUTORS)}")
    if workers < 1:
        raise InputError(f"workers must be >= 1, got {workers}")


def in_process(executor: ExecutorName, workers: int) -> bool:
    """Whether :func:`execute` runs the units in the calling process (the serial executor, or a
    process pool of one), so ``run`` may hold what cannot be pickled, such as an open store."""
    return executor == "serial" or (executor == "process" and workers == 1)


def execute(
    units: Sequence[Unit],
    run: Callable[[Any], list[Record]],
    store: RunStore,
    *,
    executor: ExecutorName = "serial",
    workers: int = 1,
    desc: str = "items",
    progress: bool = True,
    ray: RayConfig | None = None,
    keep_ray: bool = False,
    on_commit: Callable[[list[Record]], None] | None = None,
) -> Summary:
    """Run ``run(unit)`` for every unit and write each unit's records as it finishes.

    ``run`` must be a module-level function (picklable) for the process and Ray executors.
    ``ray`` configures the Ray executor (default :class:`~clearsight.ray_executor.RayConfig`:
    a local instance of ``workers`` CPUs, shut down at the end unless ``keep_ray``: then the
    caller ends it with :func:`clearsight.ray_executor.shutdown_local`, as the driver does after
    a run's last stage). ``on_commit`` sees each unit's records after they are stored.
    """
    check_execution(executor, workers)
    if executor == "ray":
        from clearsight.ray_executor import RayConfig, import_ray

        import_ray()  # says how to install Ray before any work starts
        ray = ray or RayConfig()
    ok = failed = done = 0
    bar = _progress(sum(u.size for u in units), desc, progress)

    def commit(records: list[Record]) -> None:
        nonlocal ok, failed, done
        store.write_records(records)
        ok += sum(r.status == "ok" for r in records)
        failed += sum(r.status == "failed" for r in records)
        done += 1
        bar.update(len(records))
        if on_commit is not None:
            on_commit(records)

    try:
        if executor == "ray":
            from clearsight.ray_executor import run_on_ray

            assert ray is not None
            run_on_ray(units, run, commit, workers=workers, config=ray, keep_local=keep_ray)
        elif in_process(executor, workers):
            for unit in units:
                commit(run(unit))
        else:
            _run_pool(units, run, workers, commit)
    except KeyboardInterrupt as exc:
        bar.close()
        raise Interrupted(
            Summary(done, ok, failed), terminated=isinstance(exc, Terminated)
        ) from None
    bar.close()
    return Summary(done, ok, failed)


def _run_pool(
    units: Sequence[Unit],
    run: Callable[[Any], list[Record]],
    workers: int,
    commit: Callable[[list[Record]], None],
) -> None:
    """Keep ``workers`` units in flight, costliest first (``unit.cost`` where a unit states it,
    else its size), committing each as it completes."""
    ordered = sorted(units, key=lambda u: -getattr(u, "cost", u.size))
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("spawn"),
        initializer=_init_worker,
        initargs=(os.getpid(),),
    )
    pending: set[Future[list[Record]]] = set()
    queue = iter(ordered)
    try:
        for unit in queue:
            pending.add(pool.submit(run, unit))
            if len(pending) >= 2 * workers:
                break
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                commit(fut.result())
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(run, nxt))
    except BrokenProcessPool as exc:
        _stop_pool(pool)
        raise InputError(
            f"a worker process died ({exc}); if clearsight runs from your own script, put the "
            'call under `if __name__ == "__main__":` (process workers re-import the main '
            "module); otherwise see the system log (out of memory?) and rerun to resume"
        ) from None
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and stop the workers now (a unit in flight is lost; its
    items stay pending for the rerun)."""
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
