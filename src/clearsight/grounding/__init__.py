"""Trajectory grounding of verbalized confidence (docs/methods.md §5).

Modules, in the order of the method:

* :mod:`~clearsight.grounding.problems` — :class:`Problem` and loaders for local copies of the
  paper's benchmarks; :mod:`~clearsight.grounding.generator` — bundled verifiable problems.
* :mod:`~clearsight.grounding.trajectories` — the template (observation, reasoning, answer,
  confidence 0-10), generation, segmentation into vision / reasoning / answer spans.
* :mod:`~clearsight.grounding.elicit` — the 11-way numeral distribution at the confidence slot
  from ONE forward pass, with or without hidden (attention-masked) rationale tokens.
* :mod:`~clearsight.grounding.tgs` — TGS-self and the masking curve; TGS-pair.
* :mod:`~clearsight.grounding.bench` — TGS-Bench pairs (answer by rule, vision and reasoning by
  single-error injection, checked).
* :mod:`~clearsight.grounding.variation`, :mod:`~clearsight.grounding.hesitation` — content
  variation (JSD) and hesitation analysis.

Nothing here imports torch at import time; the model-facing functions take a loaded backend.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clearsight.grounding.bench_file import TgsBench, retention_table, write_bench
    from clearsight.grounding.build import BuildBenchConfig, read_bench, run_build_bench
    from clearsight.grounding.hub import hub_problems, hub_source, is_hub_benchmark
    from clearsight.grounding.problems import LAYOUTS, Problem, load_benchmark, load_jsonl
    from clearsight.grounding.protocol import GROUNDING, GroundingConfig, run_grounding
    from clearsight.report.grounding import build_grounding_report

#: The package's face: name -> "module:attribute", imported when first asked for (so importing
#: the package stays cheap: a command's --help never loads numpy's kernels or torch).
_EXPORTS = {
    "GroundingConfig": "clearsight.grounding.protocol:GroundingConfig",
    "GROUNDING": "clearsight.grounding.protocol:GROUNDING",
    "run_grounding": "clearsight.grounding.protocol:run_grounding",
    "build_grounding_report": "clearsight.report.grounding:build_grounding_report",
    "BuildBenchConfig": "clearsight.grounding.build:BuildBenchConfig",
    "run_build_bench": "clearsight.grounding.build:run_build_bench",
    "read_bench": "clearsight.grounding.build:read_bench",
    "write_bench": "clearsight.grounding.bench_file:write_bench",
    "retention_table": "clearsight.grounding.bench_file:retention_table",
    "TgsBench": "clearsight.grounding.bench_file:TgsBench",
    "Problem": "clearsight.grounding.problems:Problem",
    "LAYOUTS": "clearsight.grounding.problems:LAYOUTS",
    "load_benchmark": "clearsight.grounding.problems:load_benchmark",
    "load_jsonl": "clearsight.grounding.problems:load_jsonl",
    "hub_problems": "clearsight.grounding.hub:hub_problems",
    "hub_source": "clearsight.grounding.hub:hub_source",
    "is_hub_benchmark": "clearsight.grounding.hub:is_hub_benchmark",
}

__all__ = [
    "GROUNDING",
    "LAYOUTS",
    "BuildBenchConfig",
    "GroundingConfig",
    "Problem",
    "TgsBench",
    "build_grounding_report",
    "hub_problems",
    "hub_source",
    "is_hub_benchmark",
    "load_benchmark",
    "load_jsonl",
    "read_bench",
    "retention_table",
    "run_build_bench",
    "run_grounding",
    "write_bench",
]


def __getattr__(name: str) -> Any:
    """The face's ``name``, imported from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _EXPORTS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
