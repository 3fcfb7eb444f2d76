"""The sections of the sweep's report page: provenance header, per-task curves, crossings and W,
calibration, selective prediction, full sweep and controls, ImageNet-C on the physical axis,
the guard's estimate, qualitative examples.

Each function returns an HTML fragment built from :mod:`clearsight.report.html`'s escaping
primitives; :func:`render_report` joins them into the page. Numbers come from the run's
:class:`~clearsight.sweep.analysis.SweepAnalysis`, figures from :mod:`clearsight.report.plots`,
the qualitative examples from :mod:`clearsight.report.examples`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from clearsight.report import plots
from clearsight.report.cost import cost_html, devices_line
from clearsight.report.examples import examples_section
from clearsight.report.guard import guard_section_html
from clearsight.report.headline import (
    W_PAIRING_NOTES,
    headline_html,
    sweep_caption,
    sweep_headline,
)
from clearsight.report.html import Col, details, esc, fmt_ci, fmt_num, fmt_range, img, page, table
from clearsight.report.labels import (
    SIGNAL_LABELS,
    depth_line,
    interval,
    interval_m,
    labelled_crossings,
)
from clearsight.report.reproducibility import reproducibility_html
from clearsight.sweep.analysis import SweepAnalysis
from clearsight.sweep.headline import headline_table
from clearsight.sweep.numbers.confidence import ReliabilityPanel
from clearsight.sweep.references.observer import observer_note
from clearsight.sweep.results import (
    TASK_NAMES,
    RunData,
    confidence_signal,
    is_person,
    is_verbal,
    level_label,
    primary_wording,
)

__all__ = ["DEPTH_NOTE", "render_report"]

DEPTH_NOTE = (
    "Visibility in metres is conditional on the assumed/estimated depth scale: a global depth "
    "error by a factor κ rescales every crossing visibility V* by κ and leaves W unchanged."
)

#: Rows of a frame keyed by a tuple of their key columns (cheap cell lookups for wide tables).
Lookup = dict[tuple[Any, ...], dict[Any, Any]]


def render_report(analysis: SweepAnalysis, *, thumbnails: bool = True) -> str:
    """The whole HTML page of a sweep run's analysis."""
    data = analysis.data
    crossings = labelled_crossings(analysis.crossings, data.levels)
    sections = [_header(analysis)]
    if data.records.empty:
        sections.append("<p class='warn'>This run has no successful sweep records yet.</p>")
    for task in data.tasks:
        sections.append(_task_section(analysis, crossings, task))
    if data.tasks:
        task = "identify" if "identify" in data.tasks else data.tasks[0]
        sections.append(_imagenet_section(analysis, task))
        sections.append(examples_section(data, task, thumbnails))
    sections.append(guard_section_html(analysis.guard))  # empty without a guarded model
    sections.append(reproducibility_html(data.run_dir))  # empty without re-asks
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


def _header(analysis: SweepAnalysis) -> str:
    """Title, the headline (:mod:`clearsight.report.headline`), provenance key-value table,
    record counts and failure reasons."""
    data = analysis.data
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in _provenance(analysis))
    frame, sentences = sweep_headline(headline_table(analysis), data.levels)
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
    parts.append(_crossings_html(data, crossings, task, analysis.bootstrap.w_pairing))
    # reliability diagrams for the main task only: the verification table says the same
    figure = task == data.tasks[0]
    reliability = asked_panels(numbers.reliability, data.records[data.records["task"] == task])
    parts.append(_calibration_html(numbers.calibration, reliability, task, figure))
    parts.append(_selective_html(analysis, task, figure=figure))
    parts.append(_wordings_html(numbers.wordings, data))
    parts.append(_sweep_html(data, numbers.sweep, task))
    parts.append(_controls_html(numbers.controls))
    return "\n".join(parts)


