"""Active reasoning through a noisy VLM sensor (docs/methods.md §6).

A text-only reasoner never sees the image: it asks a sensor (any VLM backend, K samples per
query, one realised, consistency u shown as "(u/K)") and commits to a lettered option.

Modules: :mod:`~clearsight.probe.instances` (the questions), :mod:`~clearsight.probe.sensor`
(the sensor and its replies), :mod:`~clearsight.probe.judges` (semantic equivalence behind u),
:mod:`~clearsight.probe.transcript` (conversations as stored records),
:mod:`~clearsight.probe.reasoner` (the strategies and the loop),
:mod:`~clearsight.probe.analysis` (accuracy, cross-run ECE, bins, ablation, belief probe, query
types) and :mod:`~clearsight.probe.build` (the two-stage benchmark filter). The protocol that
plans and runs items is :mod:`clearsight.probe.protocol`; every item's typed spec is in
:mod:`~clearsight.probe.specs`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clearsight.probe.build import BuildConfig, build_stage1, build_stage2
    from clearsight.probe.distill import DistillConfig, distill
    from clearsight.probe.posthoc import AnalysisConfig, run_probe_analysis
    from clearsight.probe.protocol import PROBE, ProbeConfig, run_probe
    from clearsight.report.probe import build_probe_report

#: The package's face: name -> "module:attribute", imported when first asked for (so importing
#: the package stays cheap: a command's --help never loads numpy's kernels or torch).
_EXPORTS = {
    "ProbeConfig": "clearsight.probe.protocol:ProbeConfig",
    "PROBE": "clearsight.probe.protocol:PROBE",
    "run_probe": "clearsight.probe.protocol:run_probe",
    "build_probe_report": "clearsight.report.probe:build_probe_report",
    "BuildConfig": "clearsight.probe.build:BuildConfig",
    "build_stage1": "clearsight.probe.build:build_stage1",
    "build_stage2": "clearsight.probe.build:build_stage2",
    "AnalysisConfig": "clearsight.probe.posthoc:AnalysisConfig",
    "run_probe_analysis": "clearsight.probe.posthoc:run_probe_analysis",
    "DistillConfig": "clearsight.probe.distill:DistillConfig",
    "distill": "clearsight.probe.distill:distill",
}

__all__ = [
    "PROBE",
    "AnalysisConfig",
    "BuildConfig",
    "DistillConfig",
    "ProbeConfig",
    "build_probe_report",
    "build_stage1",
    "build_stage2",
    "distill",
    "run_probe",
    "run_probe_analysis",
]


def __getattr__(name: str) -> Any:
    """The face's ``name``, imported from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _EXPORTS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
