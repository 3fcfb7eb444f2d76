"""Executors: run independent work units, serially or in a process pool, with one writer.

Workers return records; only the main process writes them, one transaction per finished unit,
so a run killed at any moment loses at most the units in flight and a rerun resumes from the
store. Ctrl-C stops cleanly: the pool is cancelled, what finished is already committed, and
:class:`Interrupted` tells the caller how far the run got.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any, Literal, Protocol

from clearsight.store import Record, RunStore
from clearsight.validate import InputError

ExecutorName = Literal["serial", "process"]


class Unit(Protocol):
    """Anything picklable with a size (its number of items)."""

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


def _limit_worker_threads() -> None:
    """Each pool worker uses one thread for numba and BLAS: the pool supplies the parallelism."""
    os.environ["NUMBA_NUM_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="item", disable=not enabled, smoothing=0.1)


def execute(
    units: Sequence[Unit],
    run: Callable[[Any], list[Record]],
    store: RunStore,
    *,
    executor: ExecutorName = "serial",
    workers: int = 1,
    desc: str = "items",
    progress: bool = True,
) -> Summary:
    """Run ``run(unit)`` for every unit and write each unit's records as it finishes.

    ``run`` must be a module-level function (picklable) for the process executor.
    """
    if executor not in ("serial", "process"):
        raise InputError(f"unknown executor {executor!r}; use 'serial' or 'process'")
    if workers < 1:
        raise InputError(f"workers must be >= 1, got {workers}")
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
        if executor == "serial" or workers == 1:
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
