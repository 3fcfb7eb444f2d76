"""The sections of the sweep's report page: provenance header, per-task curves, crossings and W,
calibration, selective prediction, full sweep and controls, ImageNet-C on the physical axis,
calibration under weather, the guard's estimate, qualitative examples.

Each section is a list of the page's parts (:data:`clearsight.pages.html.Part`): markup it
escapes with :mod:`clearsight.pages.html`'s primitives, and blocks (tables, figures, the
headline, the cost) that render themselves; :func:`sweep_page` composes them into one
:class:`~clearsight.pages.html.Page`, rendered once when the report writes it. Everything comes
from the run's :class:`~clearsight.sweep.analysis.SweepAnalysis` (nothing is read from the run),
figures from :mod:`clearsight.sweep.page.plots` and :mod:`clearsight.sweep.page.figures`.
"""

from __future__ import annotations

from typing import Final

import pandas as pd

from clearsight.faces.face import Appendix
from clearsight.pages.cost import Cost
from clearsight.pages.html import Figure, Frame, Page, Part, esc
from clearsight.sweep.analysis import SweepAnalysis, TaskAnalysis
from clearsight.sweep.numbers.facts import RunFacts
from clearsight.sweep.page import plots
from clearsight.sweep.page.accuracy import headline_curves
from clearsight.sweep.page.confidence import calibration_section, selective_section
from clearsight.sweep.page.corruptions import corruptions_section
from clearsight.sweep.page.examples import examples_section
from clearsight.sweep.page.headline import W_PAIRING_NOTES, headline_block
from clearsight.sweep.page.imagenet import imagenet_section
from clearsight.sweep.page.labels import depth_line
from clearsight.sweep.page.recalibration import recalibration_section
from clearsight.sweep.page.references import references_section
from clearsight.sweep.page.settings import settings_frame
from clearsight.sweep.page.tables import (
    controls_section,
    crossings_section,
    sweep_section,
    wordings_section,
)
from clearsight.sweep.results import TASK_NAMES, level_label

__all__ = ["DEPTH_NOTE", "SETTINGS_HEADING", "guard_section", "sweep_page"]

#: The heading of the run's Table III, on the page and in summary.md.
SETTINGS_HEADING: Final = "Fixed settings (Table III), from the run's configuration"

DEPTH_NOTE = (
    "Visibility in metres is conditional on the assumed/estimated depth scale: a global depth "
    "error by a factor κ rescales every crossing visibility V* by κ and leaves W unchanged."
)


def sweep_page(analysis: SweepAnalysis, appendix: Appendix) -> Page:
    """The whole page of a sweep run's analysis and the ``appendix`` the report adds, as a
    value: its sections composed here, rendered once when the report writes it."""
    run = analysis.run
    parts = _header(analysis)
    if not run.has_records:
        parts.append("<p class='warn'>This run has no successful sweep records yet.</p>")
    for task, numbers in analysis.tasks.items():
        parts += _task_section(analysis, numbers, task == run.tasks[0])
    if run.first_task:
        parts += imagenet_section(analysis, run.first_task)
        parts += corruptions_section(analysis, run.first_task)
        parts += recalibration_section(analysis)
        parts += references_section(analysis, run.first_task)
        parts += examples_section(analysis.examples)
    parts += guard_section(analysis.guard)  # nothing without a guarded model
    parts.append(appendix.html)  # empty without re-asks
    parts.append(Cost(analysis.cost))
    parts.append(_methods_note())
    return Page(f"clearsight sweep report — {run.name}", parts)


def _nav(run: RunFacts) -> str:
    """Links to the sections."""
    links = [("settings", "settings"), *((f"task-{t}", TASK_NAMES.get(t, t)) for t in run.tasks)]
    links += [("imagenet-c", "ImageNet-C"), ("calibration-weather", "calibration under weather")]
    links += [("examples", "examples"), ("cost", "cost")]
    links += [("methods", "methods")]
    return "<nav>" + "".join(f"<a href='#{esc(a)}'>{esc(t)}</a>" for a, t in links) + "</nav>"


