"""Tracker benchmark: what ``--tracker mlflow`` costs a sweep on the reference observer.

Prints ``name: value`` lines:

* ``tracker_overhead_share`` — (tracked - untracked) / untracked wall time of the same observer
  sweep run as ``clearsight sweep`` runs it (the run, then its report), in this process, once
  with ``--tracker mlflow`` sending to a real ``mlflow server`` on 127.0.0.1 (SQLite backend
  store) and once without; best of three of each, taken in turn. Goal <= 0.02. The tracked run
  sends the counts after each unit, the manifest as parameters, the report's numbers (from the
  report's own analysis: nothing is analysed twice) and its three files.
* ``tracked_s`` and ``untracked_s`` — the two best times; ``sweep_items`` the sweep's size.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from pathlib import Path

from _timing import best_times, report
from clearsight.cli.execution import ExecutionOptions
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.protocol import run_sweep
from fixtures.trackers import mlflow_server

#: Two photos, fog at the paper's eight levels, the clean control, identification in a letter
#: and a verbal wording: the observer's answers, as a small real sweep has them.
CONFIG = SweepConfig(
    scene_ids=("skimage-chelsea", "skimage-coffee"),
    arms=("fog",),
    controls=("clean",),
    tasks=("identify",),
    wordings=("mcq.reason", "verbal.plain"),
)


def main() -> None:
    """Time the sweep tracked and untracked and print the share."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "mlflow").mkdir()
        with mlflow_server(root / "mlflow") as uri:
            os.environ["MLFLOW_TRACKING_URI"] = uri
            runs = iter(range(1_000_000))

            def sweep(options: ExecutionOptions) -> None:
                """The sweep and its report (the headline it prints kept off this output)."""
                with contextlib.redirect_stdout(io.StringIO()):
                    options.start(run_sweep, CONFIG, root / f"run-{next(runs)}", report=True)

            tracked, untracked = ExecutionOptions(tracker=("mlflow",)), ExecutionOptions()
            best = best_times(
                {"tracked": lambda: sweep(tracked), "untracked": lambda: sweep(untracked)},
                repeats=3,
                warmup=1,
            )
    report("tracker_overhead_share", (best["tracked"] - best["untracked"]) / best["untracked"], 4)
    report("tracked_s", best["tracked"], 2)
    report("untracked_s", best["untracked"], 2)
    report("sweep_items", len(plan_sweep(CONFIG).items), 0)


if __name__ == "__main__":
    main()