def _crossing_cell(lookup: Lookup, wording: str, signal: str, what: str) -> Any:
    """A cell getter for the headline table: V*, its CI, W or W's CI of one signal."""

    def cell(row: Any) -> str:
        r = lookup.get((row.model, row.arm, wording, signal))
        if r is None and signal == "verbal_conf" and is_person(row.model):
            # a person's stated confidence comes with their letter answers, in that wording
            mine = (
                v for k, v in lookup.items() if k[:2] == (row.model, row.arm) and k[3] == signal
            )
            r = next(mine, None)
        if r is None:
            return "–"
        if r["censored"] == "undefined":  # no number to show: say why in the V* cell
            return str(r["note"] or "n/a") if what == "v" else "–"
        return {
            "v": str(r["v_star"]),
            "v_ci": interval_m(float(r["v_low_m"]), float(r["v_high_m"])),
            "w": _with_reason(str(r["w_display"]), row.model, wording, signal),
            "w_ci": interval(float(r["w_low"]), float(r["w_high"])),
        }[what]

    return cell


def _with_reason(w_display: str, model: str, wording: str, signal: str) -> str:
    """A W as shown, with the reason beside it where the reference observer's W is not about 0
    by design (:func:`clearsight.sweep.references.observer.observer_note`)."""
    reason = observer_note(model, wording, signal)
    return f"{w_display} ({reason})" if reason and w_display else w_display


def _headline_html(data: RunData, cr: pd.DataFrame, task: str) -> str:
    """Per model × arm: accuracy V* of the main wording, then V* and W of each awareness signal."""
    wordings = data.wordings(task)
    letter = primary_wording(wordings, verbal=False)
    verbal = primary_wording(wordings, verbal=True)
    main = letter or verbal
    if main is None:
        return ""
    aware: list[tuple[str, str]] = []
    if letter is not None:
        aware.append((letter, "internal_conf"))
    if verbal is not None:
        aware.append((verbal, "verbal_conf"))
    aware += [(w, "abstain") for w in wordings if not is_verbal(w)] or [(main, "abstain")]
    lookup: Lookup = {
        (r["model"], r["arm"], r["wording"], r["signal"]): r for r in cr.to_dict("records")
    }
    frame = pd.DataFrame([(m, a) for m in data.models for a in data.arms], columns=["model", "arm"])
    acc_group = f"accuracy ({main})"
    cols = [
        Col("model", lambda r: r.model, text=True),
        Col("arm", lambda r: r.arm, text=True),
        Col("V*_acc", _crossing_cell(lookup, main, "accuracy", "v"), group=acc_group),
        Col("95% CI", _crossing_cell(lookup, main, "accuracy", "v_ci"), group=acc_group),
    ]
    for wording, signal in aware:
        group = f"{SIGNAL_LABELS[signal]} ({wording})"
        cols += [
            Col("V*", _crossing_cell(lookup, wording, signal, "v"), group=group),
            Col("W", _crossing_cell(lookup, wording, signal, "w"), group=group),
            Col("W 95% CI", _crossing_cell(lookup, wording, signal, "w_ci"), group=group),
        ]
    return table(frame, cols)


