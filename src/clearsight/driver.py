"""One run driver for every protocol: check, lock, plan, skip what is done, execute, summarise.

A protocol (the sweep, trajectory grounding, the probe) is a value, :class:`Protocol`: its name,
the models it needs with the capabilities it needs of each, the manifest entries it adds, and
its *stages* — each a set of items (typed :class:`~clearsight.specs.Spec` values, keyed by their
content), how pending items group into work units, and
the function that runs a unit into records. :func:`run` does the rest the same way for all:

1. refuse bad execution options, then load (or probe) every model the configuration names and
   stop, before anything is created, when one cannot load or lacks a needed capability;
2. take an exclusive lock on the run directory (:func:`run_lock`): a second writer is refused
   with the holder's pid; the lock dies with its process, so a dead run's lock is taken over;
3. open the store (``fresh`` deletes it under the lock), record the manifest (a changed
   configuration is refused unless ``allow_mismatch``), then for each stage add its items, keep
   the pending ones and execute them with the chosen executor;
4. return a :class:`RunSummary` whose :attr:`~RunSummary.exit_code` tells the truth: 0 only
   when every item executed succeeded, :data:`EXIT_FAILED_ITEMS` when some failed. A failure
   of the disk or the store stops the run with :class:`~clearsight.faults.RunFault`
   (:data:`EXIT_FAULT` on the command line).

SIGTERM is turned into the same clean stop as Ctrl-C while a run executes: workers are stopped,
what finished is committed, and :class:`~clearsight.execute.Interrupted` says how far it got.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar, Unpack

from clearsight.execute import (
    ExecutorName,
    Findings,
    Interrupted,
    Summary,
    Terminated,
    Unit,
    check_execution,
    execute,
    in_process,
    write_or_fail,
)
from clearsight.execute.threads import run_threads, use_threads
from clearsight.faults import EXIT_FAULT, os_exit_code, os_fault
from clearsight.models import attention
from clearsight.models.base import Capabilities
from clearsight.models.registry import BatchSizes, batch_sizes_found
from clearsight.specs import Spec
from clearsight.store import DB_NAME, Items, Record, RunStore, as_items, collector_paused
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.execute.on_ray import RayConfig

__all__ = [
    "EXIT_FAILED_ITEMS",
    "EXIT_FAULT",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "Execution",
    "ModelNeed",
    "Protocol",
    "RunLocked",
    "RunSummary",
    "Stage",
    "check_models",
    "run",
    "run_lock",
]

#: Exit code of a run command when its input was bad (nothing was run or written).
EXIT_INPUT = 2
#: Exit code of a run command that finished with at least one failed item.
EXIT_FAILED_ITEMS = 3
#: Exit code after Ctrl-C (128 + SIGINT), and after SIGTERM (128 + SIGTERM).
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

LOCK_NAME = ".clearsight.lock"

C = TypeVar("C")
P = TypeVar("P")
S = TypeVar("S", bound=Spec)


@dataclass(frozen=True)
class Execution:
    """How a run executes: one explicit value, passed down (no global settings)."""

    executor: ExecutorName = "serial"
    """``serial`` (this process), ``process`` (a pool of ``workers``) or ``ray``."""
    workers: int = 1
    """Worker processes (Ray: CPUs of a local instance and the default replicas per model)."""
    ray: RayConfig | None = None
    """Cluster address, replicas, CPUs/GPUs per replica (``--executor ray`` only)."""
    progress: bool = True
    """Show a progress bar per stage, and say what the run does before its first bar."""
    threads: int | None = None
    """CPU threads of each of the run's processes (None: 1, or ``OMP_NUM_THREADS`` where set;
    :mod:`clearsight.execute.threads`)."""
    on_commit: Callable[[list[Record]], None] | None = None
    """Hears each unit's records in the writer's process once they are stored (an experiment
    tracker's buffer: :mod:`clearsight.track`)."""
    keep: Callable[[RunStore, str], frozenset[str]] | None = None
    """The keys of a stage's items (the run's store, once they are stored, and their kind)
    whose shown image its units hand back on their records (an experiment tracker's sample:
    :func:`clearsight.execute.kept.keeping`); None or none: the units keep nothing."""


@dataclass(frozen=True)
class ModelNeed:
    """A model a configuration names, the options it is loaded with, and what it must do."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    needs: Capabilities = field(default_factory=lambda: Capabilities(generate=False))
    purpose: str = "this run"


@dataclass(frozen=True)
class Stage(Generic[S]):
    """One kind of item of a run and how it executes.

    ``items``: typed specs of kind ``kind`` (stored as their JSON form under their key), as
    :class:`~clearsight.store.Items` (a grid of them) or any sequence (the driver wraps it
    once: :func:`~clearsight.store.as_items`). ``units``: groups the pending items (in
    ``items`` order, as :class:`~clearsight.store.Items`) into work units. ``run_unit``: a
    module-level (picklable) function from a unit to its records. ``stream``: optionally, the
    same in the writer's own process with a callback that stores partial records as they happen
    (the probe saves every turn).
    """

    kind: str
    items: Sequence[S]
    units: Callable[[Sequence[S]], Sequence[Unit]]
    run_unit: Callable[[Any], list[Record]]
    stream: Callable[[Any, Callable[[list[Record]], None]], list[Record]] | None = None


#: ``Protocol.adds_to`` of a protocol that adds to a run of any protocol.
ANY_RUN: tuple[str, ...] = ("*",)


@dataclass(frozen=True)
class Protocol(Generic[C, P]):
    """A protocol as a value: what :func:`run` needs to run it (see the module docstring).

    ``plan(config)`` is computed once, before anything is created (a bad scene or instance
    file stops the run there). ``manifest(config, plan)`` gives the run's manifest.
    ``stages(config, plan, store)`` yields the stages in order; it may read the store between
    them (grounding plans its elicitations from the trajectories its first stage wrote).

    A protocol may add records to an existing run: ``adds_to`` names the protocols whose runs
    it adds to, keeping their manifest (the probe's post-hoc analyses add to a probe run; build
    stage 1 to a probe run or to an earlier build); :data:`ANY_RUN` adds to a run of any
    protocol (``clearsight verify``'s re-asks: its plan asks the run's own protocol, through
    the registry, whether it can be re-asked). A directory without a run begins one with
    ``manifest``; a protocol without a manifest (None) only adds, so its run must exist.

    ``fingerprint(config)``, where given, is JSON data that determines the plan (the config
    and the protocol's plan version): a rerun whose fingerprint — with the protocol's name and
    clearsight's version — matches the one a finished run recorded, and whose store holds
    every item it planned with an ``ok`` record, returns at once without planning or loading
    a model; a partly finished one plans again (the typed items make its units) but does not
    store the stages whose items are all stored already. Without it every rerun plans.
    """

    name: str
    models: Callable[[C], Sequence[ModelNeed]]
    plan: Callable[[C], P]
    manifest: Callable[[C, P], Mapping[str, Any]] | None
    stages: Callable[[C, P, RunStore], Iterator[Stage[Any]]]
    adds_to: tuple[str, ...] = ()
    fingerprint: Callable[[C], Any] | None = None

    def __post_init__(self) -> None:
        """A protocol begins runs of its own (a manifest), adds to others' or both."""
        if self.manifest is None and not self.adds_to:
            raise ValueError(f"protocol {self.name!r}: give a manifest, adds_to or both")


@dataclass(frozen=True)
class RunSummary:
    """What a run did: one :class:`~clearsight.execute.Summary` per stage, in order, and the
    most common failure reasons of the items that failed."""

    run_dir: Path
    stages: dict[str, Summary]
    reasons: tuple[tuple[str, int], ...] = ()

    @property
    def units(self) -> int:
        """Work units executed."""
        return sum(s.units for s in self.stages.values())

    @property
    def ok(self) -> int:
        """Records written with status ok."""
        return sum(s.ok for s in self.stages.values())

    @property
    def failed(self) -> int:
        """Records written with status failed."""
        return sum(s.failed for s in self.stages.values())

    @property
    def exit_code(self) -> int:
        """0 when no item failed, else :data:`EXIT_FAILED_ITEMS`."""
        return EXIT_FAILED_ITEMS if self.failed else 0

    def describe(self) -> str:
        """One line (and the top reasons of failed items, one per line)."""
        line = f"{self.ok} records written, {self.failed} failed, in {self.run_dir}"
        shown = [f"  {n} x {reason}" for reason, n in self.reasons[:5]]
        return "\n".join([line, *(["most common reasons:", *shown] if shown else [])])


class RunLocked(InputError):  # noqa: N818 - reads as what happened: `except RunLocked`
    """Another live process holds the run directory's lock."""


# --------------------------------------------------------------------------------------------
# Before anything is created: models


def check_models(
    needs: Sequence[ModelNeed], execution: Execution, say: Callable[[str], None] | None = None
) -> dict[str, dict[str, Any]]:
    """Load every named model, check its capabilities and run its ``preflight`` where it has
    one (a server's backend asks the server: reachable, model served, log-probabilities);
    InputError on the first that fails (first of all on options that hold a credential:
    :func:`refuse_credentials`).

    With the serial executor (or a pool of one) the models load in this process and stay in its
    cache to serve the run. With a process pool they load in one spawned process that exits
    after the check, so the driver never holds a model (nor a GPU context) its workers load
    again. On Ray only the names are checked here: a replica may need a GPU this process lacks.

    Returns what each loaded model says of itself (model name -> its backend's ``info``: for
    ``hf:`` the device, dtype, architecture and revision), for the run's manifest; empty on Ray
    and for backends that say nothing. ``say`` hears which models load (a minute can pass).
    """
    from clearsight.credentials import refuse_credentials
    from clearsight.models import split_model_spec

    unique: dict[tuple[str, str], ModelNeed] = {}
    for need in needs:
        refuse_credentials(need.options, f"the options of {need.purpose}", need.name)
        split_model_spec(need.name)
        unique.setdefault((need.name, repr(sorted(need.options.items()))), need)
    if execution.executor == "ray" or not unique:
        return {}
    if say is not None:
        say(f"loading {', '.join(dict.fromkeys(n.name for n in unique.values()))}")
    if in_process(execution.executor, execution.workers):
        problem, loaded = _check_loaded(list(unique.values()), keep=True)
    else:
        problem, loaded = _check_in_a_process(list(unique.values()))
    if problem is not None:
        raise InputError(problem)
    return loaded


def _check_in_a_process(needs: Sequence[ModelNeed]) -> _Checked:
    """:func:`_check_loaded` in one spawned process that exits afterwards (with its models)."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    from multiprocessing import get_context

    from clearsight.execute.pool import worker_died

    try:
        with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as checker:
            return checker.submit(_check_loaded, needs, False).result()
    except BrokenProcessPool as exc:
        raise InputError(worker_died(exc)) from None


#: A check's first problem (one line, or None) and the loaded models' ``info`` by name.
_Checked = tuple[str | None, dict[str, dict[str, Any]]]


def _check_loaded(needs: Sequence[ModelNeed], keep: bool) -> _Checked:
    """Load each model (kept in this process's cache with ``keep``) and check what it can do:
    the first problem as one line, or None; and what each loaded backend says of itself."""
    from clearsight.models import load_backend, require, shared_backend

    loaded: dict[str, dict[str, Any]] = {}
    for need in needs:
        try:
            backend = (shared_backend if keep else load_backend)(need.name, need.options)
            require(backend, need.needs, need.purpose)
            preflight = getattr(backend, "preflight", None)
            if preflight is not None:  # a backend that talks to a server asks it now
                preflight(need.needs)
            info = getattr(backend, "info", None)
            if isinstance(info, Mapping):
                loaded.setdefault(need.name, dict(info))
        except InputError as exc:
            problem = str(exc)
            if not problem.startswith(f"model {need.name!r}"):
                problem = f"model {need.name!r} cannot be used: {problem}"
        except Exception as exc:  # a backend's own loader: name it, do not start the run
            problem = f"model {need.name!r} could not be loaded: {type(exc).__name__}: {exc}"
        else:
            continue
        return problem, loaded
    return None, loaded


# --------------------------------------------------------------------------------------------
# The run directory's lock


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``run_dir/.clearsight.lock`` for the block.

    The lock file names the holder's pid. The kernel drops the lock when its process dies, so a
    lock left by a killed run is simply taken over; a live holder makes this raise
    :class:`RunLocked` naming its pid. Readers (reports, the web UI) take no lock. The lock
    file is opened without following a symbolic link and must be a regular file of one name
    (:func:`_open_lock`): the pid is never written through it into another file. A ``run_dir``
    that is a file, or lies under one (``--out FILE/run``), is bad input; one that cannot be
    created or locked (a read-only file system) a :class:`~clearsight.faults.RunFault`.
    """
    import fcntl

    if run_dir.exists() and not run_dir.is_dir():
        raise InputError(
            f"{run_dir} is a file, not a run directory: give a new directory or a run's"
        )
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fault = os_fault(exc, "cannot create the run directory")
        if os_exit_code(exc) == 2:  # a file on the way (``--out FILE/run``): bad input
            raise InputError(str(fault)) from exc
        raise fault from exc
    fd = _open_lock(run_dir / LOCK_NAME)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            raise RunLocked(
                f"the run {run_dir} is being written by another clearsight process "
                f"(pid {holder}); wait for it to finish or choose another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _open_lock(path: Path) -> int:
    """A read-write descriptor of the lock file ``path``, created if missing. A symbolic link
    is not followed (``O_NOFOLLOW``), a FIFO does not block the open (``O_NONBLOCK``), and
    anything but a regular file with one name (a link, a directory, a device, a file with
    hard links elsewhere) is refused with one line before a byte is written."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    refused = (
        f"the run's lock file {path} is not a regular file of its own ({{}}); clearsight "
        "creates it: remove it and rerun"
    )
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        why = {errno.ELOOP: "a symbolic link", errno.EISDIR: "a directory"}
        if exc.errno in why or exc.errno == errno.ENXIO:
            raise InputError(refused.format(why.get(exc.errno or 0, "a socket"))) from None
        raise os_fault(exc, "cannot open the run's lock file") from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        kind = "a hard link to another file" if stat.S_ISREG(st.st_mode) else "a special file"
        raise InputError(refused.format(kind))
    return fd


# --------------------------------------------------------------------------------------------
# SIGTERM as a clean stop


@contextmanager
def _sigterm_stops_cleanly() -> Iterator[None]:
    """Raise :class:`Terminated` in the main thread on SIGTERM for the block (main thread only;
    elsewhere the block runs with the default handler)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# --------------------------------------------------------------------------------------------
# The driver


def run(
    protocol: Protocol[C, P],
    config: C,
    run_dir: Path | str,
    execution: Execution | None = None,
    *,
    fresh: bool = False,
    allow_mismatch: bool = False,
) -> RunSummary:
    """Run ``protocol`` with ``config`` into ``run_dir`` (resuming what is there).

    Raises InputError (nothing created) for bad options or an unusable model,
    :class:`RunLocked` when another process writes the run,
    :class:`~clearsight.execute.Interrupted` after Ctrl-C or SIGTERM (what finished is kept),
    and :class:`~clearsight.faults.RunFault` when the disk or the store fails (full,
    read-only, corrupted, the run directory removed mid-run; what was committed is kept).
    """
    execution = execution or Execution()
    threads = _ready(execution)
    run_dir = Path(run_dir)
    say = _teller(execution.progress)
    # the lock sits beside the database (a run may be named by its run.sqlite file)
    lock_dir = run_dir.parent if run_dir.name == DB_NAME and not run_dir.is_dir() else run_dir
    fingerprint = _fingerprint(protocol, config)
    done = None if fresh else _finished_before(lock_dir, fingerprint)
    if done is not None:
        return RunSummary(run_dir, done)
    with attention.by_family(_attention_rule(lock_dir, fresh)):
        loaded = check_models(protocol.models(config), execution, say)
        say(f"planning the {protocol.name} run")
        with collector_paused():  # a plan's items all stay alive (store.collector_paused)
            plan = protocol.plan(config)
        if protocol.manifest is None:
            _check_addable(protocol, lock_dir, fresh)
        with _opened(lock_dir, run_dir, fresh, execution) as store:
            began = _begin(protocol, config, plan, store, allow_mismatch, loaded, threads)
            planned = _Planned(store, fingerprint, say)
            sizes = _ChosenSizes(store, _sized_models(protocol, config, execution, loaded, began))
            with _sigterm_stops_cleanly():
                stages, reasons = _execute_stages(
                    protocol.stages(config, plan, store),
                    store,
                    replace(execution, threads=threads),
                    planned,
                    sizes,
                )
            planned.complete()
    return RunSummary(run_dir, stages, tuple(reasons.most_common()))


def _attention_rule(lock_dir: Path, fresh: bool) -> bool:
    """Whether the run in ``lock_dir`` gives its ``hf`` models their family's attention
    (:func:`clearsight.models.attention.run_rule`): a new run does, a run stored before that
    rule resumes with the options it stored (eager)."""
    manifest = None
    if not fresh and (lock_dir / DB_NAME).is_file():
        with RunStore.open(lock_dir, read_only=True) as store:
            manifest = dict(store.manifest()) or None
    return attention.run_rule(manifest)


@contextmanager
def _opened(lock_dir: Path, run_dir: Path, fresh: bool, execution: Execution) -> Iterator[RunStore]:
    """The run's store, opened under the run's lock (and, on Ray, inside its block)."""
    with run_lock(lock_dir), RunStore.open(run_dir, fresh=fresh) as store, _ray_block(execution):
        yield store


def _execute_stages(
    stages: Iterable[Stage[Any]],
    store: RunStore,
    execution: Execution,
    planned: _Planned,
    sizes: _ChosenSizes,
) -> tuple[dict[str, Summary], Counter[str]]:
    """Execute a run's stages in order (a protocol may plan a stage from the records of the
    ones before, so they are drawn one at a time): each stage's summary by its item kind, and
    the reasons of the items that failed, counted; the batch sizes chosen go to ``sizes``. An
    interruption is raised again with the total of what finished, so the caller can say it."""
    done: dict[str, Summary] = {}
    reasons: Counter[str] = Counter()
    try:
        for stage in stages:
            done[stage.kind] = _execute_stage(store, stage, execution, reasons, planned, sizes)
    except Interrupted as exc:
        raise Interrupted(_total(done, exc.summary), terminated=exc.terminated) from None
    except KeyboardInterrupt as exc:  # between two stages' executions
        terminated = isinstance(exc, Terminated)
        raise Interrupted(_total(done), terminated=terminated) from None
    return done, reasons


class RunOptions(TypedDict, total=False):
    """The keyword arguments every protocol's entry point (``run_sweep``, ``run_grounding``,
    ``run_probe``, ``run_build_bench``) takes: :class:`Execution`'s fields and :func:`run`'s."""

    fresh: bool
    """Discard the run directory's records and start over (default False)."""
    allow_mismatch: bool
    """Keep records made with another configuration and go on (default False)."""
    executor: ExecutorName
    """``serial`` (default), ``process`` or ``ray``."""
    workers: int
    """Worker processes (default 1)."""
    progress: bool
    """Show a progress bar per stage (default True)."""
    threads: int | None
    """CPU threads per process (default: 1, or ``OMP_NUM_THREADS`` where set)."""
    ray: RayConfig | None
    """Cluster settings (``executor="ray"`` only)."""
    on_commit: Callable[[list[Record]], None] | None
    """Hears each unit's records once they are stored (default: nobody)."""
    keep: Callable[[RunStore, str], frozenset[str]] | None
    """The keys of a stage's items whose shown image its units keep (default: none)."""


def run_with(
    protocol: Protocol[C, P], config: C, run_dir: Path | str, **options: Unpack[RunOptions]
) -> RunSummary:
    """:func:`run` with the entry points' keyword arguments (:class:`RunOptions`): what each
    protocol's ``run_<protocol>(config, run_dir, **options)`` does."""
    execution = Execution(
        options.get("executor", "serial"),
        options.get("workers", 1),
        options.get("ray"),
        options.get("progress", True),
        options.get("threads"),
        options.get("on_commit"),
        options.get("keep"),
    )
    return run(
        protocol,
        config,
        run_dir,
        execution,
        fresh=options.get("fresh", False),
        allow_mismatch=options.get("allow_mismatch", False),
    )


def _fingerprint(protocol: Protocol[C, Any], config: C) -> str | None:
    """The plan fingerprint of ``config`` (None: the protocol plans on every run)."""
    if protocol.fingerprint is None:
        return None
    from clearsight import __version__
    from clearsight.seeding import content_hash

    return content_hash([protocol.name, __version__, protocol.fingerprint(config)])


def _finished_before(lock_dir: Path, fingerprint: str | None) -> dict[str, Summary] | None:
    """:func:`_finished` for the run whose database and lock sit in ``lock_dir``, asked under
    the run's lock (a live writer is refused here too); None without a fingerprint or a
    database (the run must be planned)."""
    if fingerprint is None or not (lock_dir / DB_NAME).is_file():
        return None
    with run_lock(lock_dir):
        return _finished(lock_dir, fingerprint)


def _finished(run_dir: Path, fingerprint: str) -> dict[str, Summary] | None:
    """Zero-work summaries of the stages of a finished run planned with ``fingerprint`` (every
    planned stage's items stored, each with an ok record), or None when the run must be
    planned. Items of kinds no stage plans (``clearsight verify``'s re-asks) do not count: where
    the run holds more items than its plan, the check goes kind by kind (a slower query)."""
    try:
        with RunStore.open(run_dir, read_only=True) as store:
            entry = store.manifest().get("plan")
            if not isinstance(entry, dict) or entry.get("fingerprint") != fingerprint:
                return None
            kinds = entry.get("stages", {})
            counts = store.counts()
            stored = counts["items"] == sum(kinds.values()) and not counts["pending"]
            if not stored and counts["items"] > sum(kinds.values()):
                per_kind = store.items_and_ok_per_kind()
                stored = all(per_kind.get(k, (0, 0)) == (n, n) for k, n in kinds.items())
    except InputError:  # an old schema (the writer migrates it) or not a run: plan as usual
        return None
    if not entry.get("complete") or not stored:
        return None
    return {kind: Summary(0, 0, 0) for kind in kinds}


class _Planned:
    """The manifest's ``plan`` entry as a run stores its stages: the fingerprint, the items
    stored per kind, and whether every stage was planned (see :class:`Protocol`)."""

    def __init__(
        self, store: RunStore, fingerprint: str | None, say: Callable[[str], None]
    ) -> None:
        self.store = store
        self.fingerprint = fingerprint
        self.say = say
        entry = store.manifest().get("plan")
        same = isinstance(entry, dict) and entry.get("fingerprint") == fingerprint
        self.before: dict[str, int] = dict(entry["stages"]) if same and entry else {}
        self.stages: dict[str, int] = {}

    def stored(self, kind: str, n_items: int) -> bool:
        """Whether the ``n_items`` items of stage ``kind`` are stored already under this
        fingerprint (and so need not be encoded again)."""
        return (
            self.fingerprint is not None
            and self.before.get(kind) == n_items
            and self.store.count_items(kind) == n_items
        )

    def add(self, kind: str, n_items: int) -> None:
        """Stage ``kind``'s items are stored."""
        self.stages[kind] = n_items
        self._save(complete=False)

    def complete(self) -> None:
        """Every stage was planned and stored."""
        self._save(complete=True)

    def _save(self, complete: bool) -> None:
        if self.fingerprint is not None:
            entry = {"fingerprint": self.fingerprint, "stages": self.stages, "complete": complete}
            self.store.record_plan(entry)


class _ChosenSizes:
    """The batch sizes ``batch_size: auto`` chose, written into the manifest's
    ``loaded_models`` (each model's ``batch_sizes``: image size -> rows and how they were
    found) as soon as a finished unit brings one not recorded yet, so a run's manifest says
    what batches it ran with after its first batch. Only the models this start loaded are
    written (``loaded``, their specs: a run that adds to another keeps that run's entries);
    the first choice per model and image size is kept (a pool's workers each choose)."""

    def __init__(self, store: RunStore, loaded: Iterable[str]) -> None:
        self.store = store
        self.models = set(loaded)
        self.recorded: set[tuple[str, str]] = set()

    def record(self, found: BatchSizes) -> None:
        """Write the choices in ``found`` (model spec -> image size -> choice) not yet
        recorded (one manifest write for any number of them; none when all are)."""
        new = {
            (model, size)
            for model, sizes in found.items()
            if model in self.models
            for size in sizes
        } - self.recorded
        if not new:
            return
        loaded = dict(self.store.manifest().get("loaded_models") or {})
        for model, size in sorted(new):
            entry = dict(loaded.get(model) or {})
            chosen = dict(entry.get("batch_sizes") or {})
            chosen.setdefault(size, found[model][size])
            loaded[model] = {**entry, "batch_sizes": chosen}
        self.store.update_entry("loaded_models", loaded)
        self.recorded |= new


def _sized_models(
    protocol: Protocol[C, Any],
    config: C,
    execution: Execution,
    loaded: Mapping[str, object],
    began: bool,
) -> Iterable[str]:
    """The models whose batch sizes this start writes to the manifest: none where it did not
    write the manifest (it adds to another run), the models it loaded, or on Ray, where the
    replicas load them, every model the configuration names."""
    if not began:
        return ()
    if execution.executor == "ray":
        return [need.name for need in protocol.models(config)]
    return loaded


def _check_addable(protocol: Protocol[Any, Any], run_dir: Path, fresh: bool) -> None:
    """A protocol that only adds to an existing run needs that run (and never deletes it)."""
    if fresh:
        raise InputError(f"{protocol.name} adds to an existing run: fresh would delete it")
    if not (run_dir / DB_NAME).is_file():
        runs = "" if protocol.adds_to == ANY_RUN else " or ".join(protocol.adds_to) + " "
        raise InputError(f"{run_dir} holds no {runs}run for {protocol.name} to add to")


def _begin(
    protocol: Protocol[C, P],
    config: C,
    plan: P,
    store: RunStore,
    allow_mismatch: bool,
    loaded: Mapping[str, Mapping[str, Any]],
    threads: int,
) -> bool:
    """Begin (or resume) the protocol's own run, or check the run it adds to: whether this
    start wrote the manifest. ``loaded``: what the models said of themselves when the driver
    loaded them (:func:`check_models`), kept as the manifest's ``loaded_models``, and
    ``threads``, the CPU threads of each of its processes, as ``cpu_threads`` (both the latest
    start's: a resume may run on another machine)."""
    made_by = store.manifest().get("protocol")
    if protocol.manifest is None or (made_by is not None and made_by in protocol.adds_to):
        if protocol.adds_to != ANY_RUN:
            store.expect_protocol(*protocol.adds_to)
        return False
    from clearsight.models.resolve import applied_presets

    manifest = dict(protocol.manifest(config, plan))
    presets = applied_presets((need.name, need.options) for need in protocol.models(config))
    if presets:  # the preset each model ran with, and the options that came of it
        manifest["presets"] = presets
    if loaded:
        manifest["loaded_models"] = {name: dict(info) for name, info in loaded.items()}
    manifest["cpu_threads"] = threads
    if attention.filling():  # its hf models' options name their family's attention
        manifest[attention.MANIFEST_KEY] = attention.BY_FAMILY
    store.begin_run(manifest, allow_mismatch=allow_mismatch)
    return True


def _total(stages: Mapping[str, Summary], last: Summary | None = None) -> Summary:
    """The finished stages' summaries added up (and the interrupted one's, ``last``)."""
    parts = [*stages.values(), *([last] if last is not None else [])]
    return Summary(
        sum(p.units for p in parts), sum(p.ok for p in parts), sum(p.failed for p in parts)
    )


def _execute_stage(
    store: RunStore,
    stage: Stage[Any],
    execution: Execution,
    reasons: Counter[str],
    planned: _Planned,
    sizes: _ChosenSizes,
) -> Summary:
    """Store the stage's items (unless stored under the same fingerprint), run its pending
    ones, count the reasons of its failures, record the batch sizes chosen (``sizes``)."""
    items = as_items(stage.items)
    wrong = items.kinds() - {stage.kind}
    if wrong:
        raise TypeError(f"stage {stage.kind!r} holds items of kind {sorted(wrong)}")
    if not planned.stored(stage.kind, len(items)):
        planned.say(f"storing {len(items):,} {stage.kind} items")
        store.add_items(items)
    planned.add(stage.kind, len(items))
    units = stage.units(_pending(store, stage.kind, items))

    def counted(records: list[Record]) -> None:
        reasons.update(_reason(r.error) for r in records if r.status == "failed")
        if execution.on_commit is not None:
            execution.on_commit(records)

    kept = frozenset() if execution.keep is None else execution.keep(store, stage.kind)
    return execute(
        units,
        _unit_runner(stage, execution, store, kept),
        store,
        executor=execution.executor,
        workers=execution.workers,
        desc=stage.kind,
        progress=execution.progress,
        ray=execution.ray,
        keep_ray=True,  # one local instance for every stage; _ray_block ends it with the run
        on_commit=counted,
        threads=execution.threads or 1,
        findings=Findings(batch_sizes_found, sizes.record),
    )


def _unit_runner(
    stage: Stage[Any], execution: Execution, store: RunStore, kept: frozenset[str]
) -> Callable[[Any], list[Record]]:
    """How the stage's units run: its ``run_unit`` (inside :func:`~clearsight.execute.kept.
    keeping` the ``kept`` keys, where there are any), or, where the stage streams and its
    units run in this process, its ``stream`` writing each part of a unit as it comes."""
    stream = stage.stream
    if stream is None or not in_process(execution.executor, execution.workers):
        if not kept:
            return stage.run_unit
        from clearsight.execute.kept import keeping

        return partial(keeping, stage.run_unit, kept)

    def write(records: list[Record]) -> None:
        write_or_fail(store, records)

    def run_unit(unit: Any) -> list[Record]:
        return stream(unit, write)

    return run_unit


def _teller(enabled: bool) -> Callable[[str], None]:
    """What the run says before its first progress bar (loading, planning, storing), one line
    on stderr each with the seconds since it began, where stderr is a terminal (a person
    waiting; a log or a pipe keeps its one error line); nothing when ``enabled`` is false."""
    import sys
    import time

    began = time.perf_counter()

    def say(what: str) -> None:
        if enabled and sys.stderr.isatty():
            print(f"[{time.perf_counter() - began:5.1f} s] {what}", file=sys.stderr, flush=True)

    return say


def _pending(store: RunStore, kind: str, items: Items[S]) -> Items[S]:
    """The stage's items without an ``ok`` record, in order: all of them, unasked, while no
    item of its ``kind`` has one (a new run's 1.8 million keys need no look-up)."""
    if not store.count_records(status="ok", kind=kind):
        return items
    return items.only(set(store.pending_keys(items.keys())))


def _reason(error: str | None) -> str:
    """A failure's reason for the summary: its first line, at most 160 characters."""
    lines = (error or "").strip().splitlines()
    first = lines[0] if lines else "(no message)"
    return first if len(first) <= 160 else first[:157] + "..."


def _ready(execution: Execution) -> int:
    """Check ``execution`` and that this process is no worker re-importing a script, and set
    the run's threads before a model loads (torch starts its pool with them): the threads."""
    check_execution(execution.executor, execution.workers)
    _refuse_in_a_worker()
    threads = run_threads(execution.threads)
    use_threads(threads)
    return threads


def _refuse_in_a_worker() -> None:
    """A script without a ``__main__`` guard is re-imported by every spawned worker, which then
    calls :func:`run` again: refuse that with the fix instead of a pool-bootstrap traceback."""
    import multiprocessing

    if multiprocessing.parent_process() is not None and _is_spawn_main_import():
        raise InputError(
            "clearsight.run was called while a worker process imported your script: put the "
            'call under `if __name__ == "__main__":` (process workers re-import the main module)'
        )


def _is_spawn_main_import() -> bool:
    """Whether this process is importing the parent's main script as ``__mp_main__``."""
    import sys

    main = sys.modules.get("__main__")
    return main is not None and getattr(main, "__name__", "") == "__mp_main__"


@contextmanager
def _ray_block(execution: Execution) -> Iterator[None]:
    """Ray runs: a local instance started by the first stage serves the later ones and is shut
    down when the run ends (other executors: nothing)."""
    if execution.executor != "ray":
        yield
        return
    from clearsight.execute.on_ray import shutdown_local

    try:
        yield
    finally:
        shutdown_local()
