"""Engine benchmark: the reference-observer sweep of the bundled scenes.

Prints ``name: value`` lines:

* ``observer_items_per_s`` — sweep items per second of the full default sweep (every bundled
  scene, both arms, all controls, both tasks, five wordings) with two worker processes.
* ``harness_share_outside_model`` — in a serial run of the same sweep over five scenes, the share
  of wall time spent outside the model's ``complete`` calls (planning, rendering, store writes,
  read-outs): what the harness costs around the model. The observer is weightless, so this is
  the harness against almost nothing.
* ``harness_share_outside_model_perceiver_llm`` and
  ``harness_share_outside_model_perceiver_detector`` — the same share against the real
  perceiver models (``perceiver:llm``: detector plus SmolLM2-135M; ``perceiver:detector``) on a
  smaller sweep (two scenes, fog and the three controls, identification, one wording: 35
  items), after a warm-up sweep that loads the models (a model loads once per process; its
  load is not the harness's per-item cost). Goal <= 0.05 for ``perceiver:llm``.
  ``perceiver_items`` is the sweep's size and ``perceiver_<mode>_model_s_per_item`` the model's
  own time per item.
* ``rerun_cost_ratio`` — a rerun of the finished full sweep (plan, check, nothing to do) over
  the first run (goal <= 0.05).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _timing import report
from clearsight.perceiver.backend import PerceiverBackend
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.protocol import run_sweep
from clearsight.sweep.references.observer import ObserverBackend

#: The perceiver sweeps: two scenes, fog and every cheap control, one task, one wording.
PERCEIVER_SWEEP: dict[str, Any] = {
    "scene_ids": ("skimage-astronaut", "skimage-coffee"),
    "arms": ("fog",),
    "controls": ("clean", "blank", "shuffled"),
    "tasks": ("identify",),
    "wordings": ("mcq.reason",),
}


def _timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def model_seconds(backend: type[Any], fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall time of ``fn()`` and the part of it spent inside ``backend.complete``."""
    model_time = 0.0
    original = backend.complete

    def timed_complete(self: Any, requests: Sequence[Any]) -> Any:
        nonlocal model_time
        start = time.perf_counter()
        try:
            return original(self, requests)
        finally:
            model_time += time.perf_counter() - start

    backend.complete = timed_complete
    try:
        _, wall = _timed(fn)
    finally:
        backend.complete = original
    return wall, model_time


def perceiver_share(root: Path, mode: str) -> tuple[float, int, float]:
    """The harness share of a serial ``perceiver:<mode>`` sweep (:data:`PERCEIVER_SWEEP`),
    after a two-item warm-up sweep that loads the detector and the LLM; its items; and the
    seconds spent inside the model."""
    model = f"perceiver:{mode}"
    warm = {**PERCEIVER_SWEEP, "controls": ("clean",), "levels_m": (31.25,), "models": (model,)}
    run_sweep(SweepConfig(**warm), root / f"warm-{mode}", progress=False)
    cfg = SweepConfig(**PERCEIVER_SWEEP, models=(model,))
    summary: list[Any] = []
    wall, inside = model_seconds(
        PerceiverBackend,
        lambda: summary.append(run_sweep(cfg, root / f"serial-{mode}", progress=False)),
    )
    return 1 - inside / wall, summary[0].ok, inside


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="clearsight-bench-"))
    try:
        cfg = SweepConfig()
        first, t_first = _timed(
            lambda: run_sweep(cfg, root / "full", executor="process", workers=2, progress=False)
        )
        report("observer_items_per_s", first.ok / t_first, 1)

        subset = SweepConfig(scene_ids=cfg_scene_subset(), controls=("clean", "blank", "shuffled"))
        t_serial, model_time = model_seconds(
            ObserverBackend, lambda: run_sweep(subset, root / "serial", progress=False)
        )
        report("harness_share_outside_model", 1 - model_time / t_serial)

        _, t_rerun = _timed(
            lambda: run_sweep(cfg, root / "full", executor="process", workers=2, progress=False)
        )
        report("rerun_cost_ratio", t_rerun / t_first)

        for mode in ("detector", "llm"):
            share, items, inside = perceiver_share(root, mode)
            report(f"harness_share_outside_model_perceiver_{mode}", share, 4)
            report(f"perceiver_{mode}_model_s_per_item", inside / items, 3)
        report("perceiver_items", items, 0)
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
