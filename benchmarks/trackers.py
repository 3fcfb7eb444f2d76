"""Tracker benchmark: what ``--tracker mlflow`` costs a sweep on the reference observer.

Two sweeps, each run as ``clearsight sweep`` runs it (the run, then its report), in this
process, once with ``--tracker mlflow`` sending to a real ``mlflow server`` on 127.0.0.1
(SQLite backend store), once with ``--tracker mlflow --tracker-sample 0`` and once without a
tracker, taken in turn (best of the repeats of each), after a warm-up of each (the first
sweep of a process loads the scenes and compiles the physics; done on the demo's sweep only):

* the demo's observer sweep (:data:`DEMO`: 3,228 items, about 16 s), the lines without a
  suffix;
* the sweep ``clearsight sweep`` runs with no option (:data:`DEFAULT`: both tasks in all five
  wordings on every bundled photo, 15,612 items), the lines ending ``_default_design``.

Prints ``name: value`` lines:

* ``tracker_overhead_share`` — (tracked - untracked) / untracked wall time without the
  sample table: what logging costs a run of any size (the counts after each unit, the
  manifest as parameters, the report's numbers, from the report's own analysis, and its
  three files). Goal <= 0.02.
* ``tracker_sample_s`` and ``tracker_sample_s_per_image`` — what the default sample table
  (``--tracker-sample``'s default: each item's image kept by the unit that sent it, encoded
  by the sender thread as it is kept, the table sent from the trackers' own process while the
  report is written) adds to the run, best
  tracked-with-sample minus best tracked-without: a fixed cost, the same for a run of an
  hour; ``tracker_overhead_share_with_sample`` everything the tracker does, as a share of the
  sweep. Goal <= 0.02.
* ``tracker_sample_cpu_s`` — the CPU seconds of this process (every thread) the table adds:
  the work itself, without the noise of two wall times (neither the trackers' process's work
  nor the server's counted).
* ``tracker_calls_share`` — the seconds the run's own thread spends in the tracker session
  (queueing each unit's counts; at the end, waiting for the sender thread to send the files and
  end the runs), fewest over the tracked sweeps, over the best untracked sweep: what the
  trackers hold the run up. The wall-time share also counts what the sender thread, the
  trackers' process and the server take from the run (the interpreter, a core), which on a
  machine with fewer idle cores than busy processes is most of it.
* ``tracker_overhead_share_with_sample_paired_median`` — each repeat's tracked-with-sample
  sweep against the untracked sweep run just before it, the median over the repeats: a slow
  spell of the machine (one sweep's time moves by up to a tenth between runs here) hits both
  sweeps of a pair, where the best-of figures take each side's luckiest run apart;
  ``untracked_spread`` the slowest untracked sweep over the fastest, minus 1: that noise.
* ``tracked_s``, ``untracked_s``, ``sweep_items`` and ``sweep_units``.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

from _timing import report
from clearsight.cli.execution import ExecutionOptions
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.protocol import run_sweep
from clearsight.track.session import Session
from fixtures.trackers import mlflow_server

#: The demo's observer sweep (``clearsight demo``'s design for the reference observer): every
#: bundled photo, fog and water at the paper's eight levels, every control, identification in
#: two letter wordings and a verbal one: the size of a user's first run, where a tracker's
#: fixed costs (creating its run, the parameters, the files, the sample's table) weigh most.
DEMO = SweepConfig(tasks=("identify",), wordings=("mcq.reason", "mcq.generic", "verbal.plain"))
#: ``clearsight sweep``'s own design on the bundled photos (every task and wording).
DEFAULT = SweepConfig()
REPEATS = {"": 5, "_default_design": 4}


def _inside_session() -> Callable[[], float]:
    """Time spent in :class:`Session`'s calls from now on (a reader of the running total)."""
    spent = 0.0

    def timed(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            nonlocal spent
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent += time.perf_counter() - start

        return call

    for name in ("committed", "keep", "ran", "finish"):  # begin: in the first ``committed``
        setattr(Session, name, timed(getattr(Session, name)))
    return lambda: spent


#: One sweep's wall seconds, CPU seconds of this process and seconds inside the trackers.
Timing = tuple[float, float, float]


def _measure(config: SweepConfig, root: Path, repeats: int, spent: Callable[[], float]) -> None:
    """Time ``config``'s sweep tracked, untracked and tracked with the table, in turn, and
    print its lines (the default design's with their suffix; it needs no warm-up of its own
    after the demo's)."""
    runs = iter(range(1_000_000))
    suffix = "" if config is DEMO else "_default_design"

    def sweep(options: ExecutionOptions) -> Timing:
        before, cpu, start = spent(), time.process_time(), time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # the headline it prints
            options.start(run_sweep, config, root / f"run{suffix}-{next(runs)}", report=True)
        wall = time.perf_counter() - start
        return wall, time.process_time() - cpu, spent() - before

    tracked = ExecutionOptions(tracker=("mlflow",), tracker_sample=0)
    sampled, untracked = ExecutionOptions(tracker=("mlflow",)), ExecutionOptions()
    if config is DEMO:
        sweep(tracked), sweep(untracked), sweep(sampled)  # warm-up
    timings = [(sweep(tracked), sweep(untracked), sweep(sampled)) for _ in range(repeats)]
    _print(timings, sampled.tracker_sample, suffix)
    plan = plan_sweep(config)
    report(f"sweep_items{suffix}", len(plan.items), 0)
    report(f"sweep_units{suffix}", len(plan.units), 0)


def _print(timings: list[tuple[Timing, Timing, Timing]], n_sample: int, suffix: str) -> None:
    """The lines of one sweep's timings (tracked, untracked, tracked with the table)."""
    best_tracked = min(t[0] for t, _, _ in timings)
    best_untracked = min(u[0] for _, u, _ in timings)
    best_sampled = min(w[0] for _, _, w in timings)
    inside = min(t[2] for t, _, _ in timings)
    cpu = min(w[1] for _, _, w in timings) - min(t[1] for t, _, _ in timings)
    report(f"tracker_overhead_share{suffix}", (best_tracked - best_untracked) / best_untracked, 4)
    report(f"tracker_calls_share{suffix}", inside / best_untracked, 4)
    report(f"tracked_s{suffix}", best_tracked, 2)
    report(f"untracked_s{suffix}", best_untracked, 2)
    report(f"tracker_sample_s{suffix}", best_sampled - best_tracked, 2)
    report(f"tracker_sample_s_per_image{suffix}", (best_sampled - best_tracked) / n_sample, 3)
    report(f"tracker_sample_cpu_s{suffix}", cpu, 2)
    share = (best_sampled - best_untracked) / best_untracked
    report(f"tracker_overhead_share_with_sample{suffix}", share, 4)
    paired = [(w[0] - u[0]) / u[0] for _, u, w in timings]  # each repeat's own untracked
    report(f"tracker_overhead_share_with_sample_paired_median{suffix}", median(paired), 4)
    untracked = [u[0] for _, u, _ in timings]
    report(f"untracked_spread{suffix}", max(untracked) / min(untracked) - 1, 4)


def main() -> None:
    """Time both sweeps tracked and untracked, in turn, and print the shares."""
    spent = _inside_session()
    with tempfile.TemporaryDirectory() as tmp, mlflow_server(Path(tmp)) as uri:
        os.environ["MLFLOW_TRACKING_URI"] = uri
        for config, repeats in zip((DEMO, DEFAULT), REPEATS.values(), strict=True):
            _measure(config, Path(tmp), repeats, spent)


if __name__ == "__main__":
    main()