def _provenance(analysis: SweepAnalysis) -> list[tuple[str, str]]:
    """The header's key-value rows: what ran, on what, with which code and bootstrap."""
    run, boot = analysis.run, analysis.bootstrap
    packages = ", ".join(f"{k} {v}" for k, v in run.packages)
    counts = run.counts
    levels = "; ".join(
        f"{a}: {', '.join(level_label(v) for v in lv)} m" for a, lv in run.levels.items()
    )
    return [
        ("run", f"{run.name} ({run.run_dir})"),
        ("created", run.created),
        ("models", ", ".join(run.models) or "(none)"),
        ("devices", run.devices),
        (
            "scenes",
            f"{run.scene_set}: {boot.n_scenes} scenes from {boot.n_clusters} photos "
            f"(the bootstrap's clusters), {analysis.n_targets} targets",
        ),
        ("depth", f"{run.depth_source}; {depth_line(analysis.depth)}"),
        ("arms and levels", levels or "(none)"),
        ("tasks / wordings", f"{', '.join(run.tasks)} / {', '.join(run.wordings)}"),
        ("W pairing", W_PAIRING_NOTES[boot.w_pairing]),
        ("ImageNet-C plasma", _PLASMA[run.plasma]),
        ("config hash", run.config_hash),
        ("git revision", run.git_revision),
        ("packages", packages or "(not recorded)"),
        (
            "bootstrap",
            f"B = {boot.n_boot} resamples of the {boot.n_clusters} source photos with replacement "
            "(the scenes cut from one photo together), "
            f"seed {boot.seed}, {round(100 * boot.level)} % percentile intervals",
        ),
        (
            "records",
            f"{counts.get('ok', 0)} ok, {counts.get('failed', 0)} failed, "
            f"{counts.get('items', 0) - counts.get('ok', 0) - counts.get('failed', 0)} not run, "
            f"of {counts.get('items', 0)} items",
        ),
    ]


#: How the run drew ImageNet-C fog's plasma (:class:`~clearsight.sweep.numbers.facts.RunFacts`'
#: ``plasma``), in words.
_PLASMA: Final = {
    "": "(no ImageNet-C control)",
    "independent": "one draw per scene and severity (independent, as the benchmark)",
    "common": "one draw per scene shared by its severities (common)",
}


def _record_warnings(run: RunFacts) -> list[str]:
    """Warnings about records left out of every number: failed ones (their most frequent
    reasons) and items that have not run."""
    counts = run.counts
    parts = []
    if run.failures:
        top = run.failures[:5]
        items = "".join(f"<li>{esc(n)} × <code>{esc(msg)}</code></li>" for msg, n in top)
        more = len(run.failures) - len(top)
        extra = f"<p class='note'>… and {more} other message(s).</p>" if more > 0 else ""
        parts.append(
            f"<p class='warn'>{esc(counts.get('failed', 0))} failed record(s) are left out of "
            f"every number below. Most frequent reasons:</p><ul>{items}</ul>{extra}"
        )
    # the store counts failed items as pending (a rerun retries them); these never ran at all
    not_run = counts.get("items", 0) - counts.get("ok", 0) - counts.get("failed", 0)
    if not_run > 0:
        parts.append(
            f"<p class='warn'>The run is incomplete: {esc(not_run)} item(s) have not run yet "
            "and are not reported.</p>"
        )
    return parts


def _header(analysis: SweepAnalysis) -> list[Part]:
    """Title, the headline (the analysis' table, rendered by
    :mod:`clearsight.sweep.page.headline`), provenance key-value table, record counts and
    failure reasons, the links, and the run's fixed settings (Table III,
    :func:`~clearsight.sweep.page.settings.settings_frame`)."""
    run = analysis.run
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in _provenance(analysis))
    return [
        f"<h1>Visibility sweep — {esc(run.name)}</h1>",
        headline_block(analysis, headline_curves(analysis)),
        f"<p class='warn'>{esc(DEPTH_NOTE)}</p>",
        f"<table class='kv'>{rows}</table>",
        *_record_warnings(run),
        _nav(run),
        f"<h2 id='settings'>{esc(SETTINGS_HEADING)}</h2>",
        Frame(settings_frame(analysis.data.manifest.get("config", {}), analysis.bootstrap)),
    ]


