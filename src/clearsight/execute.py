"""Executors: run independent work units, serially, in a process pool or on Ray, with one writer.

Workers return records; only the main process writes them, one transaction per finished unit,
so a run killed at any moment loses at most the units in flight and a rerun resumes from the
store. Ctrl-C stops cleanly: the pool is cancelled, what finished is already committed, and
:class:`Interrupted` tells the caller how far the run got.

The Ray executor (:mod:`clearsight.ray_executor`) takes its settings (cluster address, replicas,
CPUs and GPUs per replica) from the ``ray`` argument or, so that a protocol's ``run_*`` function
need not know them, from the innermost :func:`ray_settings` block around the call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from multiprocessing import get_context
from typing import TYPE_CHECKING, Any, Literal, Protocol

from clearsight.store import Record, RunStore
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.ray_executor import RayConfig

ExecutorName = Literal["serial", "process", "ray"]
EXECUTORS: tuple[str, ...] = ("serial", "process", "ray")

_RAY_SETTINGS: ContextVar[RayConfig | None] = ContextVar("clearsight_ray_settings", default=None)


@contextmanager
def ray_settings(config: RayConfig) -> Iterator[None]:
    """Use ``config`` for every ``execute(..., executor="ray")`` inside the block (the CLI sets
    it around a protocol's ``run_*`` call, which passes only the executor's name). A local Ray
    instance started inside the block serves every execution in it (a protocol with several
    stages starts Ray once) and is shut down when the block ends."""
    token = _RAY_SETTINGS.set(config)
    try:
        yield
    finally:
        _RAY_SETTINGS.reset(token)
        if _RAY_SETTINGS.get() is None:
            from clearsight.ray_executor import shutdown_local

            shutdown_local()


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
    """Raised when Ctrl-C stopped a run; everything finished before it is committed."""

    def __init__(self, summary: Summary) -> None:
        super().__init__(f"interrupted after {summary.units} units ({summary.ok} ok records)")
        self.summary = summary


def _limit_worker_threads(threads: int = 1) -> None:
    """Each worker uses ``threads`` threads for numba and BLAS (one in a pool worker: the pool
    supplies the parallelism). Effective only before numba or the BLAS library is imported."""
    for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(threads)


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
) -> Summary:
    """Run ``run(unit)`` for every unit and write each unit's records as it finishes.

    ``run`` must be a module-level function (picklable) for the process and Ray executors.
    ``ray`` configures the Ray executor (default: the enclosing :func:`ray_settings`, else
    :class:`~clearsight.ray_executor.RayConfig`'s defaults: a local instance of ``workers`` CPUs).
    """
    check_execution(executor, workers)
    if executor == "ray":
        from clearsight.ray_executor import RayConfig, import_ray

        import_ray()  # says how to install Ray before any work starts
        ray = ray or _RAY_SETTINGS.get() or RayConfig()
    ok = failed = done = 0
    bar = _progress(sum(u.size for u in units), desc, progress)

    def commit(records: list[Record]) -> None:
        nonlocal ok, failed, done
        store.write_records(records)
        ok += sum(r.status == "ok" for r in records)
        failed += sum(r.status == "failed" for r in records)
        done += 1
        bar.update(len(records))

    try:
        if executor == "ray":
            from clearsight.ray_executor import run_on_ray

            assert ray is not None
            keep = _RAY_SETTINGS.get() is not None  # the block shuts a local Ray down
            run_on_ray(units, run, commit, workers=workers, config=ray, keep_local=keep)
        elif in_process(executor, workers):
            for unit in units:
                commit(run(unit))
        else:
            _run_pool(units, run, workers, commit)
    except KeyboardInterrupt:
        bar.close()
        raise Interrupted(Summary(done, ok, failed)) from None
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
        max_workers=workers, mp_context=get_context("spawn"), initializer=_limit_worker_threads
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
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
