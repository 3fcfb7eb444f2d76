"""Executors: run independent work units, serially, in a process pool or on Ray, with one writer.

Workers return records; only the main process writes them, one transaction per finished unit,
so a run killed at any moment loses at most the units in flight and a rerun resumes from the
store. An item is the unit of failure: a unit whose ``run`` raises has its items recorded as
failed with the reason (:func:`~clearsight.execute.unit.failed_records`), and a record the store
cannot encode (raw output that is not JSON, text that is not valid Unicode) is stored as its
item's failed record with the reason (:func:`write_or_fail`); either way the run goes on and a
rerun retries those items. Ctrl-C (and SIGTERM, which :mod:`clearsight.driver` turns into the
same stop) ends cleanly: the pool's workers are stopped, what finished is already committed,
and :class:`Interrupted` tells the caller how far the run got. Pool workers also watch their parent
and exit within a second when it dies without a word (``kill -9``).

The process pool lives in :mod:`clearsight.execute.pool`; the Ray executor
(:mod:`clearsight.execute.on_ray`) takes its settings (cluster address, replicas,
CPUs and GPUs per replica) from the ``ray`` argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from clearsight.execute.pool import run_pool
from clearsight.execute.progress import UnitProgress, reporting_to
from clearsight.execute.unit import Findings, Heard, Unit, failed_records
from clearsight.store import Record, RunStore
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.execute.on_ray import RayConfig

ExecutorName = Literal["serial", "process", "ray"]
EXECUTORS: tuple[str, ...] = ("serial", "process", "ray")


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


def _progress(total: int, desc: str, enabled: bool) -> Any:
    """The stage's bar (:func:`clearsight.execute.bar.stage_bar`)."""
    from clearsight.execute.bar import stage_bar

    return stage_bar(total, desc, enabled)


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
    threads: int = 1,
    findings: Findings[Any] | None = None,
) -> Summary:
    """Run ``run(unit)`` for every unit and write each unit's records as it finishes.

    ``run`` must be a module-level function (picklable) for the process and Ray executors.
    ``ray`` configures the Ray executor (default :class:`~clearsight.execute.on_ray.RayConfig`:
    a local instance of ``workers`` CPUs, shut down at the end unless ``keep_ray``: then the
    caller ends it with :func:`clearsight.execute.on_ray.shutdown_local`, as the driver does after
    a run's last stage). ``on_commit`` sees each unit's records after they are stored.
    ``threads``: the CPU threads of each pool worker (:mod:`clearsight.execute.threads`; the
    caller sets its own process's). The bar counts a unit's items as its backend answers them
    and shows what it is doing (:mod:`clearsight.execute.progress`; every executor), not only
    once it is stored. ``findings`` carries what the process that ran each unit learned to this
    one (every executor).
    """
    check_execution(executor, workers)
    ray = _ray_config(ray) if executor == "ray" else ray
    bar = _progress(sum(u.size for u in units), desc, progress)
    tally = _Tally(store, bar, on_commit, findings)
    try:
        if executor == "ray":
            from clearsight.execute.on_ray import run_on_ray

            assert ray is not None
            run_on_ray(units, run, tally, workers=workers, config=ray, keep_local=keep_ray)
        elif in_process(executor, workers):
            _run_here(units, run, tally)
        else:
            run_pool(units, run, workers, tally, threads=threads)
    except KeyboardInterrupt as exc:
        tally.bar.close()
        raise Interrupted(tally.summary(), terminated=isinstance(exc, Terminated)) from None
    tally.bar.close()
    return tally.summary()


def _ray_config(ray: RayConfig | None) -> RayConfig:
    """The Ray executor's configuration (default: a local instance), once Ray is known to be
    importable: it says how to install Ray before any work starts."""
    from clearsight.execute.on_ray import RayConfig, import_ray

    import_ray()
    return ray or RayConfig()


