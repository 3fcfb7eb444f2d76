"""The sections of the sweep's report page: provenance header, per-task curves, crossings and W,
calibration, selective prediction, full sweep and controls, ImageNet-C on the physical axis,
the guard's estimate, qualitative examples.

Each function returns an HTML fragment built from :mod:`clearsight.pages.html`'s escaping
primitives; :func:`render_report` joins them into the page. Numbers come from the run's
:class:`~clearsight.sweep.analysis.SweepAnalysis`, figures from :mod:`clearsight.sweep.page.plots`,
the qualitative examples from :mod:`clearsight.sweep.page.examples`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from clearsight.faces.face import Appendix
from clearsight.pages.cost import cost_html, devices_line
from clearsight.pages.headline import headline_html
from clearsight.pages.html import esc, img, page
from clearsight.sweep.analysis import SweepAnalysis, first_task
from clearsight.sweep.page import plots
from clearsight.sweep.page.confidence import asked_panels, calibration_html, selective_html
from clearsight.sweep.page.examples import examples_section
from clearsight.sweep.page.guard import guard_section_html
from clearsight.sweep.page.headline import W_PAIRING_NOTES, sweep_caption, sweep_headline
from clearsight.sweep.page.imagenet import imagenet_section
from clearsight.sweep.page.labels import (
    depth_line,
    labelled_crossings,
)
from clearsight.sweep.page.tables import controls_html, crossings_html, sweep_html, wordings_html
from clearsight.sweep.results import (
    TASK_NAMES,
    RunData,
    level_label,
)

__all__ = ["DEPTH_NOTE", "render_report"]

DEPTH_NOTE = (
    "Visibility in metres is conditional on the assumed/estimated depth scale: a global depth "
    "error by a factor κ rescales every crossing visibility V* by κ and leaves W unchanged."
)


def render_report(analysis: SweepAnalysis, headline: pd.DataFrame, appendix: Appendix) -> str:
    """The whole HTML page of a sweep run's analysis, its ``headline`` table
    (:func:`~clearsight.sweep.numbers.headline.headline_table`) and the ``appendix`` the report
    adds."""
    data = analysis.data
    crossings = labelled_crossings(analysis.crossings, data.levels)
    sections = [_header(analysis, headline)]
    if data.records.empty:
        sections.append("<p class='warn'>This run has no successful sweep records yet.</p>")
    for task in data.tasks:
        sections.append(_task_section(analysis, crossings, task))
    if data.tasks:
        sections.append(imagenet_section(analysis, first_task(data)))
        sections.append(examples_section(data, analysis.examples))
    sections.append(guard_section_html(analysis.guard))  # empty without a guarded model
    sections.append(appendix.html)  # empty without re-asks
    sections.append(cost_html(analysis.cost))
    sections.append(_methods_note())
    return page(f"clearsight sweep report — {data.name}", "\n".join(sections))


def _nav(data: RunData) -> str:
    """Links to the sections."""
    links = [(f"task-{t}", TASK_NAMES.get(t, t)) for t in data.tasks]
    links += [("imagenet-c", "ImageNet-C"), ("examples", "examples"), ("cost", "cost")]
    links += [("methods", "methods")]
    return "<nav>" + "".join(f"<a href='#{esc(a)}'>{esc(t)}</a>" for a, t in links) + "</nav>"


def _depth_provenance(data: RunData) -> str:
    """Where the scenes' depth came from, in words."""
    config = data.manifest.get("config", {})
    source = str(config.get("scenes", data.records["scene.source"].dropna().unique()[:1]))
    scenes = sorted(set(data.records["scene"].dropna().astype(str)))
    if source == "coco":
        return f"estimated per image with {config.get('coco_depth_model', '(unknown model)')}"
    try:
        from clearsight.scenes.bundled import bundled_specs

        kinds = [bundled_specs()[s].depth.get("kind", "?") for s in scenes if s in bundled_specs()]
    except Exception:  # the catalogue is optional for reporting
        kinds = []
    if not kinds:
        return "unknown"
    measured = sum(k == "stereo" for k in kinds)
    parts = [
        f"measured (stereo disparity) for {measured} scene(s)" if measured else "",
        f"assumed (a stated layout) for {len(kinds) - measured} scene(s)"
        if len(kinds) > measured
        else "",
    ]
    return ", ".join(p for p in parts if p)