def _task_section(analysis: SweepAnalysis, numbers: TaskAnalysis, figure: bool) -> list[Part]:
    """Curves, crossings, reliability (diagrams if ``figure``: the main task's, the
    verification table says the same), selective prediction, full sweep table and controls of
    one task."""
    run, task = analysis.run, numbers.task
    name = TASK_NAMES.get(task, task)
    parts: list[Part] = [f"<h2 id='task-{esc(task)}'>{esc(name.capitalize())}</h2>"]
    if not run.arms:
        parts.append("<p class='note'>No fog or water records for this task.</p>")
    fig = plots.curves_figure(analysis, numbers)
    parts.append(
        Figure(
            fig,
            f"sweep curves, {task}",
            "Accuracy (abstentions count as wrong), internal confidence, verbalized confidence "
            "and abstain rate against visibility (log axis, clearest left; squares: clean "
            "images). Bands and error bars: 95 % percentile bootstrap intervals over source "
            "photos. Dotted: chance; dashed: blank-image accuracy (the accuracy floor). "
            "Thick grey: the reference observers' accuracy in the same wording and arm (those "
            "the run has; the limits of seeing). "
            "Triangles on the top edge: crossing visibilities V* of the plotted signals "
            "(hollow: censored).",
        )
    )
    parts += crossings_section(run, analysis.labelled, numbers, analysis.bootstrap.w_pairing)
    parts += calibration_section(numbers, figure)
    parts += selective_section(run, numbers, figure=figure)
    parts += wordings_section(numbers.wordings, run)
    parts += sweep_section(run, numbers)
    parts += controls_section(numbers.controls)
    return parts


def guard_section(tab: pd.DataFrame) -> list[Part]:
    """The report's guard section: the visibility guard's estimate-error table against the
    true visibility of a sweep, per guarded model and arm
    (:func:`~clearsight.sweep.numbers.guarded.guard_estimate_table`), with what its columns
    mean; nothing for a run without guarded models (so the page can always ask for it)."""
    if tab.empty:
        return []
    note = (
        "The guard's visibility estimate V̂ (dark channel prior with the scene's depth, "
        "docs/guard.md) against the true V of each shown fog/water image: its error "
        "log10(V̂ / V) in decades, median and quartiles over the images with a finite V̂ "
        "(n_finite of n_images), and the share of images it abstained on."
    )
    return [
        "<h2 id='guard'>The visibility guard's estimate</h2>",
        f"<p class='note'>{esc(note)}</p>",
        Frame(tab),
    ]


def _methods_note() -> str:
    """Definitions the numbers follow (docs/methods.md §3-4)."""
    items = [
        "Accuracy: share correct; abstentions count as not correct ('acc. answered' excludes "
        "them).",
        "Internal confidence: probability of the best content option from the letter "
        "distribution at the answer position (abstain letter excluded, renormalised).",
        "Verbalized confidence: the 0-100 number the model states, read on [0, 1]; unparsed "
        "replies are left out of its mean and counted in 'parsed'.",
        "Crossing floors: accuracy → blank-image accuracy of the same model, task and wording; "
        "confidences → 1/k (k content options); abstain rate → 1.0.",
        "Intervals: 95 % percentile bootstrap resampling scenes (images) with replacement; every "
        "curve, crossing and W of one report uses the same resampled scene sets.",
        "Calibration (ECE, MCE: 10 equal-width bins, right-closed; Brier; AUROC) on answered "
        "items.",
    ]
    lis = "".join(f"<li>{esc(t)}</li>" for t in items)
    return f"<h2 id='methods'>Definitions</h2><ul class='note'>{lis}</ul>"