def _run_here(units: Sequence[Unit], run: Callable[[Any], list[Record]], tally: _Tally) -> None:
    """Run the units one by one in this process, each one's progress and notes on the bar; a
    unit that raises has its items recorded as failed with the reason, and the run goes on;
    after each unit, the tally's ``findings`` read what this process learned."""
    for unit in units:
        with reporting_to(partial(tally.partial, unit), partial(tally.note, unit)):
            try:
                records = run(unit)
            except Exception as exc:
                records = failed_records(unit, exc)
        tally.commit(records, unit, tally.findings.read() if tally.findings else None)


@dataclass
class _Tally:
    """Each finished unit's records stored (:func:`write_or_fail`) and counted, the progress
    bar moved (by the units in flight's partial progress too) with the latest unit's note
    beside it, ``on_commit`` told; ``findings`` carry what the processes that ran them learned
    (:class:`~clearsight.execute.unit.Heard`)."""

    store: RunStore
    bar: Any
    on_commit: Callable[[list[Record]], None] | None
    findings: Findings[Any] | None = None
    ok: int = 0
    failed: int = 0
    done: int = 0
    in_flight: dict[int, UnitProgress] = field(default_factory=dict)
    committed: set[int] = field(default_factory=set)
    noted: int | None = None  # the unit whose note the bar shows

    def partial(self, unit: Unit, share: float) -> None:
        """``share`` of ``unit`` is done (a report that comes after its commit is dropped)."""
        if id(unit) not in self.committed:
            shown = self.in_flight.setdefault(id(unit), UnitProgress(self.bar.update, unit.size))
            shown(share)

    def note(self, unit: Unit, text: str) -> None:
        """``unit`` says what it is doing: shown beside the bar at once (a turn that moves the
        bar by less than its step still shows), until another unit says something or it is
        stored."""
        if id(unit) not in self.committed:
            self.noted = id(unit)
            self.bar.set_postfix_str(text, refresh=True)

    def commit(self, records: list[Record], unit: Unit, found: object = None) -> None:
        """Store one unit's records and count them (on the bar: instead of its partial share);
        hand what its process learned (``found``) to the ``findings``."""
        records = write_or_fail(self.store, records)
        self.ok += sum(r.status == "ok" for r in records)
        self.failed += sum(r.status == "failed" for r in records)
        self.done += 1
        self.committed.add(id(unit))
        shown = self.in_flight.pop(id(unit), None)
        if shown is not None:
            shown.settle(len(records))
        else:
            self.bar.update(len(records))
        if self.noted == id(unit):
            self.noted = None
            self.bar.set_postfix_str("", refresh=False)
        if self.on_commit is not None:
            self.on_commit(records)
        if self.findings is not None:
            self.findings.after_unit(found)

    def summary(self) -> Summary:
        """What was done so far."""
        return Summary(self.done, self.ok, self.failed)


def write_or_fail(store: RunStore, records: Sequence[Record]) -> list[Record]:
    """Store ``records`` in one transaction and return what was stored: where one cannot be
    stored (its raw output or read-outs are not JSON, or hold text that is not valid Unicode),
    each record is written alone and the ones the store refuses are stored as their items'
    failed records with the reason instead. Anything else the store raises (a key that is not
    an item, a database error) propagates."""
    try:
        store.write_records(records)
        return list(records)
    except ValueError:  # the store's InputError, or UnicodeEncodeError from SQLite
        pass
    stored = []
    for record in records:
        try:
            store.write_records([record])
        except ValueError as exc:
            why = f"the record could not be stored: {type(exc).__name__}: {exc}"
            record = Record.failed(record.key, why, record.elapsed_s)
            store.write_records([record])
        stored.append(record)
    return stored


__all__ = [
    "EXECUTORS",
    "ExecutorName",
    "Findings",
    "Heard",
    "Interrupted",
    "Summary",
    "Terminated",
    "Unit",
    "check_execution",
    "execute",
    "in_process",
    "write_or_fail",
]
