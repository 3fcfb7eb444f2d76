"""Active reasoning through a noisy VLM sensor (docs/methods.md §6).

A text-only reasoner never sees the image: it asks a sensor (any VLM backend, K samples per
query, one realised, consistency u shown as "(u/K)") and commits to a lettered option.

The protocol's shape: :mod:`~clearsight.probe.config` (``ProbeConfig``),
:mod:`~clearsight.probe.specs` (every item's typed spec), :mod:`~clearsight.probe.plan` (the
conversations), :mod:`~clearsight.probe.unit` (running one), :mod:`~clearsight.probe.readouts` (the
stored read-outs, typed), :mod:`~clearsight.probe.results` (a run read back as frames),
:mod:`~clearsight.probe.analysis` (the paper's numbers as one typed value, computed by
:mod:`~clearsight.probe.numbers.accuracy`, :mod:`~clearsight.probe.posthoc.belief` and
:mod:`~clearsight.probe.posthoc.querytypes`) and :mod:`~clearsight.probe.protocol` (``PROBE``,
``run_probe``). Its domain: the questions (:mod:`~clearsight.probe.instances`,
:mod:`~clearsight.probe.sources.layouts`, :mod:`~clearsight.probe.sources.load`,
:mod:`~clearsight.probe.sources.hub`), the sensor and the judges behind u
(:mod:`~clearsight.probe.sensor`, :mod:`~clearsight.probe.judges`), conversations as records
(:mod:`~clearsight.probe.transcript`), the strategies as values
(:mod:`~clearsight.probe.strategies`) with the texts they read
(:mod:`~clearsight.probe.reasoner.prompts`), the reading of a reply
(:mod:`~clearsight.probe.reasoner.parsing`), the loop (:mod:`~clearsight.probe.reasoner.loop`) and
the UoT search's scores (:mod:`~clearsight.probe.reasoner.uot_search`); and its companions: the
post-hoc analyses (:mod:`~clearsight.probe.posthoc.protocol`), the two-stage benchmark filter
(:mod:`~clearsight.probe.bench.protocol`), judges against people
(:mod:`~clearsight.probe.posthoc.agreement`) and self-distillation
(:mod:`~clearsight.probe.distill.sft`, :mod:`~clearsight.probe.distill.train`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clearsight import lazy_face

if TYPE_CHECKING:
    from clearsight.probe.analysis import ProbeAnalysis, analyse_probe
    from clearsight.probe.bench.protocol import (
        BuildConfig,
        build_stage1,
        build_stage2,
        write_instances,
    )
    from clearsight.probe.config import ProbeConfig
    from clearsight.probe.distill.train import DistillConfig, distill
    from clearsight.probe.distill.train import distill as run_distill
    from clearsight.probe.instances import OWN_FIELDS, Instance
    from clearsight.probe.judges import make_judge
    from clearsight.probe.page.report import build_probe_report, probe_tables, render_probe_report
    from clearsight.probe.plan import select_instances
    from clearsight.probe.posthoc.agreement import (
        human_agreement,
        judge_agreement,
        read_human_labels,
        store_validation,
    )
    from clearsight.probe.posthoc.protocol import AnalysisConfig, run_probe_analysis
    from clearsight.probe.protocol import PROBE, run_probe
    from clearsight.probe.records import load_transcripts
    from clearsight.probe.sources.hub import hub_instances
    from clearsight.probe.sources.layouts import LAYOUTS
    from clearsight.probe.sources.load import instances_from_jsonl, load_instances, resolve_source

#: The package's face: name -> "module:attribute", imported when first asked for (so importing
#: the package stays cheap: a command's --help never loads numpy's kernels or torch).
_EXPORTS = {
    "ProbeConfig": "clearsight.probe.config:ProbeConfig",
    "PROBE": "clearsight.probe.protocol:PROBE",
    "run_probe": "clearsight.probe.protocol:run_probe",
    "analyse_probe": "clearsight.probe.analysis:analyse_probe",
    "ProbeAnalysis": "clearsight.probe.analysis:ProbeAnalysis",
    "build_probe_report": "clearsight.probe.page.report:build_probe_report",
    "render_probe_report": "clearsight.probe.page.report:render_probe_report",
    "probe_tables": "clearsight.probe.page.report:probe_tables",
    "BuildConfig": "clearsight.probe.bench.protocol:BuildConfig",
    "build_stage1": "clearsight.probe.bench.protocol:build_stage1",
    "build_stage2": "clearsight.probe.bench.protocol:build_stage2",
    "write_instances": "clearsight.probe.bench.protocol:write_instances",
    "AnalysisConfig": "clearsight.probe.posthoc.protocol:AnalysisConfig",
    "run_probe_analysis": "clearsight.probe.posthoc.protocol:run_probe_analysis",
    "DistillConfig": "clearsight.probe.distill.train:DistillConfig",
    "distill": "clearsight.probe.distill.train:distill",
    # the sub-package clearsight.probe.distill shadows the name "distill" once it is imported
    "run_distill": "clearsight.probe.distill.train:distill",
    "select_instances": "clearsight.probe.plan:select_instances",
    "Instance": "clearsight.probe.instances:Instance",
    "OWN_FIELDS": "clearsight.probe.instances:OWN_FIELDS",
    "LAYOUTS": "clearsight.probe.sources.layouts:LAYOUTS",
    "instances_from_jsonl": "clearsight.probe.sources.load:instances_from_jsonl",
    "load_instances": "clearsight.probe.sources.load:load_instances",
    "resolve_source": "clearsight.probe.sources.load:resolve_source",
    "hub_instances": "clearsight.probe.sources.hub:hub_instances",
    "judge_agreement": "clearsight.probe.posthoc.agreement:judge_agreement",
    "human_agreement": "clearsight.probe.posthoc.agreement:human_agreement",
    "read_human_labels": "clearsight.probe.posthoc.agreement:read_human_labels",
    "store_validation": "clearsight.probe.posthoc.agreement:store_validation",
    "make_judge": "clearsight.probe.judges:make_judge",
    "load_transcripts": "clearsight.probe.records:load_transcripts",
}

__all__ = [
    "LAYOUTS",
    "OWN_FIELDS",
    "PROBE",
    "AnalysisConfig",
    "BuildConfig",
    "DistillConfig",
    "Instance",
    "ProbeAnalysis",
    "ProbeConfig",
    "analyse_probe",
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
    "probe_tables",
    "read_human_labels",
    "render_probe_report",
    "resolve_source",
    "run_distill",
    "run_probe",
    "run_probe_analysis",
    "select_instances",
    "store_validation",
    "write_instances",
]

__getattr__ = lazy_face(__name__, _EXPORTS)
