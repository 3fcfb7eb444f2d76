"""The visibility sweep: physical fog and water on a metric depth map (docs/methods.md §1-§4).

Modules, in the order of the method: :mod:`~clearsight.sweep.config` (what a run asks for),
:mod:`~clearsight.sweep.conditions` (the arms, levels,
controls and ImageNet-C stacks a scene is rendered under), :mod:`~clearsight.sweep.specs`
(what an item is made of), :mod:`~clearsight.sweep.protocol` (how items are planned, how a
scene's unit runs, the protocol value the driver runs),
:mod:`~clearsight.sweep.readouts` (letter probabilities, verbalized confidence and abstention
read from the stored raw output), :mod:`~clearsight.sweep.equivalence` (ImageNet-C severities on
the metre axis), :mod:`~clearsight.sweep.preview` (contact sheets of the conditions) and
:mod:`~clearsight.sweep.results` (the records read back as the frames a report renders).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clearsight.report.build import build_report as build_sweep_report
    from clearsight.report.build import summary_table
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.equivalence import equivalence_table
    from clearsight.sweep.equivalence import summarise as summarise_equivalence
    from clearsight.sweep.preview import contact_sheet
    from clearsight.sweep.protocol import SWEEP, plan_sweep, run_sweep, scene_refs

#: The package's face: name -> "module:attribute", imported when first asked for (so importing
#: the package stays cheap: a command's --help never loads numpy's kernels or torch).
_EXPORTS = {
    "SweepConfig": "clearsight.sweep.config:SweepConfig",
    "SWEEP": "clearsight.sweep.protocol:SWEEP",
    "plan_sweep": "clearsight.sweep.protocol:plan_sweep",
    "run_sweep": "clearsight.sweep.protocol:run_sweep",
    "build_sweep_report": "clearsight.report.build:build_report",
    "summary_table": "clearsight.report.build:summary_table",
    "scene_refs": "clearsight.sweep.protocol:scene_refs",
    "contact_sheet": "clearsight.sweep.preview:contact_sheet",
    "equivalence_table": "clearsight.sweep.equivalence:equivalence_table",
    "summarise_equivalence": "clearsight.sweep.equivalence:summarise",
}

__all__ = [
    "SWEEP",
    "SweepConfig",
    "build_sweep_report",
    "contact_sheet",
    "equivalence_table",
    "plan_sweep",
    "run_sweep",
    "scene_refs",
    "summarise_equivalence",
    "summary_table",
]


def __getattr__(name: str) -> Any:
    """The face's ``name``, imported from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _EXPORTS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
