"""The Ray executor: the same units and ``run`` function as the local executors, on a Ray cluster.

Units are grouped by the model they name (``unit.model``; a unit without one, such as an
equivalent-visibility unit, needs no model and goes to whichever replica is free). Each model
gets ``replicas`` Ray actors, one per model replica, each holding ``num_cpus`` CPUs and
``num_gpus`` GPUs (a fraction shares a GPU between replicas). An actor calls the protocol's own
``run(unit)``, so images are rendered and the model is loaded inside the actor, once per actor
process (the protocol caches its backend per process); only the unit spec goes out and only its
records come back, with what the actor's process has learned (the batch sizes its models chose:
:class:`~clearsight.execute.unit.Findings`). The driver keeps ``queue_depth`` units in flight per
actor, costliest first, and hands each unit's records to the single writer as soon as the unit
finishes. While a unit runs, its actor sends how far it has got and what it is doing
(:mod:`clearsight.execute.progress`, cut to the reports that change the bar) to one more actor,
:class:`Reports`, which holds them until the driver takes them, twice a second.

Faults: a lost actor (its process killed, its node gone) is replaced by a fresh one and its
in-flight units go back to the queue; only the unit that was running when it died is charged an
attempt (an actor runs its units one at a time, in submission order, so that is its oldest
unfinished unit). A unit whose ``run`` raises is charged an attempt too. After ``max_attempts``
attempts a unit's items are written as failed records carrying the last reason, and the run goes
on. Ray's own actor restarts and task retries are off: this loop counts attempts itself, so a unit
that kills every process it touches cannot loop forever.

``ray`` is imported only when this executor runs.
"""

from __future__ import annotations

import logging
import os
import sys
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from clearsight.execute.unit import Heard, Unit, failed_records, hear
from clearsight.models import install_hint
from clearsight.store import Record
from clearsight.validate import InputError


class RayConfig(BaseModel):
    """How the Ray executor places and retries work (the ``sweep`` command's ``--ray-*`` and
    ``--*-per-replica`` options)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    address: str | None = Field(
        None,
        description="Address of a running Ray cluster ('auto', 'HOST:6379' or "
        "'ray://HOST:10001'). None: the RAY_ADDRESS environment variable when set, else a local "
        "Ray instance with `workers` CPUs, shut down when the run ends.",
    )
    replicas: int | None = Field(
        None, ge=1, description="Actors (model replicas) per model; None: `workers`."
    )
    num_cpus: float = Field(
        1.0, gt=0, description="CPUs reserved per actor; also its numba/BLAS thread count."
    )
    num_gpus: float = Field(
        0.0,
        ge=0,
        description="GPUs reserved per actor: 1 for a replica per GPU, 0.5 for two replicas "
        "sharing one, N for a replica split over N GPUs (vLLM tensor parallelism).",
    )
    max_attempts: int = Field(
        3,
        ge=1,
        description="Attempts per unit (a lost actor or an exception in `run` counts as one) "
        "before its items are recorded as failed with the last reason.",
    )
    wait_for_nodes: bool = Field(
        False,
        description="When no node can hold a replica, wait for an autoscaling cluster to add "
        "one instead of refusing the run.",
    )
    queue_depth: int = Field(
        2,
        ge=1,
        description="Units in flight per actor: one running, the rest queued at the actor so it "
        "never waits on the driver between units.",
    )


def import_ray() -> Any:
    """The ``ray`` module, or an :class:`InputError` that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise InputError(
            f"the ray executor needs Ray, which is not installed: {install_hint('ray')}"
        ) from exc
    return ray


class Replica:
    """One model replica: a Ray actor that runs units with the protocol's ``run`` function.

    ``payload`` (``run`` and the findings' ``read``, or None) arrives pickled and is unpickled
    only after the thread limits are set, because unpickling imports the protocol (and numba,
    which reads its thread count at import). ``reports``: the :class:`Reports` actor its units'
    progress goes to.
    """

    def __init__(self, payload: bytes, threads: int, reports: Any) -> None:
        from ray import cloudpickle

        from clearsight.execute.threads import use_threads

        use_threads(threads)
        self._run: Callable[[Any], list[Record]]
        self._read: Callable[[], object] | None
        self._run, self._read = cloudpickle.loads(payload)
        self._reports = reports

    def ready(self) -> int:
        """This actor's process id, once its constructor has run."""
        return os.getpid()

    def run(self, unit: Any, index: int) -> tuple[list[Record], object]:
        """The records of unit ``index`` and what this process has learned after it (empty
        without ``read``); its progress goes to the reports actor without waiting for it."""
        from clearsight.execute import progress

        def send(share: float | None, note: str | None) -> None:
            self._reports.add.remote(index, share, note)

        with progress.Changes(unit.size, send).reporting():
            records = self._run(unit)
        return records, self._read() if self._read is not None else {}


