"""The grounding report's figures: one run's and several runs' side by side.

Every figure draws numbers of :class:`~clearsight.grounding.analysis.GroundingAnalysis` values
(the run's, then those of the runs given beside it) and returns PNG bytes, or None when no run
has its data. The runs compared are checkpoints or calibration methods (the paper's §5): each
(run, read-out) is one *method* (:func:`methods`), drawn in one colour in every figure.

* Fig. 6 (:func:`methods_figure`): ECE, TGS-self and TGS-pair per method, side by side;
* Fig. 7 (:func:`pair_axes_figure`): TGS-pair per axis (vision, reasoning, answer) per method;
* Figs. 15 and 16 (:func:`ece_tgs_figure`): ECE against TGS-self, and against TGS-pair;
* the masking curves (:func:`masking_figure`) and JSD histograms (:func:`jsd_figure`) of every
  run overlaid; the hesitation scatter and the risk-coverage curves of the first run.

Every value is drawn with its 95 % interval (two-stage bootstrap; see the analysis).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from clearsight.grounding.analysis import GroundingAnalysis
from clearsight.grounding.confidence.methods import DEFAULT_READOUT
from clearsight.grounding.confidence.readout_table import HOLISTIC_TGS, ReadoutScores, provenance
from clearsight.grounding.tgs import AXES, MASK_RATIOS, Score
from clearsight.grounding.variation import JSD_THRESHOLD
from clearsight.pages.plots import error_bars, png, pyplot, risk_coverage_figure

__all__ = [
    "ece_tgs_figure",
    "hesitation_figure",
    "jsd_figure",
    "masking_figure",
    "methods",
    "methods_figure",
    "pair_axes_figure",
    "selective_figure",
]

#: A colour per run or method, in order (colour-blind-safe Okabe–Ito hues, then repeated).
RUN_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")

#: Axis labels of the scores, with their units (confidences are on the 0-1 scale).
DELTA = "Δ confidence, 0-1 scale"
LABELS = {
    "ECE": "ECE (0-1, lower is better)",
    "tgs_self": f"TGS-self ({DELTA})",
    "tgs_pair": f"TGS-pair ({DELTA})",
}


def colour(i: int) -> str:
    """The colour of the i-th run or method."""
    return RUN_COLOURS[i % len(RUN_COLOURS)]


def methods(analysis: GroundingAnalysis, common: bool = False) -> list[tuple[str, ReadoutScores]]:
    """Every (run, read-out) of the report with its label, the run's main read-out first:
    ``model × read-out (provenance)`` — a trained method's ``checkpoint`` or its ``prompt
    format`` on another model, or ``prompting`` (:func:`provenance`) — after ``run:`` where
    several runs stand side by side (the run alone where its model is not recorded).
    ``common``: each method's scores on the report's common-valid populations
    (:attr:`~clearsight.grounding.analysis.GroundingAnalysis.common`) in place of its own."""
    runs = [analysis, *analysis.others]
    several = len(runs) > 1
    out = []
    for a in runs:
        for name, scores in a.readouts.items():
            method = f"{name} ({provenance(name, a.native)})"
            label = f"{a.model} × {method}" if a.model else method
            if several:
                label = f"{a.name}: {label}" if a.model else f"{a.name} × {method}"
            if common:
                shared = analysis.common.scores if analysis.common is not None else {}
                scores = replace(scores, scores=shared.get((a.name, name), {}))
            out.append((label, scores))
    return out


def _value(score: Score | None) -> tuple[float, float, float]:
    """(estimate, low, high) of a score, NaN where missing."""
    if score is None:
        return (math.nan, math.nan, math.nan)
    i = score.interval
    return (i.estimate, i.low, i.high)


def _bars(ax: Any, rows: Sequence[tuple[str, ReadoutScores]], key: str) -> None:
    """One horizontal bar per method: the score ``key`` with its interval."""
    values = np.array([_value(r.scores.get(key)) for _, r in rows]).reshape(-1, 3)
    y = np.arange(len(rows))
    ax.barh(y, np.nan_to_num(values[:, 0]), color=[colour(i) for i in range(len(rows))])
    ax.errorbar(
        values[:, 0], y, xerr=error_bars(*values.T), fmt="none", ecolor="k", capsize=3, lw=0.8
    )
    ax.axvline(0, color="k", lw=0.5)
    ax.set_xlabel(LABELS[key])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.locator_params(axis="x", nbins=4)  # neighbouring panels' end labels stay apart


def methods_figure(analysis: GroundingAnalysis) -> bytes | None:
    """Fig. 6: ECE, TGS-self and TGS-pair of every method side by side (bars, 95 %
    intervals): a lower ECE need not come with a higher TGS."""
    rows = [m for m in methods(analysis) if "ECE" in m[1].scores or "tgs_self" in m[1].scores]
    if not rows:
        return None
    plt = pyplot()
    height = 1.2 + 0.35 * len(rows)
    fig, axes = plt.subplots(1, 3, figsize=(9.6, height), sharey=True)
    for ax, key in zip(axes, ("ECE", "tgs_self", "tgs_pair"), strict=True):
        _bars(ax, rows, key)
    axes[0].set_yticks(range(len(rows)), [label for label, _ in rows], fontsize=8)
    axes[0].set_ylabel("method (model × read-out)")
    fig.tight_layout(w_pad=2.5)
    return png(fig)


def pair_axes_figure(analysis: GroundingAnalysis) -> bytes | None:
    """Fig. 7: TGS-pair per axis (vision, reasoning, answer), a bar per method with its 95 %
    interval."""
    rows = methods(analysis)
    keys = [f"tgs_pair_{axis}" for axis in AXES]
    if not any(key in r.scores for _, r in rows for key in keys):
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.2, 3.2))
    width = 0.8 / len(rows)
    x = np.arange(len(AXES))
    for i, (label, r) in enumerate(rows):
        values = np.array([_value(r.scores.get(key)) for key in keys])
        at = x - 0.4 + width * (i + 0.5)
        ax.bar(at, np.nan_to_num(values[:, 0]), width, color=colour(i), label=label)
        ax.errorbar(at, values[:, 0], yerr=error_bars(*values.T), fmt="none", ecolor="k", lw=0.8)
    ax.set_xticks(x, list(AXES))
    ax.set_xlabel("axis of the one error in the bad trajectory")
    ax.set_ylabel(f"TGS-pair ({DELTA})")
    ax.axhline(0, color="k", lw=0.5)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return png(fig)


def ece_tgs_figure(analysis: GroundingAnalysis, key: str) -> bytes | None:
    """Fig. 15 (``key`` ``tgs_self``) or Fig. 16 (``tgs_pair``): ECE against the TGS, one
    point per method with its 95 % intervals on both axes (better: left and up), each measure
    on its common-valid population over the report's methods (the paper's "panel-wide
    common-valid populations for their respective measures")."""
    rows = [
        (i, label, r)
        for i, (label, r) in enumerate(methods(analysis, common=True))
        if math.isfinite(_value(r.scores.get("ECE"))[0])
        and math.isfinite(_value(r.scores.get(key))[0])
    ]
    if not rows:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    for i, label, r in rows:
        ex, ey = _value(r.scores["ECE"]), _value(r.scores[key])
        ax.errorbar(
            [ex[0]],
            [ey[0]],
            xerr=error_bars(*ex),
            yerr=error_bars(*ey),
            fmt="o",
            color=colour(i),
            capsize=3,
            label=label,
        )
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xlabel(LABELS["ECE"])
    ax.set_ylabel(LABELS[key])
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return png(fig)


