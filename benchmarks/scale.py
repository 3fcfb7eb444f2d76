"""Scale benchmark: the reference-observer sweep of the bundled scenes on each executor (where
the CPU is the cost), and Ray replicas of a model whose calls take a fixed time without CPU
(where the model is the cost, as with GPU replicas).

Prints ``name: value`` lines. Where the CPU is the cost, no executor can go faster than the
machine has cores (``cpu_cores``; 2 here, so a CPU-bound speed-up cannot exceed ~2, and the
figures below stay under ``speedup_ceiling_2_workers``):

* ``serial_s`` — wall time of the full default sweep (every bundled scene, both arms, all
  controls, both tasks, five wordings) with the serial executor, in this process after a warm-up
  sweep of one scene (imports and numba's cached kernels loaded, so the baseline is not inflated).
* ``serial_one_thread_s`` — the same sweep with numba held to one thread (what one worker of
  the parallel executors gets), and ``unit_s_one_thread``, the part of it spent inside units.
* ``speedup_ceiling_2_workers`` — what two perfect workers could reach: ``serial_s`` over the
  driver's own time (``serial_one_thread_s - unit_s_one_thread``: planning, storing, writing)
  plus half the one-thread unit time, with no start-up and no contention: the bound to compare
  the speed-ups below with.
* ``pool_speedup_2_workers`` — ``serial_s`` over the process pool's wall time with two workers
  (worker start-up included: a user waits for it too).
* ``ray_startup_s`` — ``ray.init`` of a local two-CPU instance, stated and excluded from the
  timed regions below (a cluster is started once for many runs).
* ``ray_speedup_2_workers`` — ``serial_s`` over the Ray executor's wall time with two replicas
  (actor start-up included). Goal >= 1.6 on a two-core machine.
* ``ray_overhead_ms_per_item`` — what Ray itself costs per item: the Ray executor's wall time
  minus the serial executor's for the same units when a unit's work is replaced by a look-up of
  its finished records (so what remains is actor start-up, shipping units out, records back and
  scheduling), divided by the number of items.

Where the model is the cost: the scripted model with ``latency_s`` (each call, one unit's batch
of requests, sleeps ``latency_stand_in_s`` seconds: a GPU server's answer time as the driver sees
it; ``items_per_unit`` items a unit, ``units_per_replica`` units for each replica) on a local Ray
instance with ``latency_bound_logical_cpus`` logical CPUs (more than the machine has cores: a
sleeping replica needs none), one actor per replica:

* ``ray_latency_bound_speedup_N`` for N = 2, 4, 8, 16 replicas — units per second with N
  replicas over units per second with one (the better of a run first and a run last), each
  measured from the first call to the last answer (every replica's first unit waits until all
  N are up, so actor start-up is left out: what remains is how well the executor keeps the
  replicas busy). Goal >= 7 at N = 8.
* ``ray_latency_bound_efficiency_16`` — the speed-up at 16 replicas over 16. Goal >= 0.8.
* ``ray_latency_bound_startup_s_16`` — the part of the 16-replica run's wall time spent before
  that first call (sixteen actor processes starting on this machine's cores).

Each run writes its own store, so every figure includes the single writer's commits. The
CPU-bound speed-ups need two idle cores: ``machine_load_1min`` (before and after) says how busy
the machine was, since other processes' load takes cores from the two workers but hardly from the
serial run.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import clearsight
from _timing import report
from clearsight.execute import ExecutorName, execute
from clearsight.execute.on_ray import RayConfig
from clearsight.store import Record, RunStore
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.protocol import run_sweep
from clearsight.sweep.unit import SweepUnit
from fixtures import latency as stand_in


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def look_up(records: Mapping[str, Record], unit: SweepUnit) -> list[Record]:
    """A unit's finished records, without doing its work."""
    return [records[key] for key in unit.keys]


def replay(
    cfg: SweepConfig, run: Path, records: dict[str, Record], executor: ExecutorName
) -> float:
    """Wall time of executing the sweep's units when each unit's work is a look-up."""
    plan = plan_sweep(cfg)
    with RunStore.open(run) as store:
        store.begin_run({"config": cfg.model_dump(mode="json")})
        store.add_items((i.key, i.kind, i.to_json()) for i in plan.items)
        fn = functools.partial(look_up, records)
        _, elapsed = _timed(
            lambda: execute(
                [*plan.units, *plan.veq_units],
                fn,
                store,
                executor=executor,
                workers=2,
                progress=False,
            )
        )
    return elapsed


def unit_seconds(run: Path) -> float:
    """Time spent inside units: the sum of the records' ``elapsed_s`` (a unit's time is shared
    among its records)."""
    with RunStore.open(run, read_only=True) as store:
        return sum(r.elapsed_s for r in store.iter_records())


LATENCY_S = 0.1
ITEMS_PER_UNIT = 20
UNITS_PER_REPLICA = 8
REPLICAS = (1, 2, 4, 8, 16)


