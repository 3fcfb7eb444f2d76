"""The probe report's figures, each drawn from the frame or curves its section shows: Fig. 2
and Fig. 6 (accuracy by the sensor's consistency), the bars of Figs. 3 and 5, Fig. 4 (belief
trajectories) and Fig. 7 (each sensor's ECE by dataset). :mod:`clearsight.probe.page.report`
places them under their tables."""

from __future__ import annotations

import pandas as pd

from clearsight.pages.plots import png, pyplot
from clearsight.probe.numbers.accuracy import setting_label
from clearsight.probe.numbers.convergence import BeliefCurves
from clearsight.probe.posthoc.belief import BELIEF_THRESHOLD

__all__ = [
    "bars_figure",
    "belief_figure",
    "consistency_datasets_figure",
    "consistency_figure",
    "sensor_ece_figure",
]


def consistency_figure(table: pd.DataFrame) -> bytes | None:
    """Fig. 2: accuracy (%) against the sensor's direct consistency c (of 11), one line per
    setting (:func:`~clearsight.probe.numbers.accuracy.consistency_bins`)."""
    if table.empty:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for label, sub in table.assign(label=setting_label(table)).groupby("label", sort=True):
        sub = sub.sort_values("c11")
        ax.plot(sub["c11"], sub["accuracy"], marker="o", ms=4, lw=1.2, label=str(label))
    ax.set_xlim(-0.5, 11.5)
    ax.set_ylim(-3, 103)
    ax.set_xlabel("sensor consistency c (direct answers right, of 11)", fontsize=8)
    ax.set_ylabel("accuracy (%)", fontsize=8)
    ax.grid(alpha=0.25, lw=0.5)
    ax.legend(fontsize=6.5, frameon=False)
    return png(fig)


def consistency_datasets_figure(table: pd.DataFrame) -> bytes | None:
    """Fig. 6: Fig. 2 with one panel per dataset, the VLM answering directly as solid lines
    and the settings with a reasoner dashed
    (:func:`~clearsight.probe.numbers.accuracy.consistency_bins` by dataset)."""
    if table.empty:
        return None
    plt = pyplot()
    datasets = sorted(table["dataset"].astype(str).unique())
    fig, axes = plt.subplots(
        1, len(datasets), figsize=(3.2 * len(datasets), 3.2), squeeze=False, sharey=True
    )
    labelled = table.assign(label=setting_label(table))
    for ax, dataset in zip(axes[0], datasets, strict=True):
        rows = labelled[labelled["dataset"].astype(str) == dataset]
        for label, sub in rows.groupby("label", sort=True):
            sub = sub.sort_values("c11")
            style = "-" if (sub["strategy"] == "direct").all() else "--"
            ax.plot(sub["c11"], sub["accuracy"], style, marker="o", ms=3, lw=1.1, label=str(label))
        ax.set_title(dataset, fontsize=8)
        ax.set_xlim(-0.5, 11.5)
        ax.set_ylim(-3, 103)
        ax.set_xlabel("sensor consistency c (of 11)", fontsize=7)
        ax.grid(alpha=0.25, lw=0.5)
    axes[0][0].set_ylabel("accuracy (%)", fontsize=8)
    axes[0][-1].legend(fontsize=6, frameon=False)
    return png(fig)


def bars_figure(table: pd.DataFrame, value: str, error: str | None, label: str) -> bytes | None:
    """One horizontal bar per row of ``table`` (its setting), ``value`` with ``error`` as the
    whisker: Fig. 3 (accuracy by the signal shown) and Fig. 5 (queries per conversation)."""
    if table.empty or value not in table:
        return None
    names = setting_label(table)
    if "dataset" in table:
        names = names + " — " + table["dataset"].astype(str)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 0.35 * len(table) + 1.0))
    err = None if error is None else table[error].fillna(0).to_numpy(float)
    ax.barh(range(len(table)), table[value].to_numpy(float), xerr=err, color="#0072B2")
    ax.set_yticks(range(len(table)))
    ax.set_yticklabels(names.tolist(), fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(label, fontsize=8)
    ax.grid(axis="x", alpha=0.25, lw=0.5)
    return png(fig)


def sensor_ece_figure(table: pd.DataFrame) -> bytes | None:
    """Fig. 7: each sensor's ECE by dataset, grouped bars, one colour per sensor
    (:func:`~clearsight.probe.numbers.sensors.sensor_ece_table`)."""
    if table.empty:
        return None
    wide = table.pivot_table(index="dataset", columns="sensor", values="ece")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 3.2))
    width = 0.8 / len(wide.columns)
    for k, sensor in enumerate(wide.columns):
        xs = [i + (k - (len(wide.columns) - 1) / 2) * width for i in range(len(wide))]
        ax.bar(xs, wide[sensor].to_numpy(float), width, label=str(sensor))
    ax.set_xticks(range(len(wide)))
    ax.set_xticklabels([str(d) for d in wide.index], fontsize=7)
    ax.set_ylabel("ECE of the direct answers", fontsize=8)
    ax.grid(axis="y", alpha=0.25, lw=0.5)
    ax.legend(fontsize=6.5, frameon=False)
    return png(fig)


def belief_figure(beliefs: BeliefCurves) -> bytes | None:
    """Fig. 4: the belief in the gold option p_correct(t) after each sensor reply (b_0
    uniform), one thin line per probed conversation coloured by its final correctness (gaps at
    unparsed steps), the mean p_correct(t) per reasoner, sensor and signal as a thick line (over the
    conversations with a parsed b_t), and p_chosen, the belief in the committed option at the last
    step, as a marker at the end of each conversation
    (:func:`~clearsight.probe.numbers.convergence.belief_curves`)."""
    if not beliefs.curves:
        return None
    plt = pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    colours = {True: "#009E73", False: "#D55E00"}
    for curve in beliefs.curves:
        colour = colours[curve.correct]
        ax.plot(range(len(curve.p_correct)), curve.p_correct, color=colour, lw=0.7, alpha=0.45)
        if curve.p_chosen is not None:
            ax.plot(len(curve.p_correct) - 1, curve.p_chosen, "^", color=colour, ms=4)
    for name, mean in beliefs.means.items():
        ax.plot(range(len(mean)), mean, lw=2.2, label=f"mean p_correct(t): {name}")
    ax.axhline(BELIEF_THRESHOLD, color="0.5", ls=":", lw=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # t counts replies
    ax.set_xlabel("sensor replies so far (t)", fontsize=8)
    ax.set_ylabel("p_correct(t)", fontsize=8)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(
        "green: committed right; orange: wrong; triangles: p_chosen; dotted: max b = 0.7",
        fontsize=7,
    )
    ax.grid(alpha=0.25, lw=0.5)
    ax.legend(fontsize=6.5, frameon=False)
    return png(fig)
