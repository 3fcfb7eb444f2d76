"""Trajectory grounding of verbalized confidence (docs/methods.md §5).

Modules, in the order of the method:

* :mod:`~clearsight.grounding.config` — :class:`GroundingConfig`, a run's configuration;
  :mod:`~clearsight.grounding.specs` — its five item kinds as typed specs.
* :mod:`~clearsight.grounding.problems.problem` — :class:`Problem`, answers and problem files;
  :mod:`~clearsight.grounding.problems.hub` — the paper's benchmarks (JSONL layouts or hub
  snapshots); :mod:`~clearsight.grounding.problems.bundled` — bundled verifiable problems,
  :mod:`~clearsight.grounding.problems.images` their pictures.
* :mod:`~clearsight.grounding.trajectories.trajectory` — the template (observation, reasoning,
  answer, confidence 0-10), parsing, segmentation into vision / reasoning / answer spans;
  :mod:`~clearsight.grounding.trajectories.templates` — the model-native templates (think block,
  VL-Calibration tags) and a run's choice among them;
  :mod:`~clearsight.grounding.trajectories.written` — native trajectories segmented as written;
  :mod:`~clearsight.grounding.trajectories.generation` — a model's own trajectories.
* :mod:`~clearsight.grounding.confidence.elicit` — the 11-way numeral distribution at the confidence
  slot from ONE forward pass (the backend's masked scoring), with or without hidden rationale
  tokens; :mod:`~clearsight.grounding.confidence.numerals`,
  :mod:`~clearsight.grounding.confidence.methods` — the numeral read-out and the calibration
  methods' read-outs; :mod:`~clearsight.grounding.confidence.readout_table` — the read-outs side
  by side (the paper's Table 2).
* :mod:`~clearsight.grounding.bench.pairs` — TGS-Bench pairs (answer by rule, vision and
  reasoning by single-error injection, checked); :mod:`~clearsight.grounding.bench.file` — its
  file, :mod:`~clearsight.grounding.bench.use` — its use in a run and report;
  :mod:`~clearsight.grounding.bench.protocol` (with its ``specs``, ``unit`` and
  ``results``) — building it for any problem set.
* :mod:`~clearsight.grounding.variation`, :mod:`~clearsight.grounding.hesitation` — content
  variation (JSD) and hesitation events.
* :mod:`~clearsight.grounding.plan` (items per stage), :mod:`~clearsight.grounding.unit` (a
  unit into records), :mod:`~clearsight.grounding.protocol` (stages, manifest,
  :func:`run_grounding`).
* :mod:`~clearsight.grounding.results` — a finished run read back;
  :mod:`~clearsight.grounding.tgs` — TGS-self, the masking curve, TGS-pair and their intervals;
  :mod:`~clearsight.grounding.analysis` — the paper's numbers of a run
  (:func:`analyse_grounding`), which :mod:`clearsight.grounding.page.report` renders.

Nothing here imports torch at import time; the model-facing functions take a loaded backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clearsight import lazy_face

if TYPE_CHECKING:
    from clearsight.grounding.analysis import GroundingAnalysis, analyse_grounding
    from clearsight.grounding.bench.file import TgsBench, write_bench
    from clearsight.grounding.bench.protocol import BuildBenchConfig, run_build_bench
    from clearsight.grounding.bench.results import read_bench
    from clearsight.grounding.bench.use import retention_table
    from clearsight.grounding.config import GroundingConfig
    from clearsight.grounding.problems.hub import (
        hub_problems,
        hub_source,
        is_hub_benchmark,
        load_benchmark,
    )
    from clearsight.grounding.problems.problem import LAYOUTS, Problem, load_jsonl
    from clearsight.grounding.protocol import GROUNDING, run_grounding

#: The package's face: name -> "module:attribute", imported when first asked for (so importing
#: the package stays cheap: a command's --help never loads numpy's kernels or torch).
_EXPORTS = {
    "GroundingConfig": "clearsight.grounding.config:GroundingConfig",
    "GROUNDING": "clearsight.grounding.protocol:GROUNDING",
    "run_grounding": "clearsight.grounding.protocol:run_grounding",
    "analyse_grounding": "clearsight.grounding.analysis:analyse_grounding",
    "GroundingAnalysis": "clearsight.grounding.analysis:GroundingAnalysis",
    "build_grounding_report": "clearsight.grounding.page.report:build_grounding_report",
    "render_grounding_report": "clearsight.grounding.page.report:render_grounding_report",
    "BuildBenchConfig": "clearsight.grounding.bench.protocol:BuildBenchConfig",
    "run_build_bench": "clearsight.grounding.bench.protocol:run_build_bench",
    "read_bench": "clearsight.grounding.bench.results:read_bench",
    "write_bench": "clearsight.grounding.bench.file:write_bench",
    "retention_table": "clearsight.grounding.bench.use:retention_table",
    "TgsBench": "clearsight.grounding.bench.file:TgsBench",
    "Problem": "clearsight.grounding.problems.problem:Problem",
    "LAYOUTS": "clearsight.grounding.problems.problem:LAYOUTS",
    "load_jsonl": "clearsight.grounding.problems.problem:load_jsonl",
    "load_benchmark": "clearsight.grounding.problems.hub:load_benchmark",
    "hub_problems": "clearsight.grounding.problems.hub:hub_problems",
    "hub_source": "clearsight.grounding.problems.hub:hub_source",
    "is_hub_benchmark": "clearsight.grounding.problems.hub:is_hub_benchmark",
}

__all__ = [
    "GROUNDING",
    "LAYOUTS",
    "BuildBenchConfig",
    "GroundingAnalysis",
    "GroundingConfig",
    "Problem",
    "TgsBench",
    "analyse_grounding",
    "build_grounding_report",
    "hub_problems",
    "hub_source",
    "is_hub_benchmark",
    "load_benchmark",
    "load_jsonl",
    "read_bench",
    "render_grounding_report",
    "retention_table",
    "run_build_bench",
    "run_grounding",
    "write_bench",
]

__getattr__ = lazy_face(__name__, _EXPORTS)
