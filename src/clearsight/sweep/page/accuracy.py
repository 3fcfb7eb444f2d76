"""The sweep's small accuracy figures: a panel per arm, each model a line with its 95 %
photo-bootstrap band on the report's visibility axis (:func:`accuracy_panels`, the card's), and
the smaller one beside the report's headline sentences (:func:`headline_curves`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from clearsight.pages.plots import error_bars, png, pyplot
from clearsight.sweep.page.plots import clean_position, legend_entries, visibility_axis

if TYPE_CHECKING:
    from clearsight.sweep.analysis import SweepAnalysis

__all__ = ["accuracy_panels", "headline_curves"]


def accuracy_panels(
    curves: pd.DataFrame,
    wording: str,
    arms: Sequence[str],
    panel: tuple[float, float] = (4.2, 3.1),
) -> bytes | None:
    """Accuracy of ``wording`` against visibility per arm, a small panel each (the card's;
    ``panel``: each one's width and height in inches), each model a line in its own colour
    with its 95 % photo-bootstrap band, the clean accuracy left of the clearest level (the
    report's visibility axis, :func:`visibility_axis`)."""
    acc = curves[(curves["signal"] == "accuracy") & (curves["wording"] == wording)]
    arms = [a for a in arms if (acc["condition"] == a).any()]
    if not arms:
        return None
    plt = pyplot()
    width, height = panel
    fig, axes = plt.subplots(1, len(arms), figsize=(width * len(arms), height), squeeze=False)
    colours = {m: f"C{i}" for i, m in enumerate(dict.fromkeys(acc["model"]))}
    for ax, arm in zip(axes[0], arms, strict=True):
        _accuracy_panel(ax, acc, arm, colours)
        ax.set_title(f"{arm}: accuracy ({wording})", fontsize=9)
    axes[0][0].set_ylabel("accuracy", fontsize=9)
    fig.tight_layout()
    # every model once, below the panels (a long name never squeezes them)
    drawn = legend_entries(axes[0])
    fig.legend(
        drawn.values(), drawn, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=3, fontsize=7
    )
    return png(fig)


def _accuracy_panel(ax: Any, acc: pd.DataFrame, arm: str, colours: dict[str, str]) -> None:
    """One arm's panel of :func:`accuracy_panels`: each model shown ``arm`` a line with its
    band and its clean accuracy with its interval."""
    levels = sorted(set(acc.loc[acc["condition"] == arm, "x"].astype(float)), reverse=True)
    visibility_axis(ax, levels)
    for model, rows in acc.groupby("model", sort=False):
        lv = rows[rows["condition"] == arm].sort_values("x", ascending=False)
        if lv.empty:
            continue
        colour, x = colours[str(model)], lv["x"].to_numpy(float)
        ax.plot(x, lv["estimate"], marker="o", ms=3, lw=1.4, color=colour, label=str(model))
        ax.fill_between(x, lv["low"], lv["high"], color=colour, alpha=0.12, lw=0)
        clean = rows[rows["condition"] == "clean"]
        if len(clean):
            c = clean.iloc[0]
            err = error_bars(c.estimate, [c.low], [c.high])
            ax.errorbar(
                [clean_position(levels)],
                [c.estimate],
                yerr=err,
                fmt="s",
                ms=4,
                color=colour,
                capsize=2,
            )


def headline_curves(analysis: SweepAnalysis) -> bytes | None:
    """The small figure beside the headline's sentences: the accuracy of the first task's main
    wording against visibility, a panel per arm, each model a line (:func:`accuracy_panels`,
    smaller); None without a wording or curves."""
    numbers = analysis.tasks.get(analysis.run.first_task)
    if numbers is None or numbers.main is None:
        return None
    curves = analysis.curves
    return accuracy_panels(
        curves[curves["task"] == numbers.task], numbers.main, analysis.run.arms, (3.3, 2.4)
    )
