"""Tracker benchmark: what ``--tracker mlflow`` costs a sweep on the reference observer.

Prints ``name: value`` lines:

* ``tracker_overhead_share`` — (tracked - untracked) / untracked wall time of the same observer
  sweep run as ``clearsight sweep`` runs it (the run, then its report), in this process, once
  with ``--tracker mlflow`` sending to a real ``mlflow server`` on 127.0.0.1 (SQLite backend
  store) and once without; best of three of each, taken in turn, after a warm-up of each (the
  first sweep of a process loads the scenes and compiles the physics). Goal <= 0.02. The
  tracked run sends the counts after each unit, the manifest as parameters, the report's
  numbers (from the report's own analysis: nothing is analysed twice) and its three files,
  without the sample table (``--tracker-sample 0``): what logging costs a run of any size.
* ``tracker_sample_s`` and ``tracker_sample_s_per_image`` — what the default sample table
  (``--tracker-sample``'s default: each item's image kept by the unit that sent it, encoded
  and sent by the sender thread while the report is written) adds to the run, best
  tracked-with-sample minus best tracked-without: a fixed cost, the same for a run of an
  hour; ``tracker_overhead_share_with_sample`` its share of this small sweep (goal <= 0.02).
* ``tracker_calls_share`` — the seconds the run's own thread spends in the tracker session
  (queueing each unit's counts; at the end, waiting for the sender thread to send the files and
  end the runs), fewest over the tracked sweeps, over the best untracked sweep: what the
  trackers hold the run up, without the noise of two wall times. The wall-time share also
  counts the CPU the sender thread and the server take from the run, which on a machine with
  fewer idle cores than busy processes is most of it.
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
#: two letter wordings and a verbal one: the size of a user's first real run, where a tracker's
#: fixed costs (creating its run, the parameters, the files) weigh as they will.
CONFIG = SweepConfig(tasks=("identify",), wordings=("mcq.reason", "mcq.generic", "verbal.plain"))
REPEATS = 3


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


def main() -> None:
    """Time the sweep tracked and untracked, in turn, and print the shares."""
    spent = _inside_session()
    with tempfile.TemporaryDirectory() as tmp, mlflow_server(Path(tmp)) as uri:
        os.environ["MLFLOW_TRACKING_URI"] = uri
        runs = iter(range(1_000_000))

        def sweep(options: ExecutionOptions) -> tuple[float, float]:
            """Wall seconds of the sweep and its report, and those inside the trackers."""
            before, start = spent(), time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):  # the headline it prints
                options.start(run_sweep, CONFIG, Path(tmp) / f"run-{next(runs)}", report=True)
            return time.perf_counter() - start, spent() - before

        tracked = ExecutionOptions(tracker=("mlflow",), tracker_sample=0)
        sampled, untracked = ExecutionOptions(tracker=("mlflow",)), ExecutionOptions()
        sweep(tracked), sweep(untracked), sweep(sampled)  # warm-up
        timings = [(sweep(tracked), sweep(untracked), sweep(sampled)) for _ in range(REPEATS)]
    best_tracked = min(t for (t, _), _, _ in timings)
    best_untracked = min(u for _, (u, _), _ in timings)
    best_sampled = min(w for _, _, (w, _) in timings)
    inside = min(s for (_, s), _, _ in timings)
    report("tracker_overhead_share", (best_tracked - best_untracked) / best_untracked, 4)
    report("tracker_calls_share", inside / best_untracked, 4)
    report("tracked_s", best_tracked, 2)
    report("untracked_s", best_untracked, 2)
    n_sample = sampled.tracker_sample
    report("tracker_sample_s", best_sampled - best_tracked, 2)
    report("tracker_sample_s_per_image", (best_sampled - best_tracked) / n_sample, 3)
    share = (best_sampled - best_untracked) / best_untracked
    report("tracker_overhead_share_with_sample", share, 4)
    plan = plan_sweep(CONFIG)
    report("sweep_items", len(plan.items), 0)
    report("sweep_units", len(plan.units), 0)


if __name__ == "__main__":
    main()