def _provenance(analysis: SweepAnalysis) -> list[tuple[str, str]]:
    """The header's key-value rows: what ran, on what, with which code and bootstrap."""
    data, boot = analysis.data, analysis.bootstrap
    m = data.manifest
    config = m.get("config", {})
    packages = ", ".join(f"{k} {v}" for k, v in sorted(m.get("packages", {}).items()))
    counts = data.counts
    levels = "; ".join(
        f"{a}: {', '.join(level_label(v) for v in lv)} m" for a, lv in data.levels.items()
    )
    return [
        ("run", f"{data.name} ({data.run_dir})"),
        ("created", m.get("created_at", "?")),
        ("models", ", ".join(data.models) or "(none)"),
        ("devices", devices_line(m)),
        (
            "scenes",
            f"{config.get('scenes', '?')}: {boot.n_scenes} scenes from {boot.n_clusters} photos "
            f"(the bootstrap's clusters), {analysis.n_targets} targets",
        ),
        ("depth", f"{_depth_provenance(data)}; {depth_line(analysis.depth)}"),
        ("arms and levels", levels or "(none)"),
        ("tasks / wordings", f"{', '.join(data.tasks)} / {', '.join(data.wordings())}"),
        ("W pairing", W_PAIRING_NOTES[boot.w_pairing]),
        ("ImageNet-C plasma", _plasma_line(config)),
        ("config hash", m.get("config_hash", "?")),
        ("git revision", m.get("git_revision") or "(unknown)"),
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


def _plasma_line(config: dict[str, Any]) -> str:
    """How the run drew ImageNet-C fog's plasma (its config's ``imagenet_c_plasma``; a run
    whose manifest names none drew one per scene)."""
    if "imagenet_c" not in config.get("controls", ()):
        return "(no ImageNet-C control)"
    if config.get("imagenet_c_plasma", "common") == "independent":
        return "one draw per scene and severity (independent, as the benchmark)"
    return "one draw per scene shared by its severities (common)"


def _record_warnings(data: RunData) -> list[str]:
    """Warnings about records left out of every number: failed ones (their most frequent
    reasons) and items that have not run."""
    counts = data.counts
    parts = []
    if len(data.failures):
        top = data.failures.head(5)
        items = "".join(f"<li>{esc(n)} × <code>{esc(msg)}</code></li>" for msg, n in top.items())
        more = len(data.failures) - len(top)
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


def _header(analysis: SweepAnalysis, headline: pd.DataFrame) -> str:
    """Title, the headline (``headline``, rendered by :mod:`clearsight.sweep.page.headline`),
    provenance key-value table, record counts and failure reasons."""
    data = analysis.data
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in _provenance(analysis))
    frame, sentences = sweep_headline(headline, data.levels)
    parts = [
        f"<h1>Visibility sweep — {esc(data.name)}</h1>",
        headline_html(frame, sentences, sweep_caption(analysis.bootstrap.w_pairing)),
        f"<p class='warn'>{esc(DEPTH_NOTE)}</p>",
        f"<table class='kv'>{rows}</table>",
        *_record_warnings(data),
        _nav(data),
    ]
    return "\n".join(parts)


def _task_section(analysis: SweepAnalysis, crossings: pd.DataFrame, task: str) -> str:
    """Curves, crossings (``crossings``: labelled), reliability, selective prediction, full
    sweep table and controls of one task."""
    data, numbers = analysis.data, analysis.tasks[task]
    name = TASK_NAMES.get(task, task)
    parts = [f"<h2 id='task-{esc(task)}'>{esc(name.capitalize())}</h2>"]
    if not data.arms:
        parts.append("<p class='note'>No fog or water records for this task.</p>")
    fig = plots.curves_figure(analysis, task)
    parts.append(
        img(
            fig,
            f"sweep curves, {task}",
            "Accuracy (abstentions count as wrong), internal confidence, verbalized confidence "
            "and abstain rate against visibility (log axis, clearest left; squares: clean "
            "images). Bands and error bars: 95 % percentile bootstrap intervals over source "
            "photos. Dotted: chance; dashed: blank-image accuracy (the accuracy floor). "
            "Triangles on the top edge: crossing visibilities V* of the plotted signals "
            "(hollow: censored).",
        )
    )
    parts.append(crossings_html(data, crossings, task, analysis.bootstrap.w_pairing))
    # reliability diagrams for the main task only: the verification table says the same
    figure = task == data.tasks[0]
    reliability = asked_panels(numbers.reliability, data.records[data.records["task"] == task])
    parts.append(calibration_html(numbers.calibration, reliability, task, figure))
    parts.append(selective_html(analysis, task, figure=figure))
    parts.append(wordings_html(numbers.wordings, data))
    parts.append(sweep_html(data, numbers.sweep, task))
    parts.append(controls_html(numbers.controls))
    return "\n".join(parts)


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