def latency_bound(root: Path, replicas: int, name: str) -> tuple[float, float]:
    """Units per second of ``replicas`` Ray replicas of the latency-bound stand-in model, from
    the first call to the last answer, and the run's wall time before that first call (the
    run's files under ``root / name``)."""
    root = root / name
    root.mkdir()
    units = stand_in.latency_units(
        stand_in.script(root), UNITS_PER_REPLICA * replicas, ITEMS_PER_UNIT
    )
    rendezvous = root / "rendezvous"
    rendezvous.mkdir()
    with RunStore.open(root / "run") as store:
        store.add_items((i.key, i.kind, i.to_json()) for u in units for i in u.items)
        fn = functools.partial(stand_in.ask, rendezvous, replicas, LATENCY_S)
        started = time.time()
        execute(
            units,
            fn,
            store,
            executor="ray",
            workers=replicas,
            progress=False,
            ray=RayConfig(replicas=replicas),
        )
        raws = [r.raw for r in store.iter_records()]
    return len(units) / stand_in.busy_span(raws), min(r["start"] for r in raws) - started


def report_latency_bound(root: Path) -> None:
    """The latency-bound figures, on a local Ray instance of ``max(REPLICAS)`` logical CPUs
    whose workers import the stand-in model's module by name (tests/ on their path)."""
    import ray

    tests = Path(stand_in.__file__).resolve().parents[1]
    paths = [str(Path(clearsight.__file__).resolve().parents[1]), str(tests)]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])
    report("latency_stand_in_s", LATENCY_S, 3)
    report("items_per_unit", ITEMS_PER_UNIT, 0)
    report("units_per_replica", UNITS_PER_REPLICA, 0)
    report("latency_bound_logical_cpus", max(REPLICAS), 0)
    ray.init(num_cpus=max(REPLICAS), include_dashboard=False, log_to_driver=False)
    rate = {n: latency_bound(root, n, f"latency-{n}") for n in REPLICAS}
    # one replica again, last: the baseline of every ratio is the better of a run before and
    # a run after the others (a shared machine's slow spell would otherwise inflate them all)
    again = latency_bound(root, 1, "latency-1-again")
    one = max(rate[1][0], again[0])
    for n in REPLICAS[1:]:
        report(f"ray_latency_bound_speedup_{n}", rate[n][0] / one, 2)
    report("ray_latency_bound_efficiency_16", rate[16][0] / one / 16, 3)
    report("ray_latency_bound_startup_s_16", rate[16][1], 2)
    ray.shutdown()


def main() -> None:
    import numba
    import ray

    threads = numba.get_num_threads()

    root = Path(tempfile.mkdtemp(prefix="clearsight-scale-"))
    report("cpu_cores", os.cpu_count() or 1, 0)
    report("machine_load_1min", os.getloadavg()[0], 2)
    try:
        cfg = SweepConfig()
        n_items = len(plan_sweep(cfg).items)
        run_sweep(
            SweepConfig(scene_ids=("skimage-chelsea",), controls=("clean",)),
            root / "warm",
            progress=False,
        )
        serial, t_serial = _timed(lambda: run_sweep(cfg, root / "serial", progress=False))
        assert serial.ok == n_items, serial
        report("serial_s", t_serial, 2)

        numba.set_num_threads(1)
        _, t_one = _timed(lambda: run_sweep(cfg, root / "one-thread", progress=False))
        numba.set_num_threads(threads)
        unit_one = unit_seconds(root / "one-thread")
        report("serial_one_thread_s", t_one, 2)
        report("unit_s_one_thread", unit_one, 2)
        report("speedup_ceiling_2_workers", t_serial / (t_one - unit_one + unit_one / 2), 2)

        pool, t_pool = _timed(
            lambda: run_sweep(cfg, root / "pool", executor="process", workers=2, progress=False)
        )
        assert pool.ok == n_items, pool
        report("pool_speedup_2_workers", t_serial / t_pool, 2)

        _, t_init = _timed(
            lambda: ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        )
        report("ray_startup_s", t_init, 2)
        on_ray, t_ray = _timed(
            lambda: run_sweep(cfg, root / "ray", executor="ray", workers=2, progress=False)
        )
        assert on_ray.ok == n_items, on_ray
        report("ray_speedup_2_workers", t_serial / t_ray, 2)

        with RunStore.open(root / "serial", read_only=True) as store:
            records = {
                r.key: Record(r.key, r.status, r.error, r.raw, r.readouts, r.elapsed_s)
                for r in store.iter_records()
            }
        t_local = replay(cfg, root / "replay-serial", records, "serial")
        t_remote = replay(cfg, root / "replay-ray", records, "ray")
        report("ray_overhead_ms_per_item", 1000 * (t_remote - t_local) / n_items, 3)
        ray.shutdown()
        report("machine_load_1min", os.getloadavg()[0], 2)
        report_latency_bound(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