def _crossings_html(data: RunData, crossings: pd.DataFrame, task: str, pairing: str) -> str:
    """The headline crossings/W table and the full one of one task (``crossings``: labelled,
    :func:`~clearsight.report.labels.labelled_crossings`; ``pairing``: the analysis' W
    pairing, stated above the tables)."""
    cr = crossings[crossings["task"] == task]
    if cr.empty:
        return "<h3>Crossings and W</h3><p class='note'>No sweep levels to cross.</p>"
    cols = [
        Col("model", lambda r: r.model, text=True),
        Col("arm", lambda r: r.arm, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("signal", lambda r: SIGNAL_LABELS.get(r.signal, r.signal), text=True),
        Col("clean", lambda r: fmt_num(r.clean)),
        Col("floor", lambda r: f"{fmt_num(r.floor)} ({r.floor_source})"),
        Col("V*", lambda r: r.v_star),
        Col("V* 95% CI", lambda r: interval_m(r.v_low_m, r.v_high_m)),
        Col("W", lambda r: _with_reason(r.w_display, r.model, r.wording, r.signal)),
        Col("W 95% CI", lambda r: interval(r.w_low, r.w_high)),
        Col("W bound", lambda r: r.w_bound),
        Col(
            "W against", lambda r: f"accuracy of {r.w_accuracy}" if r.w_accuracy else "", text=True
        ),
        Col("note", lambda r: r.note, text=True),
    ]
    return (
        "<h3>Crossing visibilities and blind-spot width W</h3>"
        "<p class='note'>V*: where the signal first gets past half-way between its clean value "
        "and its floor, interpolated in log V; '≤ 1.95 m' never crossed (censored below), "
        "'≥ 250 m' already crossed at the clearest level. W = log10(V*_acc / V*_aware); "
        "W &gt; 0: accuracy fails at a clearer level than the awareness signal reacts (a blind "
        "spot). Bounds: a censored crossing makes W a lower or upper bound, or undetermined. "
        f"{esc(W_PAIRING_NOTES[pairing])} The full table names each W's accuracy "
        "('W against').</p>"
        + _headline_html(data, cr, task)
        + details(
            "All crossings: every wording and signal, with clean values and floors", table(cr, cols)
        )
    )


def asked_panels(
    rows: Sequence[Sequence[ReliabilityPanel]], records: pd.DataFrame
) -> list[tuple[ReliabilityPanel, ...]]:
    """The reliability diagrams of the arms each model was shown and the wordings it was asked
    (``records``: the task's): no empty panel for what did not run (a wording asked whose
    replies carry no confidence keeps its panel, which says so)."""
    shown = set(zip(records["model"], records["condition"], strict=True))
    asked = set(zip(records["model"], records["wording"], strict=True))
    kept = (
        tuple(p for p in row if (p.model, p.wording) in asked)
        for row in rows
        if row and (row[0].model, row[0].arm) in shown
    )
    return [row for row in kept if row]


def _calibration_html(
    cal: pd.DataFrame,
    reliability: Sequence[Sequence[ReliabilityPanel]],
    task: str,
    figure: bool = True,
) -> str:
    """Reliability diagrams (if ``figure``) and the ECE/MCE/Brier/AUROC table with intervals."""
    fig = plots.reliability_figure(reliability) if figure else None
    parts = ["<h3>Calibration</h3>"]
    parts.append(
        img(
            fig,
            f"reliability diagrams, {task}",
            "Reliability diagrams (10 equal-width bins, answered items): bin accuracy against "
            "mean confidence, pooled over the clean images and every level of the arm, and at "
            "the two murkiest levels. Marker area ∝ items in the bin; dotted: perfect calibration.",
        )
    )
    if cal.empty:
        return "\n".join(parts)
    cols = [
        *_cell_cols(),
        Col("mean conf", lambda r: fmt_num(r.mean_conf)),
        Col("accuracy", lambda r: fmt_num(r.accuracy)),
        Col("ECE [95% CI]", lambda r: fmt_ci(r.ece, r.ece_low, r.ece_high, 3)),
        Col("MCE [95% CI]", lambda r: fmt_ci(r.mce, r.mce_low, r.mce_high, 3)),
        Col("Brier [95% CI]", lambda r: fmt_ci(r.brier, r.brier_low, r.brier_high, 3)),
        Col("AUROC [95% CI]", lambda r: fmt_ci(r.auroc, r.auroc_low, r.auroc_high, 3)),
    ]
    pooled = cal[cal["level"].isin(["pooled"]) | cal["level"].str.startswith("murkiest")]
    parts.append(
        "<p class='note'>Scored on answered items (an abstention has no chosen option to be "
        "right about); AUROC '–' where every scored answer is right or every one wrong. "
        "Brackets: 95 % percentile bootstrap intervals over source photos.</p>"
    )
    parts.append(table(pooled, cols))
    parts.append(details("ECE, MCE, Brier and AUROC at every level", table(cal, cols)))
    return "\n".join(parts)


def _cell_cols() -> list[Col]:
    """The columns that name a cell of a confidence table and its item counts."""
    return [
        Col("model", lambda r: r.model, text=True),
        Col("arm", lambda r: r.arm, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("signal", lambda r: SIGNAL_LABELS.get(r.signal, r.signal), text=True),
        Col("level", lambda r: r.level, text=True),
        Col("n", lambda r: fmt_num(r.n, 0)),
        Col("n scored", lambda r: fmt_num(r.n_scored, 0)),
    ]


def _selective_html(analysis: SweepAnalysis, task: str, figure: bool = True) -> str:
    """Risk-coverage curves and AURC against visibility (if ``figure``), and AURC and E-AURC
    of each confidence signal gating the answers, per level."""
    sel = analysis.tasks[task].selective
    if sel.empty:
        return ""
    fig = plots.selective_figure(analysis, task) if figure else None
    cols = [
        *_cell_cols(),
        Col("AURC [95% CI]", lambda r: fmt_ci(r.aurc, r.aurc_low, r.aurc_high, 3)),
        Col("E-AURC [95% CI]", lambda r: fmt_ci(r.e_aurc, r.e_aurc_low, r.e_aurc_high, 3)),
    ]
    pooled = sel[sel["level"].isin(["pooled"]) | sel["level"].str.startswith("murkiest")]
    return "\n".join(
        [
            "<h3>Selective prediction</h3>",
            "<p class='note'>Accepting the answered items whose confidence is at least a "
            "threshold, at every threshold: AURC is the area under the risk (error share of "
            "the accepted) against coverage (share accepted) curve, E-AURC its excess over the "
            "best ordering of the same answers (0: every right answer above every wrong one). "
            "Lower is better. Brackets: 95 % percentile bootstrap intervals over source "
            "photos.</p>",
            img(
                fig,
                f"risk-coverage curves and AURC against visibility, {task}",
                "Risk (error share of the accepted answers) against coverage for the main "
                "letter wording's internal confidence and the main verbal wording's verbalized "
                "confidence, at the clean images, the middle level and the murkiest level; "
                "right: each signal's AURC at every level with its 95 % photo-bootstrap "
                "interval.",
            ),
            table(pooled, cols),
            details("AURC and E-AURC at every level", table(sel, cols)),
        ]
    )


def _wordings_html(wordings: pd.DataFrame, data: RunData) -> str:
    """Table VI: the verbalized wordings on each model's matched images, at the clean images
    and the murkiest level of each arm (every level in the collapsed table)."""
    if wordings.empty or wordings["wording"].nunique() < 2:
        return ""
    murkiest = {(arm, lv[-1]) for arm, lv in data.levels.items()}
    keys = zip(wordings["condition"], wordings["x"], strict=True)
    shown = wordings[[c == "clean" or (c, x) in murkiest for c, x in keys]]
    cols = [
        Col("model", lambda r: r.model, text=True),
        Col("condition", lambda r: r.condition, text=True),
        Col("V (m)", lambda r: r.level, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("scenes", lambda r: fmt_num(r.n_scenes, 0)),
        Col("n", lambda r: fmt_num(r.n, 0)),
        Col("accuracy", lambda r: fmt_num(r.accuracy)),
        Col("verbal conf", lambda r: fmt_num(r.verbal_conf)),
        Col("parsed", lambda r: fmt_num(r.verbal_parsed)),
    ]
    return (
        "<h3>Verbalized wordings on matched images (Table VI)</h3>"
        "<p class='note'>Each model's verbalized wordings compared on the same scenes: those it "
        "answered in every verbalized wording it was asked ('scenes'), so a difference between "
        "rows is the wording's, not the images'. Clean images and the murkiest level of each "
        "arm; every level below.</p>"
        + table(shown, cols)
        + details("Every level", table(wordings, cols), open_=False)
    )


def _sweep_html(data: RunData, sweep: pd.DataFrame, task: str) -> str:
    """The full sweep table, one table per model × arm, wordings side by side."""
    if sweep.empty:
        return ""
    blocks = []
    for model in data.models:
        for arm in data.arms:
            sub = sweep[(sweep["model"] == model) & sweep["condition"].isin(["clean", arm])]
            if sub.empty:
                continue
            blocks.append(f"<h4>{esc(model)} — {esc(arm)}</h4>" + _wide_sweep(sub, task, model))
    return "<h3>Full sweep</h3>" + details(
        "Accuracy, confidences and abstain rate at every level, per wording (Tables IX/X)",
        "\n".join(blocks),
        open_=False,
    )


def _wide_sweep(sub: pd.DataFrame, task: str, model: str) -> str:
    """Rows: clean + levels; column groups: wordings (the confidence each reads for
    ``model``: :func:`~clearsight.sweep.results.confidence_signal`)."""
    wordings = list(dict.fromkeys(sub["wording"]))
    levels = list(dict.fromkeys(sub["level"]))
    idx: Lookup = {(r["level"], r["wording"]): r for r in sub.to_dict("records")}
    rows = pd.DataFrame({"level": levels})
    cols = [Col("V (m)", lambda r: r.level, text=True)]
    for w in wordings:
        conf = confidence_signal(model, w)
        fields: list[tuple[str, str, int]] = [("acc", "accuracy", 2)]
        if task == "verify":
            fields += [("acc true", "acc_true", 2), ("acc distr.", "acc_distractor", 2)]
        fields += [("conf", conf, 2)]
        if is_verbal(w):
            fields.append(("parsed", "verbal_parsed", 2))
        fields += [("abstain", "abstain_rate", 2), ("n", "n", 0)]
        for header, field, digits in fields:
            cols.append(Col(header, _lookup(idx, w, field, digits), group=w))
    return table(rows, cols)


def _lookup(idx: Lookup, wording: str, field: str, digits: int) -> Any:
    """A cell getter reading ``field`` of (row.level, wording) from ``idx``."""

    def cell(row: Any) -> str:
        r = idx.get((row.level, wording))
        return "–" if r is None else fmt_num(r.get(field), digits)

    return cell


def _controls_html(controls: pd.DataFrame) -> str:
    """Clean, blank and shuffled images against chance."""
    if controls.empty:
        return "<h3>Controls</h3><p class='note'>No control conditions in this run.</p>"
    cols = [
        Col("model", lambda r: r.model, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("condition", lambda r: r.condition, text=True),
        Col("n", lambda r: fmt_num(r.n, 0)),
        Col("accuracy [95% CI]", lambda r: fmt_ci(r.accuracy, r.acc_low, r.acc_high)),
        Col("acc. answered", lambda r: fmt_num(r.accuracy_answered)),
        Col("internal conf", lambda r: fmt_num(r.internal_conf)),
        Col("verbal conf", lambda r: fmt_num(r.verbal_conf)),
        Col("abstain", lambda r: fmt_num(r.abstain_rate)),
        Col("chance", lambda r: fmt_num(r.chance)),
    ]
    return (
        "<h3>Controls</h3><p class='note'>Blank: a mid-grey image with the box kept; shuffled: "
        "another scene's clean pixels and box. Near-chance accuracy on both says the question "
        "cannot be solved from the box or the category prior alone.</p>" + table(controls, cols)
    )


def _imagenet_section(analysis: SweepAnalysis, task: str) -> str:
    """Fig. 7 and the severity table."""
    data = analysis.data
    name = esc(TASK_NAMES.get(task, task))
    head = f"<h2 id='imagenet-c'>ImageNet-C fog on the physical axis — {name}</h2>"
    tab = analysis.tasks[task].imagenet_c
    share = analysis.monotone
    if tab.empty and data.veq.empty:
        return head + "<p class='note'>No ImageNet-C records in this run.</p>"
    parts = [head]
    if data.veq.empty:
        parts.append(
            "<p class='warn'>No gain-matched V_eq records: severities cannot be placed on the "
            "visibility axis.</p>"
        )
    fig = plots.imagenet_c_figure(analysis, task) if not tab.empty else None
    parts.append(
        img(
            fig,
            "ImageNet-C severities on the fog accuracy curve",
            "Each ImageNet-C fog severity (s1–s5) at its median gain-matched equivalent "
            "visibility V_eq over scenes, horizontal bar: V_eq interquartile range; vertical "
            "bar: 95 % bootstrap interval of its accuracy. Line and band: the physical fog "
            "accuracy curve.",
        )
    )
    if share.n:
        parts.append(
            f"<p>V_eq decreases strictly over the severities for "
            f"{esc(f'{100 * share.strict:.0f}')} % of {esc(share.n)} scenes "
            f"(non-increasing, ties allowed: {esc(f'{100 * share.non_strict:.0f}')} %).</p>"
        )
    ranges = analysis.ranges
    if not math.isnan(ranges.nominal_pp):
        parts.append(
            f"<p>Accuracy dynamic range, pooled across models, tasks and wordings: "
            f"{esc(f'{ranges.nominal_pp:.1f}')} percentage points over the ImageNet-C "
            f"severities against {esc(fmt_num(ranges.physical_pp, 1))} over the physical fog "
            f"levels (largest minus smallest accuracy).</p>"
        )
    if not tab.empty:
        parts.append(_imagenet_wide(data, tab, task))
        parts.append(details("Every wording", table(tab, _imagenet_cols())))
    return "\n".join(parts)


def _imagenet_cols() -> list[Col]:
    """Columns of the long ImageNet-C table."""
    return [
        Col("model", lambda r: r.model, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("severity", lambda r: fmt_num(r.severity, 0)),
        Col("median V_eq (m)", lambda r: fmt_num(r.veq_median, 1)),
        Col("V_eq IQR (m)", lambda r: fmt_range(r.veq_q25, r.veq_q75, 1)),
        Col("V_eq P90/P10", lambda r: fmt_num(r.veq_p90_p10, 2)),
        Col("median gain", lambda r: fmt_num(r.gain_median, 3)),
        Col("gain IQR", lambda r: fmt_range(r.gain_q25, r.gain_q75, 3)),
        Col("gain P90/P10", lambda r: fmt_num(r.gain_p90_p10, 2)),
        Col("scenes", lambda r: fmt_num(r.n_scenes, 0)),
        Col("n", lambda r: fmt_num(r.n, 0)),
        Col("accuracy [95% CI]", lambda r: fmt_ci(r.accuracy, r.acc_low, r.acc_high)),
        Col("clean", lambda r: fmt_num(r.clean_accuracy)),
        Col("Δ vs clean (pp)", lambda r: fmt_num(r.delta_pp, 1)),
    ]


def _imagenet_wide(data: RunData, tab: pd.DataFrame, task: str) -> str:
    """Rows: severities with their V_eq; column groups: each model's main-wording accuracy."""
    wording = primary_wording(data.wordings(task), verbal=False) or primary_wording(
        data.wordings(task), verbal=True
    )
    main = tab[tab["wording"] == wording]
    rows = main.drop_duplicates("severity").sort_values("severity")
    cols = [
        Col("severity", lambda r: fmt_num(r.severity, 0)),
        Col("median V_eq (m)", lambda r: fmt_num(r.veq_median, 1), group="equivalent visibility"),
        Col("IQR (m)", lambda r: fmt_range(r.veq_q25, r.veq_q75, 1), group="equivalent visibility"),
        Col("median gain", lambda r: fmt_num(r.gain_median, 3), group="equivalent visibility"),
        Col("scenes", lambda r: fmt_num(r.n_scenes, 0), group="equivalent visibility"),
    ]
    idx = main.set_index(["model", "severity"])
    for model in data.models:
        if model not in set(main["model"]):
            continue
        group = f"{model} ({wording})"
        cols += [
            Col("accuracy [95% CI]", _imagenet_cell(idx, model, "acc"), group=group),
            Col("Δ vs clean (pp)", _imagenet_cell(idx, model, "delta"), group=group),
        ]
    return table(rows, cols)


def _imagenet_cell(idx: pd.DataFrame, model: str, what: str) -> Any:
    """A cell getter of the wide ImageNet-C table."""

    def cell(row: Any) -> str:
        key = (model, row.severity)
        if key not in idx.index:
            return "–"
        r = idx.loc[key]
        if what == "acc":
            return fmt_ci(r["accuracy"], r["acc_low"], r["acc_high"])
        return fmt_num(r["delta_pp"], 1)

    return cell


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
