"""Engine benchmark: the reference-observer sweep of the bundled scenes.

Prints ``name: value`` lines:

* ``observer_items_per_s`` — sweep items per second of the full default sweep (every bundled
  scene, both arms, all controls, both tasks, five wordings) with two worker processes.
* ``harness_share_outside_model`` — in a serial run of the same sweep over five scenes, the share
  of wall time spent outside the model's ``complete`` calls (planning, rendering, store writes,
  read-outs): what the harness costs around the model.
* ``rerun_cost_ratio`` — a rerun of the finished full sweep (plan, check, nothing to do) over
  the first run (goal <= 0.05).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _timing import report
from clearsight.models.observer import ObserverBackend
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.protocol import run_sweep


def _timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="clearsight-bench-"))
    try:
        cfg = SweepConfig()
        first, t_first = _timed(
            lambda: run_sweep(cfg, root / "full", executor="process", workers=2, progress=False)
        )
        report("observer_items_per_s", first.ok / t_first, 1)

        model_time = 0.0
        original = ObserverBackend.complete

        def timed_complete(self: ObserverBackend, requests: Sequence[Any]) -> Any:
            nonlocal model_time
            start = time.perf_counter()
            try:
                return original(self, requests)
            finally:
                model_time += time.perf_counter() - start

        ObserverBackend.complete = timed_complete  # type: ignore[method-assign]
        subset = SweepConfig(scene_ids=cfg_scene_subset(), controls=("clean", "blank", "shuffled"))
        _, t_serial = _timed(lambda: run_sweep(subset, root / "serial", progress=False))
        ObserverBackend.complete = original  # type: ignore[method-assign]
        report("harness_share_outside_model", 1 - model_time / t_serial)

        _, t_rerun = _timed(
            lambda: run_sweep(cfg, root / "full", executor="process", workers=2, progress=False)
        )
        report("rerun_cost_ratio", t_rerun / t_first)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def cfg_scene_subset() -> tuple[str, ...]:
    return (
        "skimage-astronaut",
        "skimage-chelsea",
        "skimage-coffee",
        "skimage-stereo-motorcycle",
        "mpl-grace-hopper",
    )


if __name__ == "__main__":
    main()
