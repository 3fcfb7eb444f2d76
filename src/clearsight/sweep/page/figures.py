"""The sweep page's confidence and ImageNet-C figures as PNG bytes: reliability diagrams,
risk-coverage curves with AURC against visibility, and the ImageNet-C severities on the physical
axis (Fig. 7), drawing the numbers of the analysis on the axes of
:mod:`~clearsight.sweep.page.plots`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from clearsight.pages.plots import error_bars, png, pyplot, risk_coverage_panel
from clearsight.sweep.numbers.crossings import NO_VERBAL
from clearsight.sweep.page import plots
from clearsight.sweep.page.plots import clean_position, plot_curve, series, visibility_axis
from clearsight.sweep.results import level_label
from clearsight.sweep.signals import ACCURACY, by_name

if TYPE_CHECKING:
    from clearsight.sweep.analysis import SweepAnalysis, TaskAnalysis
    from clearsight.sweep.numbers.facts import RunFacts
    from clearsight.sweep.numbers.panels import ReliabilityPanel, RiskPanel

__all__ = ["imagenet_c_figure", "reliability_figure", "selective_figure"]


#: The colours of a reliability diagram's cuts: pooled, then the two murkiest levels.
_RELIABILITY_COLOURS = ("0.15", "#CC79A7", "#D55E00")


def _reliability_panel(ax: Any, panel: ReliabilityPanel, title: str) -> None:
    """Bin accuracy vs mean confidence: pooled (clean + sweep) and at the two murkiest levels."""
    ax.plot([0, 1], [0, 1], color="0.6", lw=0.8, ls=":")
    for cut, colour in zip(panel.cuts, _RELIABILITY_COLOURS, strict=False):
        if cut.bins is None:
            continue
        bins = cut.bins
        full = bins.count > 0
        size = 10 + 110 * bins.count[full] / max(int(bins.count.max()), 1)
        label = "pooled (clean + sweep)" if cut.level_m is None else f"{level_label(cut.level_m)} m"
        ax.plot(
            bins.mean_confidence[full],
            bins.accuracy[full],
            "-",
            color=colour,
            lw=1,
            marker="o",
            ms=4,
            label=f"{label}: n={cut.n}, ECE {cut.ece:.3f}",
        )
        ax.scatter(
            bins.mean_confidence[full],
            bins.accuracy[full],
            s=size,
            color=colour,
            zorder=3,
            edgecolor="white",
            lw=0.5,
        )
    ax.set_xlim(-0.02, 1.03)
    ax.set_ylim(-0.02, 1.03)
    ax.set_aspect("equal")
    ax.set_xlabel("confidence (probability, 0–1)", fontsize=8)
    ax.set_ylabel("accuracy (share of answered, 0–1)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.25, lw=0.5)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6.5, loc="lower right", frameon=False)


def reliability_figure(rows: Sequence[Sequence[ReliabilityPanel]]) -> bytes | None:
    """Reliability diagrams of internal and verbalized confidence per model and arm.

    ``rows`` (:func:`clearsight.sweep.numbers.panels.reliability_panels`): model × arm; columns:
    internal confidence of each letter wording, then the main verbal wording's verbalized
    confidence. Marker area ∝ items in the bin; answered items only (with the reason-naming
    wording a model that abstains when unsure answers few murky items).
    """
    rows = [row for row in rows if row]
    if not rows:
        return None
    n_cols = max(len(row) for row in rows)
    plt = pyplot()
    fig, axes = plt.subplots(
        len(rows), n_cols, figsize=(3.5 * n_cols, 3.4 * len(rows)), squeeze=False
    )
    for r, row in enumerate(rows):
        for c in range(len(row), n_cols):
            axes[r][c].set_axis_off()
        for c, panel in enumerate(row):
            title = f"{panel.model} — {panel.arm}\n{by_name(panel.signal).label} ({panel.wording})"
            ax = axes[r][c]
            if panel.has_confidence:
                _reliability_panel(ax, panel, title)
            else:
                ax.set_title(title, fontsize=9)
                ax.text(
                    0.5,
                    0.5,
                    NO_VERBAL
                    if by_name(panel.signal).headline_wording == "verbal"
                    else "no confidence",
                    ha="center",
                    va="center",
                    fontsize=8,
                    transform=ax.transAxes,
                )
                ax.set_axis_off()
    fig.tight_layout()
    return png(fig)


def imagenet_c_figure(analysis: SweepAnalysis, numbers: TaskAnalysis) -> bytes | None:
    """Fig. 7: ImageNet-C severities at their median V_eq on the physical fog accuracy curve.

    Per model (main letter wording): the fog accuracy curve with its 95 % band, the reference
    observers' fog accuracy as grey reference curves (those the run has), and each
    severity's accuracy at the median gain-matched V_eq, a horizontal bar for the V_eq IQR
    over scenes and a vertical bar for the accuracy's 95 % interval (the task's
    :func:`~clearsight.sweep.images.equivalence.imagenet_c_table`).
    """
    run, table, wording = analysis.run, numbers.imagenet_c, numbers.main
    if table.empty or "fog" not in run.levels or table["veq_median"].isna().all():
        return None
    models = [m for m in run.models if (table["model"] == m).any()]
    if wording is None or not models:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(models), figsize=(5.6 * len(models), 3.8), squeeze=False)
    levels = run.levels["fog"]
    for ax, model in zip(axes[0], models, strict=True):
        visibility_axis(ax, levels)
        rows, clean = series(analysis.curves, model, numbers.task, wording, "accuracy", "fog")
        plot_curve(ax, rows, clean, clean_position(levels), ACCURACY, f"fog accuracy ({wording})")
        others = [m for m in run.models if m != model]
        plots.reference_lines(ax, analysis.curves, (numbers.task, wording, "fog"), others)
        sev = table[(table["model"] == model) & (table["wording"] == wording)]
        _severities(ax, sev.dropna(subset=["veq_median"]))
        ax.set_title(f"{model} — fog, {numbers.task}", fontsize=10)
        ax.set_ylabel("accuracy (share right, 0–1)", fontsize=9)
        ax.legend(fontsize=7, loc="lower left", frameon=False)
    fig.tight_layout()
    return png(fig)


def _severities(ax: Any, sev: pd.DataFrame) -> None:
    """Each severity's accuracy at its median V_eq, with the V_eq IQR and the accuracy's 95 %
    interval as error bars and an 's<k>' label (Fig. 7)."""
    xerr = error_bars(sev["veq_median"], sev["veq_q25"], sev["veq_q75"])
    yerr = error_bars(sev["accuracy"], sev["acc_low"], sev["acc_high"])
    ax.errorbar(
        sev["veq_median"],
        sev["accuracy"],
        xerr=xerr,
        yerr=yerr,
        fmt="D",
        color="#D55E00",
        ms=5,
        capsize=2,
        lw=1,
        label="ImageNet-C fog at median V_eq",
    )
    points = zip(sev["severity"], sev["veq_median"], sev["accuracy"], strict=True)
    for i, (s, x, y) in enumerate(points):
        # alternate label heights: neighbouring severities often sit a few metres apart
        ax.annotate(
            f"s{int(s)}",
            (x, y),
            textcoords="offset points",
            xytext=(0, -12 - 9 * (i % 3)),
            ha="center",
            fontsize=7,
            color="#D55E00",
        )


def _aurc_panel(ax: Any, rows: pd.DataFrame, levels: Sequence[float], title: str) -> None:
    """AURC (95 % interval) of each signal at every level, and at the clean images as a
    separate marker, against visibility."""
    visibility_axis(ax, levels)
    for name, sub in rows.groupby("signal"):
        signal = by_name(str(name))
        swept = sub[np.isfinite(sub["level_m"].to_numpy(float))].sort_values("level_m")
        clean = sub[sub["level_m"] == math.inf]
        for part, x, ls, label in (
            (
                swept,
                swept["level_m"],
                signal.line,
                f"{signal.label} ({sub['wording'].iloc[0]})",
            ),
            (clean, [clean_position(levels)] * len(clean), "none", None),
        ):
            ax.errorbar(
                x,
                part["aurc"],
                yerr=error_bars(part["aurc"], part["aurc_low"], part["aurc_high"]),
                ls=ls,
                marker=signal.marker,
                ms=4,
                lw=1.2,
                capsize=2,
                color=signal.colour,
                label=label,
            )
    ax.set_ylim(-0.02, max(0.1, float(np.nanmax(rows["aurc_high"].to_numpy(float))) * 1.1))
    ax.set_ylabel("AURC (mean risk, 0–1; lower is better)", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6.5, loc="upper left", frameon=False)


def _risk_panel(ax: Any, panel: RiskPanel) -> None:
    """One panel of risk-coverage curves of the sweep: clean, middle and murkiest level."""
    curves = [
        ("clean" if c.level_m is None else f"{level_label(c.level_m)} m", c.n, c.curve)
        for c in panel.cuts
    ]
    title = f"{panel.model} — {panel.arm}\n{by_name(panel.signal).label} ({panel.wording})"
    empty = "no scored answer (unparsed or abstained)" if panel.asked else "not asked"
    risk_coverage_panel(ax, curves, title, empty)


def selective_figure(run: RunFacts, numbers: TaskAnalysis) -> bytes | None:
    """Selective prediction per model and arm it was shown: risk-coverage curves of the
    internal and the verbalized confidence at the clean images, the middle level and the
    murkiest level, and each signal's AURC (with its photo-bootstrap 95 % interval) against
    visibility (the task's risk panels and selective table,
    :mod:`clearsight.sweep.numbers.panels`). Answered items only, as in the table; no panel for
    a wording the model was not asked.
    """
    table = numbers.selective
    # a panel per wording the model was asked (none for those it was not)
    rows = [r for r in (tuple(p for p in row if p.asked) for row in numbers.risk) if r]
    if not rows or table.empty:
        return None
    n_cols = max(len(row) for row in rows)
    plt = pyplot()
    fig, axes = plt.subplots(
        len(rows), n_cols + 1, figsize=(3.6 * (n_cols + 1), 3.3 * len(rows)), squeeze=False
    )
    for r, row in enumerate(rows):
        for c, panel in enumerate(row):
            _risk_panel(axes[r][c], panel)
        for c in range(len(row) + 1, n_cols + 1):
            axes[r][c].set_axis_off()
        model, arm = row[0].model, row[0].arm
        keep = (
            (table["model"] == model)
            & (table["arm"] == arm)
            & table["wording"].isin([p.wording for p in row])
            & table["level_m"].notna()  # clean (inf) and every level, not the pooled cells
            & table["aurc"].notna()
        )
        ax = axes[r][len(row)]
        if keep.any():
            levels = run.levels[arm]
            _aurc_panel(ax, table[keep], levels, f"{model} — {arm}: AURC against V")
        else:
            ax.set_axis_off()
    fig.tight_layout()
    return png(fig)