def _curves(analysis: GroundingAnalysis) -> list[tuple[int, str, list[Score], list[Score]]]:
    """Each method's masking curve on the common-valid population: its colour index, label,
    E and ΔE per masked share; a read-out whose curve is its run's holistic one
    (:data:`~clearsight.grounding.confidence.readout_table.HOLISTIC_TGS`) is that curve
    already and is left out."""
    shared = analysis.common.scores if analysis.common is not None else {}
    out = []
    for i, (label, r) in enumerate(methods(analysis, common=True)):
        e = [r.scores.get(f"E_r{x:.2f}") for x in MASK_RATIOS]
        d = [r.scores.get(f"dE_r{x:.2f}") for x in MASK_RATIOS]
        run, readout = _method_key(analysis, i)
        holistic = readout in HOLISTIC_TGS and (run, DEFAULT_READOUT) in shared
        if not holistic and all(p is not None and p.n_items for p in e):
            out.append((i, label, [p for p in e if p], [p for p in d if p]))
    return out


def _method_key(analysis: GroundingAnalysis, index: int) -> tuple[str, str]:
    """(run, read-out) of the ``index``-th method of :func:`methods`."""
    keys = [(a.name, name) for a in [analysis, *analysis.others] for name in a.readouts]
    return keys[index]


