"""The sweep page's section on every ImageNet-C corruption on the metre axis (issue 45 item 2):
each corruption's V_eq per severity with the detail it added and whether it is placed, the
signals of each model against V_eq beside the physical arms' curves, and each corruption's
crossings and W. Rendering only: every number comes from
:class:`~clearsight.sweep.numbers.corruptions.CorruptionNumbers`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.pages.html import Col, Details, Figure, Part, Table, esc, fmt_ci, fmt_num
from clearsight.pages.plots import png, pyplot
from clearsight.physics import ATTENUATION_MAX_ADDED
from clearsight.sweep.analysis import SweepAnalysis
from clearsight.sweep.numbers.corruptions import CorruptionNumbers
from clearsight.sweep.page import labels
from clearsight.sweep.page.imagenet import severity_veq_cols
from clearsight.sweep.page.labels import crossing_label, interval, interval_m, w_label
from clearsight.sweep.page.plots import reference_lines, series, visibility_axis
from clearsight.sweep.signals import by_name

__all__ = ["corruption_crossing_rows", "corruptions_figure", "corruptions_section"]

#: The signals of the figure's panels, in their order.
_PANELS = ("accuracy", "internal_conf", "abstain")
#: The physical arms drawn beside the corruptions, with their colours.
_ARM_COLOURS = {"fog": "0.1", "water": "#0072B2", "turbid": "#009E73"}


def corruptions_section(analysis: SweepAnalysis, task: str) -> list[Part]:
    """The section: the V_eq table of every corruption, the figure, the crossings and W."""
    numbers = analysis.corruptions
    head = "<h2 id='corruptions'>Every ImageNet-C corruption on the metre axis</h2>"
    if numbers.empty:
        return [head + "<p class='note'>No ImageNet-C V_eq records in this run.</p>"]
    rule = (
        f"<p>Each severity sits at its gain-matched V_eq (median over scenes, IQR) where it acts "
        f"like lost contrast: the detail it <em>added</em> — the matching's residual "
        f"a = ‖D′ − g D‖² / ‖D‖², the corrupted image's detail no scaled copy of the clean "
        f"detail explains — has a median of at most {esc(f'{ATTENUATION_MAX_ADDED:g}')}, the "
        f"most any attenuation of detail (fog, a blur) can have. Above it the corruption adds "
        f"detail of its own (noise, moved or blocked edges) and its V_eq is a matched gain, not "
        f"a visibility: it is shown but not placed. W is computed, as for fog, where every "
        f"severity is placed and the medians fall strictly.</p>"
    )
    fig = corruptions_figure(analysis, task)
    caption = (
        "Each placed corruption's severities at their median V_eq (thin lines, one colour per "
        "corruption; severities not placed are left out) against the physical arms' curves "
        "(thick), per model in its main letter wording: accuracy, internal confidence and "
        "abstain rate; grey: the reference observers' fog accuracy (those the run has). A V_eq "
        "clearer than the clearest level lies left of it, past the clean "
        "marker."
    )
    parts: list[Part] = [head, rule, _veq_table(numbers)]
    parts.append(Figure(fig, "Every corruption on the metre axis", caption))
    parts.append(_w_table(numbers))
    signals = numbers.signals[numbers.signals["task"] == task]
    parts.append(Details("Every signal at every severity", [Table(signals, _signal_cols())]))
    return parts


def _veq_table(numbers: CorruptionNumbers) -> Table:
    """Per corruption and severity: V_eq, gain, added detail, placed, monotone shares, grid."""
    reason = {name: why for name, (_, why) in numbers.grids.items()}
    cols = [
        Col("corruption", lambda r: r.corruption, text=True),
        *severity_veq_cols(),
        Col("median gain", lambda r: fmt_num(r.gain_median, 3)),
        Col("median added detail", lambda r: fmt_num(r.added_median, 3)),
        Col("placed", lambda r: "yes" if r.placed else "no: adds detail", text=True),
        Col("V_eq falls (strict / ties)", _shares, text=True),
        Col("W grid", lambda r: reason.get(r.corruption) or "yes", text=True),
        Col("scenes", lambda r: fmt_num(r.n_scenes, 0)),
    ]
    return Table(numbers.veq, cols, "V_eq of every corruption and severity over the scenes")


def _shares(r: Any) -> str:
    """The monotone shares of a corruption's V_eq over its scenes."""
    if not r.n_monotone:
        return "–"
    return f"{100 * r.strict:.0f} % / {100 * r.non_strict:.0f} % of {int(r.n_monotone)}"


