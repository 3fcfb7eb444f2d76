"""clearsight: measure whether vision-language models know when they cannot see or cannot know.

Three protocols, each a package with the same shape, each reached from here by its
configuration, its run, its analysis (the paper's numbers as typed values) and its report::

    from clearsight import SweepConfig, run_sweep, analyse_sweep, build_sweep_report
    from clearsight import GroundingConfig, run_grounding, analyse_grounding, build_grounding_report
    from clearsight import ProbeConfig, run_probe, analyse_probe, build_probe_report

``build_report(run_dir)`` writes the report of any run, whichever protocol made it;
``load_run(run_dir)`` reads its records. The names are imported on first use, so
``import clearsight`` stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__version__ = "0.1.0"

#: name -> the module (a protocol's face, or a package's) it is read from on first use.
_EXPORTS = {
    # the visibility sweep
    "SweepConfig": "clearsight.sweep",
    "plan_sweep": "clearsight.sweep",
    "run_sweep": "clearsight.sweep",
    "analyse_sweep": "clearsight.sweep",
    "build_sweep_report": "clearsight.sweep",
    # trajectory grounding
    "GroundingConfig": "clearsight.grounding",
    "run_grounding": "clearsight.grounding",
    "analyse_grounding": "clearsight.grounding",
    "build_grounding_report": "clearsight.grounding",
    # active reasoning through a noisy sensor
    "ProbeConfig": "clearsight.probe",
    "run_probe": "clearsight.probe",
    "analyse_probe": "clearsight.probe",
    "build_probe_report": "clearsight.probe",
    # every protocol
    "load_config": "clearsight.config",
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


def lazy_face(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's ``__getattr__`` (PEP 562): ``name`` read from the ``"module:attribute"``
    that ``exports`` gives it, importing the module on first use (so importing the package
    stays cheap: a command's ``--help`` loads no numpy kernel or torch). This package's own
    names and each protocol package's face are looked up through it."""

    def attribute(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = exports[name].partition(":")
        return getattr(importlib.import_module(module), attr)

    return attribute


_public = lazy_face(__name__, {name: f"{module}:{name}" for name, module in _EXPORTS.items()})


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use."""
    return _public(name)
