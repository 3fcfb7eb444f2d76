"""The report's figures as PNG bytes: sweep curves (Fig. 3), reliability diagrams, risk-coverage
curves with AURC against visibility, ImageNet-C severities on the physical axis (Fig. 7), and
image thumbnails; and :func:`risk_coverage_figure`, which the other protocols' reports share
(the drawing helpers every figure uses: :mod:`clearsight.pages.plots`).

Every figure draws numbers it is given — the sweep's from
:class:`clearsight.sweep.analysis.SweepAnalysis` — and returns PNG bytes (or None when there is
nothing to draw), so the HTML page can inline them as data URIs and a test can decode them.
Matplotlib runs headless (Agg); each figure is closed after saving.

Axis convention (the paper's): visibility on a log axis running from the clearest level on the
left to the murkiest on the right, the clean image as a separate marker further left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from clearsight.pages.plots import error_bars, png, pyplot
from clearsight.sweep.numbers.crossings import NO_VERBAL
from clearsight.sweep.results import is_person, level_label, offers_abstain, primary_wording

if TYPE_CHECKING:
    from clearsight.sweep.analysis import SweepAnalysis


__all__ = [
    "COLOURS",
    "accuracy_panels",
    "clean_position",
    "curves_figure",
    "plot_curve",
    "series",
    "visibility_axis",
]

#: One colour per signal, the same in every figure (colour-blind-safe Okabe–Ito hues).
COLOURS: dict[str, str] = {
    "accuracy": "#000000",
    "internal_conf": "#0072B2",
    "verbal_conf": "#E69F00",
    "abstain": "#009E73",
}
#: Line style and marker per signal, so overlapping curves stay distinguishable.
STYLES: dict[str, tuple[str, str]] = {
    "accuracy": ("-", "o"),
    "internal_conf": ("-", "^"),
    "verbal_conf": ("--", "s"),
    "abstain": ("-", "D"),
}


def clean_position(levels: Sequence[float]) -> float:
    """Where the clean marker sits: two octaves left of the clearest level."""
    return max(levels) * 4.0


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


def plot_curve(
    ax: Any,
    rows: pd.DataFrame,
    clean: pd.DataFrame,
    clean_x: float,
    signal: str,
    label: str,
    style: str | None = None,
) -> None:
    """One signal: line with markers, 95 % band, and the clean value with its interval."""
    if rows.empty:
        return
    colour = COLOURS[signal]
    line, marker = STYLES[signal]
    x = rows["x"].to_numpy(dtype=float)
    ax.fill_between(x, rows["low"], rows["high"], color=colour, alpha=0.13, lw=0)
    ax.plot(
        x,
        rows["estimate"],
        style or line,
        color=colour,
        marker=marker,
        ms=4,
        lw=1.5,
        label=label,
        mfc="white" if signal == "verbal_conf" else colour,
    )
    if not clean.empty:
        est = float(clean["estimate"].iloc[0])
        err = error_bars(est, clean["low"].iloc[:1], clean["high"].iloc[:1])
        # each signal's clean marker is nudged sideways so equal values do not hide each other
        nudge = 1.18 ** (list(STYLES).index(signal) - 1.5 + (0.5 if style == ":" else 0.0))
        ax.errorbar(
            [clean_x * nudge],
            [est],
            yerr=err,
            fmt=marker,
            color=colour,
            ms=5,
            capsize=2,
            lw=1,
            mfc="white" if signal == "verbal_conf" else colour,
        )


def _crossing_ticks(ax: Any, crossings: pd.DataFrame, plotted: list[tuple[str, str]]) -> None:
    """Short coloured ticks at the top of the panel where each plotted signal crosses h."""
    for wording, signal in plotted:
        row = crossings[(crossings["wording"] == wording) & (crossings["signal"] == signal)]
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
            color=COLOURS[signal],
            ms=6,
            clip_on=False,
            zorder=5,
            mfc="white" if censored else COLOURS[signal],
        )


def curves_figure(analysis: SweepAnalysis, task: str) -> bytes | None:
    """Fig. 3: accuracy, internal and verbalized confidence and abstain rate vs visibility.

    One panel per model (rows) and arm (columns). Accuracy and internal confidence come from
    the main letter wording (reason-naming abstain option), verbalized confidence from the main
    verbal wording, the abstain rate from each letter wording (generic dashed). Bands: 95 %
    percentile intervals of a bootstrap over source photos. Grey lines: chance (dotted) and the
    blank-image accuracy (dashed), the accuracy's floor. For verification, thin grey lines
    split the accuracy into true- and false-category questions. Triangles on the top edge: crossing
    visibilities V* of the plotted signals (hollow: censored, a bound at the sweep's end).
    """
    data = analysis.data
    models, arms = data.models, data.arms
    if not models or not arms or analysis.curves.empty:
        return None
    wordings = data.wordings(task)
    plt = pyplot()
    fig, axes = plt.subplots(
        len(models), len(arms), figsize=(5.6 * len(arms), 3.7 * len(models)), squeeze=False
    )
    if primary_wording(wordings, verbal=False) or primary_wording(wordings, verbal=True):
        for r, model in enumerate(models):
            for c, arm in enumerate(arms):
                _curves_panel(axes[r][c], analysis, task, model, arm)
                if c == 0:
                    axes[r][c].set_ylabel("share / confidence (0–1)", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=3,
        fontsize=8,
        frameon=False,
        bbox_to_anchor=(0.5, 1.0),
    )
    return png(fig)


def _curve_lines(
    wordings: list[str], model: str = ""
) -> list[tuple[str | None, str, str | None, str]]:
    """(wording, signal, line style, label) of each curve of a Fig. 3 panel (a None wording
    is not drawn): the main wording's accuracy, the main letter wording's internal
    confidence, the main verbal wording's verbalized confidence (a person's: the confidence
    they stated with their letter answers), each letter wording's abstain rate (the generic
    one dotted; none for a wording without the option)."""
    letter = primary_wording(wordings, verbal=False)
    verbal = primary_wording(wordings, verbal=True)
    main = letter or verbal
    lines: list[tuple[str | None, str, str | None, str]] = [
        (main, "accuracy", None, f"accuracy ({main})"),
        (letter, "internal_conf", None, f"internal confidence ({letter})"),
        (verbal, "verbal_conf", None, f"verbalized confidence ({verbal})"),
    ]
    if is_person(model) and letter is not None:
        lines.append((letter, "verbal_conf", None, f"stated confidence ({letter})"))
    letters: list[str | None] = [w for w in wordings if w.startswith("mcq") and offers_abstain(w)]
    for w in letters or [main]:
        lines.append((w, "abstain", ":" if w == "mcq.generic" else None, f"abstain rate ({w})"))
    return lines


def _curves_panel(ax: Any, analysis: SweepAnalysis, task: str, model: str, arm: str) -> None:
    """One panel of Fig. 3 (``model`` in ``arm``): its signals' curves with bands and clean
    markers, the verification split, the floor lines and the crossing ticks."""
    data, curves, crossings = analysis.data, analysis.curves, analysis.crossings
    wordings = data.wordings(task)
    main = primary_wording(wordings, verbal=False) or primary_wording(wordings, verbal=True)
    assert main is not None  # the caller draws no panel without a wording
    levels = data.levels[arm]
    visibility_axis(ax, levels)
    plotted: list[tuple[str, str]] = []
    for wording, signal, style, label in _curve_lines(wordings, model):
        if wording is None:
            continue
        rows, clean = series(curves, model, task, wording, signal, arm)
        plot_curve(ax, rows, clean, clean_position(levels), signal, label, style)
        if not rows.empty:
            plotted.append((wording, signal))
    if task == "verify":
        _asked_split(ax, analysis.tasks[task].asked, model, main, arm)
    _reference_lines(ax, curves, model, task, main, analysis.tasks[task].chance)
    sub = crossings[
        (crossings["model"] == model) & (crossings["task"] == task) & (crossings["arm"] == arm)
    ]
    _crossing_ticks(ax, sub, plotted)
    if primary_wording(wordings, verbal=True) is not None and (NO_VERBAL in set(sub["note"])):
        ax.text(
            0.98,
            0.5,
            NO_VERBAL,
            transform=ax.transAxes,
            ha="right",
            fontsize=8,
            color=COLOURS["verbal_conf"],
        )
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


def _reference_lines(
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


def accuracy_panels(curves: pd.DataFrame, wording: str, arms: Sequence[str]) -> bytes | None:
    """Accuracy of ``wording`` against visibility per arm, a small panel each (the card's), each
    model a line with its 95 % photo-bootstrap band, the clean accuracy left of the clearest
    level."""
    acc = curves[(curves["signal"] == "accuracy") & (curves["wording"] == wording)]
    if acc.empty or not arms:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(arms), figsize=(4.2 * len(arms), 3.1), squeeze=False)
    for ax, arm in zip(axes[0], arms, strict=True):
        for model, rows in acc.groupby("model", sort=False):
            lv = rows[rows["condition"] == arm].sort_values("x", ascending=False)
            if lv.empty:
                continue
            x = lv["x"].to_numpy(float)
            (line,) = ax.plot(x, lv["estimate"], marker="o", ms=3, lw=1.4, label=str(model))
            ax.fill_between(x, lv["low"], lv["high"], color=line.get_color(), alpha=0.12, lw=0)
            clean = rows[rows["condition"] == "clean"]
            if len(clean):
                c = clean.iloc[0]
                err = error_bars(c.estimate, [c.low], [c.high])
                ax.errorbar(
                    [x.max() * 4],
                    [c.estimate],
                    yerr=err,
                    fmt="s",
                    ms=4,
                    color=line.get_color(),
                    capsize=2,
                )
        ax.set_xscale("log")
        ax.invert_xaxis()
        ax.set_ylim(-0.02, 1.05)
        ax.set_title(f"{arm}: accuracy ({wording})", fontsize=9)
        ax.set_xlabel("visibility V (m); square: clean", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7, loc="lower left")
    return png(fig)
