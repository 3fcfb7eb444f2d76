"""The report's figures as PNG bytes: sweep curves (Fig. 3), reliability diagrams, risk-coverage
curves with AURC against visibility, ImageNet-C severities on the physical axis (Fig. 7), and
image thumbnails; and :func:`risk_coverage_figure`, which the other protocols' reports share
(the drawing helpers every figure uses: :mod:`clearsight.pages.plots`).

Every figure draws numbers it is given — the sweep's from
:class:`clearsight.sweep.analysis.SweepAnalysis` — and returns PNG bytes (or None when there is
nothing to draw), so the HTML page can inline them as data URIs and a test can decode them.
Matplotlib runs headless (Agg); each figure is closed after saving.

Axis convention (clearsight's): visibility on a log axis running from the clearest level on the
left to the murkiest on the right, the clean image as a separate marker further left.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from clearsight.pages.plots import error_bars, png, pyplot
from clearsight.sweep.numbers.crossings import NO_VERBAL
from clearsight.sweep.references.recognition import REFERENCE_OBSERVERS
from clearsight.sweep.results import level_label
from clearsight.sweep.signals import SIGNALS, Signal

if TYPE_CHECKING:
    from clearsight.sweep.analysis import SweepAnalysis, TaskAnalysis


__all__ = [
    "accuracy_line",
    "clean_position",
    "curves_figure",
    "legend_entries",
    "plot_curve",
    "reference_lines",
    "series",
    "shown_panels",
    "visibility_axis",
]


def clean_position(levels: Sequence[float]) -> float:
    """Where the clean marker sits: two octaves left of the clearest level."""
    return max(levels) * 4.0


def legend_entries(axes: Iterable[Any]) -> dict[str, object]:
    """Each label drawn on any of ``axes`` once, in the order first drawn, with its handle:
    one legend for a figure whose panels draw different curves."""
    return {lb: h for ax in axes for h, lb in zip(*ax.get_legend_handles_labels(), strict=True)}


def visibility_axis(ax: Any, levels: Sequence[float]) -> None:
    """Log visibility axis, clearest (and clean) left, murkiest right, levels as ticks."""
    clean_x = clean_position(levels)
    ax.set_xscale("log")
    ax.set_xlim(clean_x * 1.5, min(levels) / 1.5)
    ticks = [clean_x, *levels]
    ax.set_xticks(ticks)
    crowded = len(levels) > 8  # more levels than the standard sweep: slant the labels
    ax.set_xticklabels(
        ["clean", *(level_label(v) for v in levels)],
        fontsize=8,
        rotation=45 if crowded else 0,
        ha="right" if crowded else "center",
    )
    ax.minorticks_off()
    ax.axvline(math.sqrt(clean_x * max(levels)), color="0.8", lw=0.8)
    ax.set_xlabel("visibility V (m)", fontsize=9)
    ax.set_ylim(-0.03, 1.03)
    ax.grid(alpha=0.25, lw=0.5)
    ax.tick_params(labelsize=8)


def series(
    curves: pd.DataFrame, model: str, task: str, wording: str, signal: str, arm: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The (levels, clean) rows of one curve."""
    sel = curves[
        (curves["model"] == model)
        & (curves["task"] == task)
        & (curves["wording"] == wording)
        & (curves["signal"] == signal)
    ]
    levels = sel[sel["condition"] == arm].sort_values("x", ascending=False)
    return levels, sel[sel["condition"] == "clean"]


#: How each reference observer's curve is drawn: (colour, line style).
_REFERENCE_STYLES = {
    "observer": ("0.25", "--"),
    "observer:recognition": ("0.45", "-."),
    "observer:human": ("0.1", ":"),
}


def reference_lines(
    ax: Any, curves: pd.DataFrame, where: tuple[str, str, str], models: Sequence[str]
) -> None:
    """The accuracy of each reference observer among ``models`` at (task, wording, arm)
    ``where``, as a grey reference curve (nothing for a reference without records there): the
    limits of seeing drawn beside a model's own curves (Fig. 3, Fig. 7, the corruptions and
    the references' figures)."""
    task, wording, arm = where
    for ref in (m for m in REFERENCE_OBSERVERS if m in models):
        colour, style = _REFERENCE_STYLES[ref]
        rows = series(curves, ref, task, wording, "accuracy", arm)[0]
        accuracy_line(ax, rows, ref, colour=colour, style=style, width=2.0)