class Reports:
    """A Ray actor holding the progress reports of the units in flight, ``(index, share,
    note)``, until the driver takes them."""

    def __init__(self) -> None:
        self._held: list[tuple[int, float | None, str | None]] = []

    def add(self, index: int, share: float | None, note: str | None) -> None:
        """One report of unit ``index``."""
        self._held.append((index, share, note))

    def take(self) -> list[tuple[int, float | None, str | None]]:
        """The reports held so far, in the order they came; none are held afterwards."""
        held, self._held = self._held, []
        return held


@dataclass(eq=False)  # a slot is itself: compared by identity
class _Slot:
    """A live actor of a model group, and the units it has in flight (oldest first)."""

    group: str
    handle: Any
    ping: Any
    ready: bool = False
    inflight: deque[tuple[Any, int]] = field(default_factory=deque)


def _reason(exc: BaseException) -> str:
    """A one-line reason for a record: the user's exception inside a RayTaskError, else the Ray
    error's first line."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


_local_kept = False  # a local instance run_on_ray started and left running (keep_local)


def shutdown_local() -> None:
    """Shut down the local Ray instance that runs with ``keep_local`` left running, if any."""
    global _local_kept
    if _local_kept:
        _local_kept = False
        import ray

        ray.shutdown()


def connect(ray: Any, config: RayConfig, workers: int) -> bool:
    """Connect to the configured cluster, or start a local instance; True when started here."""
    if ray.is_initialized():
        return False
    address = config.address or os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        try:
            ray.init(address=address)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(f"cannot connect to the Ray cluster at {address!r}: {exc}") from exc
        return False
    # "local": a new instance even where `ray start` left one running on this machine. Its
    # processes' logs stay in Ray's session folder rather than cutting through the progress bar:
    # what a unit raised reaches the records, and a lost actor's reason the retry loop.
    ray.init(
        address="local",
        num_cpus=workers,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
    )
    return True


def _check_fits(ray: Any, config: RayConfig) -> None:
    """Refuse replicas that no node can hold (Ray would wait for one forever), unless told to
    wait for an autoscaler."""
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive", True)]
    fits = any(
        r.get("CPU", 0.0) >= config.num_cpus and r.get("GPU", 0.0) >= config.num_gpus for r in nodes
    )
    if fits:
        return
    need = f"{config.num_cpus:g} CPU and {config.num_gpus:g} GPU per replica"
    have = "; ".join(f"{r.get('CPU', 0):g} CPU, {r.get('GPU', 0):g} GPU" for r in nodes)
    message = f"no Ray node can hold a replica ({need}); nodes have: {have or 'none'}"
    if not config.wait_for_nodes:
        raise InputError(f"{message} (RayConfig.wait_for_nodes waits for an autoscaler)")
    print(f"warning: {message}; waiting for the cluster to add one", file=sys.stderr)


class _Scheduler:
    """Dispatch units to replicas, commit their records, replace lost replicas."""

    def __init__(
        self,
        ray: Any,
        units: Sequence[Unit],
        run: Callable[[Any], list[Record]],
        heard: Heard,
        config: RayConfig,
        replicas: int,
    ) -> None:
        from ray import cloudpickle

        self.ray = ray
        self.units = list(units)
        self.heard = heard
        self.config = config
        self.attempts = [0] * len(self.units)
        order = sorted(range(len(self.units)), key=lambda i: -self.units[i].cost)
        self.queues: dict[str, deque[int]] = {}
        for i in order:
            self.queues.setdefault(self.units[i].model, deque()).append(i)
        self.shared = self.queues.pop("", deque())  # units any replica can run
        self.actor_class = ray.remote(
            num_cpus=config.num_cpus,
            num_gpus=config.num_gpus,
            max_restarts=0,
            max_task_retries=0,
        )(Replica)
        dumps: Callable[[Any], bytes] = cloudpickle.dumps
        self.payload = dumps((run, heard.findings.read if heard.findings is not None else None))
        self.threads = max(1, int(config.num_cpus))
        self.reports: Any = ray.remote(num_cpus=0, max_restarts=0)(Reports).remote()
        self.slots: list[_Slot] = []
        self.lost_idle = 0  # actors lost before running anything
        groups = list(self.queues) or [""]
        for group in groups:
            for _ in range(replicas):
                self._start(group)
        self.max_lost_idle = config.max_attempts * len(self.slots)

    def _start(self, group: str) -> None:
        handle = self.actor_class.remote(self.payload, self.threads, self.reports)
        self.slots.append(_Slot(group, handle, handle.ready.remote()))

    def _next_unit(self, slot: _Slot) -> int | None:
        """The costliest unit this replica can run: its model's queue or the shared one."""
        own = self.queues.get(slot.group)
        candidates = [q for q in (own, self.shared) if q]
        if not candidates:
            return None
        best = max(candidates, key=lambda q: self.units[q[0]].cost)
        return best.popleft()

    def _fill(self, slot: _Slot) -> None:
        while len(slot.inflight) < self.config.queue_depth:
            i = self._next_unit(slot)
            if i is None:
                break
            slot.inflight.append((slot.handle.run.remote(self.units[i], i), i))
        if not slot.inflight and not self._has_work(slot):
            self._retire(slot)  # frees its CPUs/GPUs for another model's waiting replicas

    def _has_work(self, slot: _Slot) -> bool:
        return bool(self.queues.get(slot.group)) or bool(self.shared)

    def _retire(self, slot: _Slot) -> None:
        self.slots.remove(slot)
        self.ray.kill(slot.handle, no_restart=True)

    def _requeue(self, i: int) -> None:
        group = self.units[i].model
        (self.queues[group] if group else self.shared).appendleft(i)

    def _charge(self, i: int, exc: BaseException) -> None:
        """Count a failed attempt of unit ``i``: retry it, or record its items as failed."""
        self.attempts[i] += 1
        if self.attempts[i] < self.config.max_attempts:
            self._requeue(i)
            return
        reason = f"failed {self.attempts[i]} attempts on Ray; last: {_reason(exc)}"
        self.heard.commit(failed_records(self.units[i], reason), self.units[i])

    def _lost(self, slot: _Slot, exc: BaseException) -> None:
        """Replace a dead replica; its running unit is charged, its queued ones go back."""
        self.slots.remove(slot)
        self.ray.kill(slot.handle, no_restart=True)
        if slot.inflight:
            _, running = slot.inflight.popleft()
            for _, i in reversed(slot.inflight):
                self._requeue(i)
            self._charge(running, exc)
        else:
            self.lost_idle += 1
            if self.lost_idle > self.max_lost_idle:
                raise InputError(f"Ray replicas keep dying before running a unit: {_reason(exc)}")
        if self._has_work(slot):  # keep the group's replica count while it has work
            self._start(slot.group)

    def run(self) -> None:
        """Until every unit is done: wait for what finishes (every answer already in, not just
        the first: replicas of one model tend to finish together; at most half a second, then
        the progress reports so far are heard), handle it, refill."""
        ray = self.ray
        while self.slots:
            for slot in [s for s in self.slots if not s.ready and not self._has_work(s)]:
                self._retire(slot)  # its model's work ran out before it started
            index: dict[Any, _Slot] = {}
            for slot in self.slots:
                if not slot.ready:
                    index[slot.ping] = slot
                for ref, _ in slot.inflight:
                    index[ref] = slot
            if not index:  # every replica is idle and no work is left
                for slot in list(self.slots):
                    self._retire(slot)
                break
            refs = list(index)
            ray.wait(refs, num_returns=1, timeout=0.5)
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            self._hear_reports()
            for ref in done:
                slot = index[ref]
                if any(s is slot for s in self.slots):  # not lost earlier in this round
                    self._handle(ref, slot)

    def _hear_reports(self) -> None:
        """Hand the progress reports the replicas sent so far to ``heard`` (none once the
        reports actor is lost: the bar then moves by finished units only)."""
        if self.reports is None:
            return
        try:
            held = self.ray.get(self.reports.take.remote())
        except self.ray.exceptions.RayError:
            self.reports = None
            return
        for index, share, note in held:
            hear(self.heard, self.units[index], share, note)

    def _handle(self, ref: Any, slot: _Slot) -> None:
        """A finished reference of ``slot``: its start-up ping or one of its units."""
        ray = self.ray
        if not slot.ready and ref == slot.ping:
            try:
                ray.get(ref)
            except ray.exceptions.RayError as exc:
                self._lost(slot, exc)
                return
            slot.ready = True
            self._fill(slot)
            return
        position = next(n for n, (r, _) in enumerate(slot.inflight) if r == ref)
        try:
            records, found = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:  # `run` raised: the replica lives on
            _, i = slot.inflight[position]
            del slot.inflight[position]
            self._charge(i, exc)
            self._fill(slot)
            return
        except ray.exceptions.RayError as exc:  # the replica is gone
            self._lost(slot, exc)
            return
        _, i = slot.inflight[position]
        del slot.inflight[position]
        self.heard.commit(records, self.units[i], found)
        self._fill(slot)

    def shutdown(self) -> None:
        for slot in self.slots:
            self.ray.kill(slot.handle, no_restart=True)
        self.slots.clear()
        if self.reports is not None:
            self.ray.kill(self.reports, no_restart=True)
            self.reports = None


def run_on_ray(
    units: Sequence[Unit],
    run: Callable[[Any], list[Record]],
    heard: Heard,
    *,
    workers: int,
    config: RayConfig,
    keep_local: bool = False,
) -> None:
    """Run every unit on Ray replicas and commit each unit's records to ``heard`` as it
    finishes, with what its replica learned; ``heard`` hears the units' progress as it comes.

    A Ray instance already initialised in this process is used as it is (and left running);
    otherwise this connects to ``config.address`` or starts a local instance for the run, shut
    down at its end unless ``keep_local`` (then :func:`shutdown_local` does it later).
    """
    global _local_kept
    ray = import_ray()
    if not units:
        return
    started_here = connect(ray, config, workers)
    if started_here and keep_local:
        _local_kept, started_here = True, False
    scheduler: _Scheduler | None = None
    try:
        _check_fits(ray, config)
        scheduler = _Scheduler(ray, units, run, heard, config, config.replicas or workers)
        scheduler.run()
    finally:
        if scheduler is not None:
            scheduler.shutdown()
        if started_here:
            ray.shutdown()