def _w_table(numbers: CorruptionNumbers) -> Part:
    """Each corruption's crossings with W, as fog's are shown."""
    if numbers.crossings.empty:
        return "<p class='note'>No corruption has a metre grid: no crossing or W.</p>"
    cols = [
        Col("model", lambda r: r.model, text=True),
        Col("corruption", lambda r: r.arm, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("signal", lambda r: by_name(r.signal).label, text=True),
        Col("V* (m)", lambda r: crossing_label(r.v_star_m, r.censored, ()), text=True),
        Col("V* 95% CI", lambda r: interval_m(r.v_low_m, r.v_high_m), text=True),
        Col("W (log10 m)", lambda r: w_label(r.w, r.w_bound) or "–", text=True),
        Col("W 95% CI", lambda r: interval(r.w_low, r.w_high), text=True),
        Col("note", lambda r: r.note, text=True),
    ]
    return Table(numbers.crossings, cols, "Crossings and W of each corruption on its metre grid")


def corruption_crossing_rows(numbers: CorruptionNumbers) -> pd.DataFrame:
    """Each corruption's crossings and W with the labels a reader sees, shaped as the physical
    arms' rows of summary.csv (:func:`~clearsight.sweep.page.labels.labelled_crossings`, a
    censored crossing at the end of the corruption's metre grid), ``arm`` named
    ``imagenet_c:<corruption>`` (ImageNet-C's fog is not the physical fog arm); no rows where
    no corruption has a metre grid."""
    if numbers.crossings.empty:
        return pd.DataFrame()
    crossings = numbers.crossings.assign(arm="imagenet_c:" + numbers.crossings["arm"])
    levels = {f"imagenet_c:{name}": grid for name, (grid, _) in numbers.grids.items()}
    return labels.labelled_crossings(crossings, levels)


def _signal_cols() -> list[Col]:
    """Columns of the long table of every signal at every severity."""
    return [
        Col("model", lambda r: r.model, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("signal", lambda r: by_name(r.signal).label, text=True),
        Col("corruption", lambda r: r.corruption, text=True),
        Col("severity", lambda r: fmt_num(r.severity, 0)),
        Col("median V_eq (m)", lambda r: fmt_num(r.veq_median, 1) if r.placed else "not placed"),
        Col("n", lambda r: fmt_num(r.n, 0)),
        Col("mean [95% CI]", lambda r: fmt_ci(r.estimate, r.low, r.high)),
    ]


def corruptions_figure(analysis: SweepAnalysis, task: str) -> bytes | None:
    """Per model (rows) the :data:`_PANELS` signals (columns) of its main letter wording: the
    physical arms' curves and each corruption's placed severities at their median V_eq."""
    numbers, wording = analysis.corruptions, analysis.tasks[task].letter
    placed = numbers.signals[(numbers.signals["task"] == task) & numbers.signals["placed"]]
    placed = placed[placed["wording"] == wording]
    models = [m for m in analysis.run.models if (placed["model"] == m).any()]
    levels = analysis.run.levels.get("fog") or next(iter(analysis.run.levels.values()), None)
    if not models or levels is None or wording is None:
        return None
    names = list(dict.fromkeys(placed["corruption"]))
    colours = pyplot().get_cmap("tab20")(np.linspace(0, 1, max(len(names), 2)))
    plt = pyplot()
    fig, axes = plt.subplots(
        len(models), len(_PANELS), figsize=(5.0 * len(_PANELS), 3.6 * len(models)), squeeze=False
    )
    for ax_row, model in zip(axes, models, strict=True):
        for ax, signal in zip(ax_row, _PANELS, strict=True):
            _panel(ax, analysis, (task, model, wording, signal), levels)
            if signal == "accuracy":
                others = [m for m in analysis.run.models if m != model]
                reference_lines(ax, analysis.curves, (task, wording, "fog"), others)
            mine = placed[(placed["model"] == model) & (placed["signal"] == signal)]
            for name, colour in zip(names, colours, strict=False):
                rows = mine[mine["corruption"] == name].sort_values("severity")
                x, y = rows["veq_median"], rows["estimate"]
                ax.plot(x, y, "-o", color=colour, lw=0.8, ms=3, label=name)
            _widen(ax, mine["veq_median"].to_numpy(dtype=float))
            if signal == "accuracy":
                _reference_legend(ax)
            ax.set_title(f"{model} — {by_name(signal).label} ({wording})", fontsize=9)
        ax_row[-1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.tight_layout()
    return png(fig)


def _panel(
    ax: Any, analysis: SweepAnalysis, key: tuple[str, str, str, str], levels: tuple[float, ...]
) -> None:
    """One panel's axis and the physical arms' curves (with their 95 % bands) of the
    (task, model, wording, signal) ``key``."""
    task, model, wording, signal = key
    visibility_axis(ax, levels)
    for arm in analysis.run.levels:
        rows, _ = series(analysis.curves, model, task, wording, signal, arm)
        colour = _ARM_COLOURS.get(arm, "0.4")
        ax.fill_between(rows["x"], rows["low"], rows["high"], color=colour, alpha=0.1, lw=0)
        ax.plot(rows["x"], rows["estimate"], "-", color=colour, lw=2.2, label=f"{arm} (physical)")


def _reference_legend(ax: Any) -> None:
    """A legend of the panel's reference curves only (the corruptions' is the row's last)."""
    pairs = zip(*ax.get_legend_handles_labels(), strict=True)
    refs = [(h, label) for h, label in pairs if label.startswith("observer")]
    if refs:
        ax.legend(*zip(*refs, strict=True), fontsize=6, loc="lower left", frameon=False)


def _widen(ax: Any, x: npt.NDArray[np.float64]) -> None:
    """Widen the visibility axis (clearest left) to every finite placed V_eq."""
    finite = x[np.isfinite(x) & (x > 0)]
    if finite.size == 0:
        return
    left, right = ax.get_xlim()
    ax.set_xlim(max(left, float(finite.max()) * 1.5), min(right, float(finite.min()) / 1.5))
