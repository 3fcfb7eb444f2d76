"""clearsight: measure whether vision-language models know when they cannot see or cannot know.

The public API is imported lazily, so ``import clearsight`` stays cheap::

    from clearsight import SweepConfig, run_sweep, load_run, build_report
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "SweepConfig": "clearsight.sweep.config",
    "load_config": "clearsight.config",
    "run_sweep": "clearsight.sweep.protocol",
    "plan_sweep": "clearsight.sweep.plan",
    "run": "clearsight.driver",
    "Execution": "clearsight.driver",
    "RunSummary": "clearsight.driver",
    "load_run": "clearsight.store",
    "RunStore": "clearsight.store",
    "build_report": "clearsight.report",
    "load_backend": "clearsight.models",
    "load_bundled_scene": "clearsight.scenes.bundled",
    "bundled_scene_ids": "clearsight.scenes.bundled",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'clearsight' has no attribute {name!r}")
