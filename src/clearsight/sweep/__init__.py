"""The visibility sweep: physical fog and water on a metric depth map (docs/methods.md §1-§4).

Modules, in the order of the method: :mod:`~clearsight.sweep.config` (what a run asks for),
:mod:`~clearsight.sweep.conditions` (the arms, levels, controls and ImageNet-C stacks a scene
is rendered under), :mod:`~clearsight.sweep.specs` (what an item is made of),
:mod:`~clearsight.sweep.plan` (a config's scenes, questions and items, grouped into units),
:mod:`~clearsight.sweep.unit` (a unit's images and requests run into records, inside a worker),
:mod:`~clearsight.sweep.references.observer` (the reference observer and what it may know of an
item), :mod:`~clearsight.sweep.readouts` (letter probabilities, verbalized confidence and abstention
read from the stored raw output), :mod:`~clearsight.sweep.protocol` (the protocol value the
driver runs: stages, manifest, fingerprint), :mod:`~clearsight.sweep.results` (the records read
back as frames), and the paper's numbers: :mod:`~clearsight.sweep.analysis` (everything, as one
typed value) over :mod:`~clearsight.sweep.numbers.cells` and
:mod:`~clearsight.sweep.numbers.crossings` (curves, V* and W with one scene bootstrap),
:mod:`~clearsight.sweep.numbers.confidence` (calibration, selective prediction),
:mod:`~clearsight.sweep.images.equivalence` (ImageNet-C severities on the metre axis) and
:mod:`~clearsight.sweep.numbers.guarded` (the visibility guard's estimate); besides
:mod:`~clearsight.sweep.images.preview` (contact sheets of the conditions) and
:mod:`~clearsight.sweep.references.human` (people answering the sweep's questions). The report that
renders the analysis is :mod:`clearsight.sweep.page.report`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clearsight import lazy_face

if TYPE_CHECKING:
    from clearsight.sweep.analysis import SweepAnalysis, analyse_sweep
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.images.corruptions import summarise as summarise_equivalence
    from clearsight.sweep.images.equivalence import equivalence_table
    from clearsight.sweep.images.preview import contact_sheet
    from clearsight.sweep.page.report import build_sweep_report, summary_table
    from clearsight.sweep.plan import plan_sweep
    from clearsight.sweep.protocol import SWEEP, run_sweep
    from clearsight.sweep.scenes import scene_refs

#: The package's face: name -> "module:attribute", imported when first asked for (so importing
#: the package stays cheap: a command's --help never loads numpy's kernels or torch).
_EXPORTS = {
    "SweepConfig": "clearsight.sweep.config:SweepConfig",
    "SWEEP": "clearsight.sweep.protocol:SWEEP",
    "plan_sweep": "clearsight.sweep.plan:plan_sweep",
    "scene_refs": "clearsight.sweep.scenes:scene_refs",
    "run_sweep": "clearsight.sweep.protocol:run_sweep",
    "analyse_sweep": "clearsight.sweep.analysis:analyse_sweep",
    "SweepAnalysis": "clearsight.sweep.analysis:SweepAnalysis",
    "build_sweep_report": "clearsight.sweep.page.report:build_sweep_report",
    "summary_table": "clearsight.sweep.page.report:summary_table",
    "contact_sheet": "clearsight.sweep.images.preview:contact_sheet",
    "equivalence_table": "clearsight.sweep.images.equivalence:equivalence_table",
    "summarise_equivalence": "clearsight.sweep.images.corruptions:summarise",
}

__all__ = [
    "SWEEP",
    "SweepAnalysis",
    "SweepConfig",
    "analyse_sweep",
    "build_sweep_report",
    "contact_sheet",
    "equivalence_table",
    "plan_sweep",
    "run_sweep",
    "scene_refs",
    "summarise_equivalence",
    "summary_table",
]

__getattr__ = lazy_face(__name__, _EXPORTS)