def accuracy_line(
    ax: Any,
    rows: pd.DataFrame,
    label: str,
    colour: str | None = None,
    style: str = "-",
    width: float = 1.0,
) -> None:
    """One accuracy curve of :func:`series`' level rows, no band (nothing where it has no
    rows)."""
    if not rows.empty:
        ax.plot(rows["x"], rows["estimate"], style, color=colour, lw=width, label=label)


def plot_curve(
    ax: Any,
    rows: pd.DataFrame,
    clean: pd.DataFrame,
    clean_x: float,
    signal: Signal,
    label: str,
    style: str | None = None,
) -> None:
    """One signal: line with markers, 95 % band, and the clean value with its interval (in the
    signal's colour, line and marker)."""
    if rows.empty:
        return
    colour, face = signal.colour, "white" if signal.hollow else signal.colour
    x = rows["x"].to_numpy(dtype=float)
    ax.fill_between(x, rows["low"], rows["high"], color=colour, alpha=0.13, lw=0)
    ax.plot(
        x,
        rows["estimate"],
        style or signal.line,
        color=colour,
        marker=signal.marker,
        ms=4,
        lw=1.5,
        label=label,
        mfc=face,
    )
    if not clean.empty:
        est = float(clean["estimate"].iloc[0])
        err = error_bars(est, clean["low"].iloc[:1], clean["high"].iloc[:1])
        # each signal's clean marker is nudged sideways so equal values do not hide each other
        nudge = 1.18 ** (SIGNALS.index(signal) - 1.5 + (0.5 if style == ":" else 0.0))
        ax.errorbar(
            [clean_x * nudge],
            [est],
            yerr=err,
            fmt=signal.marker,
            color=colour,
            ms=5,
            capsize=2,
            lw=1,
            mfc=face,
        )


def _crossing_ticks(ax: Any, crossings: pd.DataFrame, plotted: list[tuple[str, Signal]]) -> None:
    """Short coloured ticks at the top of the panel where each plotted signal crosses h."""
    for wording, signal in plotted:
        row = crossings[(crossings["wording"] == wording) & (crossings["signal"] == signal.name)]
        if row.empty or row["censored"].iloc[0] == "undefined":
            continue
        v = float(row["v_star_m"].iloc[0])
        if not math.isfinite(v):
            continue
        censored = row["censored"].iloc[0] in ("below", "above")  # hollow: a bound, not a value
        ax.plot(
            [v],
            [1.025],
            marker="v",
            color=signal.colour,
            ms=6,
            clip_on=False,
            zorder=5,
            mfc="white" if censored else signal.colour,
        )


def curves_figure(analysis: SweepAnalysis, numbers: TaskAnalysis) -> bytes | None:
    """Fig. 3: every signal's curve against visibility (the task's ``lines``,
    :func:`~clearsight.sweep.numbers.facts.curve_lines`).

    One panel per model (rows) and arm (columns). Accuracy and internal confidence come from
    the main letter wording (reason-naming abstain option), verbalized confidence from the main
    verbal wording, the abstain rate from each letter wording (the later ones dotted). Bands:
    95 % percentile intervals of a bootstrap over source photos. Grey lines: chance (dotted)
    and the blank-image accuracy (dashed), the accuracy's floor; thick grey: the reference
    observers' accuracy in the main wording (:func:`reference_lines`, those the run has besides
    the panel's model). For verification, thin grey
    lines split the accuracy into true- and false-category questions. Triangles on the top edge:
    crossing visibilities V* of the plotted signals (hollow: censored, a bound at the sweep's
    end).
    """
    models, arms = analysis.run.models, analysis.run.arms
    shown = shown_panels(analysis.curves, numbers.task, models, arms)
    if not shown or numbers.main is None:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(
        len(models), len(arms), figsize=(5.6 * len(arms), 3.7 * len(models)), squeeze=False
    )
    for r, model in enumerate(models):
        for c, arm in enumerate(arms):
            if (model, arm) not in shown:
                axes[r][c].remove()  # no panel for an arm the model was not shown
                continue
            _curves_panel(axes[r][c], analysis, numbers, model, arm)
            if (model, arm) == next(p for p in shown if p[0] == model):
                axes[r][c].set_ylabel("share / confidence (0–1)", fontsize=9)
    drawn = legend_entries(fig.axes)  # each panel's reference curves are the other models'
    fig.tight_layout()
    fig.legend(
        list(drawn.values()),
        list(drawn),
        loc="lower center",
        ncol=3,
        fontsize=8,
        frameon=False,
        bbox_to_anchor=(0.5, 1.0),
    )
    return png(fig)


