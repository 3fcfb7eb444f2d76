"""Tracker benchmark: what ``--tracker mlflow`` costs a sweep on the reference observer.

Two sweeps, each run as ``clearsight sweep`` runs it (the run, then its report), in this
process, without a tracker, with ``--tracker mlflow --tracker-sample 0`` and with
``--tracker mlflow`` (its default 64-item table), sending to a real ``mlflow server`` on
127.0.0.1 (SQLite backend store, on this machine), after a warm-up of each (the first sweep of
a process loads the scenes and compiles the physics; done on the demo's sweep only):

* the demo's observer sweep (:data:`DEMO`: 3,228 items, about 16 s), the lines without a
  suffix;
* the sweep ``clearsight sweep`` runs with no option (:data:`DEFAULT`: both tasks in all five
  wordings on every bundled photo, 15,612 items), the lines ending ``_default_design``.

How it is timed: each repeat runs the three variants once, in an order rotated by one from
the repeat before (over three repeats each variant runs first, second and third once), with a
pause after every sweep (:data:`PAUSE_S`: the trackers' process ends in its own time after a
tracked run, as it does after a command has returned, and the next sweep is not to pay for
it). Each figure is the median over the repeats of that repeat's own comparison: one sweep's
time moves by a tenth to nearly a quarter between runs on this shared machine
(``untracked_spread``), and a slow spell hits the sweeps of one repeat alike, where a best-of
figure would set the luckiest sweep of one variant against the luckiest of another.

Prints ``name: value`` lines:

* ``tracker_overhead_share`` — (tracked - untracked) / untracked wall time, ``--tracker
  mlflow`` as a user types it (the table included), the median over the repeats: everything
  the tracker costs the run. Goal <= 0.02. ``tracker_overhead_share_low`` and ``_high``: the
  distribution-free interval of that median at 95 % or more (order statistics of the
  repeats' shares, the sign test's interval).
* ``tracker_overhead_share_best_of`` — the fastest tracked sweep against the fastest
  untracked one (the figure earlier versions of this benchmark printed): each side's luckiest
  sweep, taken from different repeats.
* ``tracker_overhead_share_no_table`` — the median share with ``--tracker-sample 0``: what logging
  costs a run of any size (the counts after each unit, the manifest as parameters, the
  report's numbers, from the report's own analysis, and its three files).
* ``tracker_sample_s`` — what the table adds (tracked minus tracked without the table, the
  median): a fixed cost, the same for a run of an hour; ``tracker_sample_cpu_s`` the CPU
  seconds of this process (every thread) it adds: the work itself, neither the trackers'
  process's nor the server's counted.
* ``tracker_calls_share`` — the seconds the run's own thread spends in the tracker session
  (drawing the sample's keys, queueing each unit's counts; at the end, waiting for the sender
  thread to send the files and end the runs) over the untracked sweep's time: what the
  trackers hold the run up. The wall-time share also counts what the sender thread, the
  trackers' process and the server take from the run (the interpreter, a core).
* ``untracked_spread`` — the slowest untracked sweep over the fastest, minus 1: the noise the
  medians stand against.
* ``tracked_s`` and ``untracked_s`` (medians), ``sweep_items`` and ``sweep_units``.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
from collections.abc import Callable
from math import comb
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
#: Repeats of each sweep (multiples of three: each variant in each place of the order).
REPEATS = {"": 9, "_default_design": 9}
#: Seconds of pause after each sweep (the trackers' process ends in about a third of one).
PAUSE_S = 1.0


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
#: The variants, by the name the lines use: untracked, tracked without and with the table.
VARIANTS = {
    "untracked": ExecutionOptions(),
    "no_table": ExecutionOptions(tracker=("mlflow",), tracker_sample=0),
    "tracked": ExecutionOptions(tracker=("mlflow",)),
}


def _measure(config: SweepConfig, root: Path, repeats: int, spent: Callable[[], float]) -> None:
    """Time ``config``'s sweep in each variant, in a rotated order per repeat, and print its
    lines (the default design's with their suffix; it needs no warm-up of its own after the
    demo's)."""
    runs = iter(range(1_000_000))
    suffix = "" if config is DEMO else "_default_design"

    def sweep(variant: str) -> Timing:
        before, cpu, start = spent(), time.process_time(), time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # the headline it prints
            VARIANTS[variant].start(
                run_sweep, config, root / f"run{suffix}-{next(runs)}", report=True
            )
        timing = time.perf_counter() - start, time.process_time() - cpu, spent() - before
        time.sleep(PAUSE_S)
        return timing

    if config is DEMO:
        for variant in VARIANTS:  # warm-up
            sweep(variant)
    timings, names = [], list(VARIANTS)
    for repeat in range(repeats):
        turn = names[repeat % 3 :] + names[: repeat % 3]
        timings.append({variant: sweep(variant) for variant in turn})
    _print(timings, suffix)
    plan = plan_sweep(config)
    report(f"sweep_items{suffix}", len(plan.items), 0)
    report(f"sweep_units{suffix}", len(plan.units), 0)


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float]:
    r"""The distribution-free interval of the median of ``values`` at ``level`` or more: the
    k-th smallest and k-th largest value for the largest k whose coverage, the chance that
    a Binomial(n, 1/2) count falls in [k, n - k], is at least ``level`` (the sign test's
    interval; the whole range where no k reaches it).

    .. math:: P(k \le B \le n - k) = 1 - 2 \sum_{i < k} \binom{n}{i} 2^{-n}
    """
    ordered, n = sorted(values), len(values)
    k = 1
    while k < n // 2 and 1 - 2 * sum(comb(n, i) for i in range(k + 1)) / 2**n >= level:
        k += 1
    return ordered[k - 1], ordered[n - k]


def _print(timings: list[dict[str, Timing]], suffix: str) -> None:
    """The lines of one sweep's timings (each repeat: every variant's)."""

    def share(variant: str) -> list[float]:
        return [(t[variant][0] - t["untracked"][0]) / t["untracked"][0] for t in timings]

    untracked = [t["untracked"][0] for t in timings]
    shares = share("tracked")
    low, high = median_interval(shares)
    report(f"tracker_overhead_share{suffix}", median(shares), 4)
    report(f"tracker_overhead_share_low{suffix}", low, 4)
    report(f"tracker_overhead_share_high{suffix}", high, 4)
    report(f"tracker_overhead_share_no_table{suffix}", median(share("no_table")), 4)
    best = min(t["tracked"][0] for t in timings) / min(untracked) - 1
    report(f"tracker_overhead_share_best_of{suffix}", best, 4)
    added = [t["tracked"][0] - t["no_table"][0] for t in timings]
    report(f"tracker_sample_s{suffix}", median(added), 2)
    cpu = [t["tracked"][1] - t["no_table"][1] for t in timings]
    report(f"tracker_sample_cpu_s{suffix}", median(cpu), 2)
    inside, typical = median(t["tracked"][2] for t in timings), median(untracked)
    report(f"tracker_calls_share{suffix}", inside / typical, 4)
    report(f"tracked_s{suffix}", median(t["tracked"][0] for t in timings), 2)
    report(f"untracked_s{suffix}", typical, 2)
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
