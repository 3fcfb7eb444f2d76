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
    from clearsight.probe.agreement import (
        human_agreement,
        judge_agreement,
        read_human_labels,
        store_validation,
    )
    from clearsight.probe.build import BuildConfig, build_stage1, build_stage2, write_instances
    from clearsight.probe.distill import DistillConfig, distill
    from clearsight.probe.distill import distill as run_distill
    from clearsight.probe.hub import hub_instances
    from clearsight.probe.instances import (
        LAYOUTS,
        OWN_FIELDS,
        Instance,
        instances_from_jsonl,
        load_instances,
        resolve_source,
    )
    from clearsight.probe.judges import make_judge
    from clearsight.probe.posthoc import AnalysisConfig, run_probe_analysis
    from clearsight.probe.protocol import PROBE, ProbeConfig, run_probe, select_instances
    from clearsight.probe.transcript import load_transcripts
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
    "select_instances": "clearsight.probe.protocol:select_instances",
    "Instance": "clearsight.probe.instances:Instance",
    "LAYOUTS": "clearsight.probe.instances:LAYOUTS",
    "OWN_FIELDS": "clearsight.probe.instances:OWN_FIELDS",
    "instances_from_jsonl": "clearsight.probe.instances:instances_from_jsonl",
    "load_instances": "clearsight.probe.instances:load_instances",
    "resolve_source": "clearsight.probe.instances:resolve_source",
    "hub_instances": "clearsight.probe.hub:hub_instances",
    "judge_agreement": "clearsight.probe.agreement:judge_agreement",
    "human_agreement": "clearsight.probe.agreement:human_agreement",
    "read_human_labels": "clearsight.probe.agreement:read_human_labels",
    "store_validation": "clearsight.probe.agreement:store_validation",
    "make_judge": "clearsight.probe.judges:make_judge",
    "load_transcripts": "clearsight.probe.transcript:load_transcripts",
    "write_instances": "clearsight.probe.build:write_instances",
    # the submodule clearsight.probe.distill shadows the name "distill" once it is imported
    "run_distill": "clearsight.probe.distill:distill",
}

__all__ = [
    "LAYOUTS",
    "OWN_FIELDS",
    "PROBE",
    "AnalysisConfig",
    "BuildConfig",
    "DistillConfig",
    "Instance",
    "ProbeConfig",
    "build_probe_report",
    "build_stage1",
    "build_stage2",
    "distill",
    "hub_instances",
    "human_agreement",
    "instances_from_jsonl",
    "judge_agreement",
    "load_instances",
    "load_transcripts",
    "make_judge",
    "read_human_labels",
    "resolve_source",
    "run_distill",
    "run_probe",
    "run_probe_analysis",
    "select_instances",
    "store_validation",
    "write_instances",
]


def __getattr__(name: str) -> Any:
    """The face's ``name``, imported from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _EXPORTS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