def shown_panels(
    curves: pd.DataFrame, task: str, models: Sequence[str], arms: Sequence[str]
) -> list[tuple[str, str]]:
    """The (model, arm) panels of ``task``'s Fig. 3, models then arms in their orders: those
    whose model was shown the arm (its curves have rows there)."""
    mine = curves[curves["task"] == task]
    has = set(zip(mine["model"], mine["condition"], strict=True))
    return [(m, a) for m in models for a in arms if (m, a) in has]


def _curves_panel(
    ax: Any, analysis: SweepAnalysis, numbers: TaskAnalysis, model: str, arm: str
) -> None:
    """One panel of Fig. 3 (``model`` in ``arm``): its signals' curves with bands and clean
    markers, the verification split, the floor lines and the crossing ticks."""
    curves, crossings, task, main = analysis.curves, analysis.crossings, numbers.task, numbers.main
    assert main is not None  # the caller draws no panel without a wording
    levels = analysis.run.levels[arm]
    visibility_axis(ax, levels)
    plotted: list[tuple[str, Signal]] = []
    for line in numbers.lines[model]:
        rows, clean = series(curves, model, task, line.wording, line.signal.name, arm)
        plot_curve(ax, rows, clean, clean_position(levels), line.signal, line.label, line.style)
        if not rows.empty:
            plotted.append((line.wording, line.signal))
    if task == "verify":
        _asked_split(ax, numbers.asked, model, main, arm)
    _floor_lines(ax, curves, model, task, main, numbers.chance)
    others = [m for m in analysis.run.models if m != model]
    reference_lines(ax, curves, (task, main, arm), others)
    sub = crossings[
        (crossings["model"] == model) & (crossings["task"] == task) & (crossings["arm"] == arm)
    ]
    _crossing_ticks(ax, sub, plotted)
    if numbers.verbal is not None and (NO_VERBAL in set(sub["note"])):
        colour = next(s.colour for s in SIGNALS if s.headline_wording == "verbal")
        ax.text(0.98, 0.5, NO_VERBAL, transform=ax.transAxes, ha="right", fontsize=8, color=colour)
    ax.set_title(f"{model} — {arm}", fontsize=10)


def _asked_split(ax: Any, asked: pd.DataFrame, model: str, wording: str, arm: str) -> None:
    """Verification: accuracy on true- and on false-category questions (thin, no band;
    :func:`clearsight.sweep.analysis.asked_accuracy`)."""
    mine = asked[(asked["model"] == model) & (asked["wording"] == wording) & (asked["arm"] == arm)]
    for kind, style, label in (
        ("true", "-.", "true-category questions"),
        ("distractor", (0, (1, 1)), "false-category questions"),
    ):
        acc = mine[mine["asked"] == kind].sort_values("level_m", ascending=False)
        if acc.empty:
            continue
        ax.plot(
            acc["level_m"].to_numpy(float),
            acc["accuracy"].to_numpy(float),
            ls=style,
            color="0.35",
            lw=1,
            label=f"accuracy, {label} ({wording})",
        )


def _floor_lines(
    ax: Any, curves: pd.DataFrame, model: str, task: str, wording: str, chance: float
) -> None:
    """Chance (dotted) and the blank-image accuracy (dashed), labelled at the right edge."""
    acc = curves[
        (curves["model"] == model)
        & (curves["task"] == task)
        & (curves["signal"] == "accuracy")
        & (curves["wording"] == wording)
    ]
    blank = acc[acc["condition"] == "blank"]
    lines = [(chance, ":", "chance")] if math.isfinite(chance) else []
    if not blank.empty:
        lines.append((float(blank["estimate"].iloc[0]), "--", "blank"))
    for y, style, label in lines:
        ax.axhline(y, color="0.45", ls=style, lw=1)
        ax.text(
            1.005,
            y,
            label,
            transform=ax.get_yaxis_transform(),
            fontsize=7,
            color="0.3",
            va="center",
            ha="left",
        )