def masking_figure(analysis: GroundingAnalysis) -> bytes | None:
    """Figs. 11/12: the masking curves of every method, overlaid: mean expected confidence E
    against the masked share r (left) and its change from r = 0 (right), on the items valid
    at every share for every method (the common-valid population, its n in the legend), with
    two-stage intervals."""
    curves = _curves(analysis)
    if not curves:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.2))
    for i, label, e, d in curves:
        for ax, points in ((axes[0], e), (axes[1], d)):
            values = np.array([_value(p) for p in points]).reshape(-1, 3)
            ax.fill_between(MASK_RATIOS, values[:, 1], values[:, 2], alpha=0.2, color=colour(i))
            ax.plot(MASK_RATIOS, values[:, 0], marker="o", color=colour(i), label=label)
    for ax, label in zip(
        axes, ("expected confidence E (0-1)", "ΔE = E(r) - E(0) (0-1 scale)"), strict=True
    ):
        ax.set_xlabel("share of rationale tokens masked, r (0-1)")
        ax.set_ylabel(label)
    axes[1].axhline(0, color="k", lw=0.5)
    n = curves[0][2][0].n_items
    axes[0].legend(fontsize=7, frameon=False, title=f"method (common-valid items, n = {n})")
    axes[0].get_legend().get_title().set_fontsize(7)
    fig.tight_layout()
    return png(fig)


def jsd_figure(analysis: GroundingAnalysis) -> bytes | None:
    """Histograms of JSD per axis (content variation), every run overlaid as the share of its
    alternatives per bin; the 0.1 threshold dashed."""
    runs = [(i, a) for i, a in enumerate([analysis, *analysis.others])]
    if not any(v.n for _, a in runs for v in a.variation.values()):
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(AXES), figsize=(9.6, 3.0), sharey=True)
    bins = np.linspace(0, 1, 21)
    for ax, axis in zip(axes, AXES, strict=True):
        for i, a in runs:
            v = a.variation.get(axis)
            if v is None or not v.n:
                continue
            weights = np.full(v.n, 1.0 / v.n)
            label = f"{a.name}: P(JSD ≤ 0.1) = {v.share:.2f}, n = {v.n}"
            ax.hist(v.jsd, bins=bins, weights=weights, color=colour(i), alpha=0.35)
            ax.hist(v.jsd, bins=bins, weights=weights, color=colour(i), histtype="step")
            ax.plot([], [], color=colour(i), label=label)  # the legend's line
        ax.axvline(JSD_THRESHOLD, color="k", linestyle="--", linewidth=0.8)
        ax.set_title(axis, fontsize=9)
        ax.set_xlabel("JSD (bits)")
        ax.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.28))
    axes[0].set_ylabel("share of alternatives (0-1)")
    fig.tight_layout()
    return png(fig)


def hesitation_figure(analysis: GroundingAnalysis) -> bytes | None:
    """Pre- against post-hesitation confidence per event, diagonal marked."""
    h = analysis.hesitation
    if h is None or not h.n_events:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(3.4, 3.4))
    ax.scatter(h.pre, h.post, s=12, color="#D55E00")
    ax.plot([0, 1], [0, 1], color="k", linewidth=0.8)
    ax.set_xlabel("c_pre (confidence, 0-1)")
    ax.set_ylabel("c_post (confidence, 0-1)")
    ax.set_title(f"P(|dc|<=.02)={h.stable_share:.2f}, n={h.n_events}", fontsize=9)
    fig.tight_layout()
    return png(fig)


def selective_figure(analysis: GroundingAnalysis) -> bytes | None:
    """Risk-coverage curves of the visible self confidence gating the model's own answers:
    every answer, and each benchmark's."""
    if analysis.selective is None:
        return None
    cuts = [(c.label, c.n, c.curve) for c in analysis.selective.curves]
    return risk_coverage_figure([("visible self confidence gating answers", cuts)])
