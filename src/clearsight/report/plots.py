"""The report's figures as PNG bytes: sweep curves (Fig. 3), reliability diagrams, risk-coverage
curves with AURC against visibility, ImageNet-C severities on the physical axis (Fig. 7), and
image thumbnails; and the drawing helpers the other protocols' reports share (:func:`png`,
:func:`pyplot`, :func:`error_bars`, :func:`risk_coverage_figure`).

Every figure draws numbers it is given — the sweep's from
:class:`clearsight.sweep.analysis.SweepAnalysis` — and returns PNG bytes (or None when there is
nothing to draw), so the HTML page can inline them as data URIs and a test can decode them.
Matplotlib runs headless (Agg); each figure is closed after saving.

Axis convention (the paper's): visibility on a log axis running from the clearest level on the
left to the murkiest on the right, the clean image as a separate marker further left.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.report.labels import SIGNAL_LABELS
from clearsight.sweep.numbers.crossings import NO_VERBAL
from clearsight.sweep.results import is_person, level_label, offers_abstain, primary_wording

if TYPE_CHECKING:
    from clearsight.sweep.analysis import SweepAnalysis
    from clearsight.sweep.numbers.confidence import ReliabilityPanel, RiskPanel

FloatArray = npt.NDArray[np.float64]

__all__ = [
    "COLOURS",
    "Drawn",
    "curves_figure",
    "error_bars",
    "imagenet_c_figure",
    "overlapping_ticks",
    "png_thumbnail",
    "reliability_figure",
    "risk_coverage_figure",
    "selective_figure",
    "slant_crowded_ticks",
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
_DPI = 100


def error_bars(estimate: npt.ArrayLike, low: npt.ArrayLike, high: npt.ArrayLike) -> FloatArray:
    """matplotlib's ``(2, n)`` error-bar lengths ``[estimate - low, high - estimate]``.

    Never negative (matplotlib refuses negative lengths): a bound on the wrong side of its
    estimate, or a missing one (NaN), draws no bar on that side instead of failing the figure.
    """
    est = np.atleast_1d(np.asarray(estimate, dtype=np.float64))
    lo, hi = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    lengths = np.vstack([est - lo, hi - est])
    return np.where(np.isfinite(lengths) & (lengths > 0), lengths, 0.0)


def pyplot() -> Any:
    """matplotlib.pyplot on the headless Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png(fig: Any) -> bytes:
    """Save ``fig`` as PNG bytes and close it; x tick labels that would overlap are slanted
    first (:func:`slant_crowded_ticks`)."""
    if slant_crowded_ticks(fig):
        fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI, bbox_inches="tight")
    pyplot().close(fig)
    return buf.getvalue()


def overlapping_ticks(ax: Any, renderer: Any, pad_px: float = 2.0) -> list[tuple[str, str]]:
    """The pairs of neighbouring x tick labels of ``ax`` that overlap as drawn by ``renderer``
    (less than ``pad_px`` apart), left to right: level labels whose boxes meet; slanted labels
    whose anchors are closer than a line of their text across the slant."""
    labels = sorted(
        (t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()), key=_anchor_x
    )
    pairs = []
    for a, b in itertools.pairwise(labels):
        box_a, box_b = a.get_window_extent(renderer), b.get_window_extent(renderer)
        angle = math.radians(a.get_rotation() % 180)
        if angle:
            line = a.get_fontsize() * ax.figure.dpi / 72.0
            apart = abs(_anchor_x(b) - _anchor_x(a)) * math.sin(angle)
            meet = apart < line + pad_px
        else:
            meet = box_a.x1 + pad_px > box_b.x0 and box_a.y1 > box_b.y0 and box_b.y1 > box_a.y0
        if meet:
            pairs.append((a.get_text(), b.get_text()))
    return pairs


def _anchor_x(label: Any) -> float:
    """Where a tick label is anchored on the screen, in pixels from the left."""
    return float(label.get_transform().transform(label.get_position())[0])


def slant_crowded_ticks(fig: Any) -> bool:
    """Slant (45°, right-aligned) the x tick labels of every axes of ``fig`` where two of
    them overlap as drawn; whether any was slanted."""
    fig.draw_without_rendering()  # lays the ticks out where they will be drawn
    renderer = fig.canvas.get_renderer()
    slanted = False
    for ax in fig.axes:
        if ax.get_visible() and overlapping_ticks(ax, renderer):
            for label in ax.get_xticklabels():
                label.set_rotation(45)
                label.set_horizontalalignment("right")
            slanted = True
    return slanted


def _clean_x(levels: Sequence[float]) -> float:
    """Where the clean marker sits: two octaves left of the clearest level."""
    return max(levels) * 4.0


def _visibility_axis(ax: Any, levels: Sequence[float]) -> None:
    """Log visibility axis, clearest (and clean) left, murkiest right, levels as ticks."""
    clean_x = _clean_x(levels)
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


def _series(
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


def _plot_curve(
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
    _visibility_axis(ax, levels)
    plotted: list[tuple[str, str]] = []
    for wording, signal, style, label in _curve_lines(wordings, model):
        if wording is None:
            continue
        rows, clean = _series(curves, model, task, wording, signal, arm)
        _plot_curve(ax, rows, clean, _clean_x(levels), signal, label, style)
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

    ``rows`` (:func:`clearsight.sweep.numbers.confidence.reliability_panels`): model × arm; columns:
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
            title = f"{panel.model} — {panel.arm}\n{SIGNAL_LABELS[panel.signal]} ({panel.wording})"
            ax = axes[r][c]
            if panel.has_confidence:
                _reliability_panel(ax, panel, title)
            else:
                ax.set_title(title, fontsize=9)
                ax.text(
                    0.5,
                    0.5,
                    NO_VERBAL if panel.signal == "verbal_conf" else "no confidence",
                    ha="center",
                    va="center",
                    fontsize=8,
                    transform=ax.transAxes,
                )
                ax.set_axis_off()
    fig.tight_layout()
    return png(fig)


def imagenet_c_figure(analysis: SweepAnalysis, task: str) -> bytes | None:
    """Fig. 7: ImageNet-C severities at their median V_eq on the physical fog accuracy curve.

    Per model (main letter wording): the fog accuracy curve with its 95 % band, and each
    severity's accuracy at the median gain-matched V_eq, a horizontal bar for the V_eq IQR
    over scenes and a vertical bar for the accuracy's 95 % interval (the task's
    :func:`~clearsight.sweep.images.equivalence.imagenet_c_table`).
    """
    data, table = analysis.data, analysis.tasks[task].imagenet_c
    if table.empty or "fog" not in data.levels or table["veq_median"].isna().all():
        return None
    wording = primary_wording(data.wordings(task), verbal=False) or primary_wording(
        data.wordings(task), verbal=True
    )
    models = [m for m in data.models if (table["model"] == m).any()]
    if wording is None or not models:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(models), figsize=(5.6 * len(models), 3.8), squeeze=False)
    levels = data.levels["fog"]
    for c, model in enumerate(models):
        ax = axes[0][c]
        _visibility_axis(ax, levels)
        rows, clean = _series(analysis.curves, model, task, wording, "accuracy", "fog")
        _plot_curve(ax, rows, clean, _clean_x(levels), "accuracy", f"fog accuracy ({wording})")
        sev = table[(table["model"] == model) & (table["wording"] == wording)].dropna(
            subset=["veq_median"]
        )
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
        ax.set_title(f"{model} — fog, {task}", fontsize=10)
        ax.set_ylabel("accuracy (share right, 0–1)", fontsize=9)
        ax.legend(fontsize=7, loc="lower left", frameon=False)
    fig.tight_layout()
    return png(fig)


def png_thumbnail(image: npt.NDArray[np.uint8], max_side: int = 220) -> bytes:
    """An RGB uint8 image as PNG bytes, shrunk so its longer side is at most ``max_side``."""
    from PIL import Image

    im = Image.fromarray(np.ascontiguousarray(image))
    im.thumbnail((max_side, max_side))
    buf = io.BytesIO()
    im.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


_CUT_COLOURS = ("0.15", "#CC79A7", "#D55E00", "#0072B2", "#009E73")


class Curve(Protocol):
    """What a risk-coverage panel draws of one curve (a
    :class:`clearsight.metrics.RiskCoverage` is one): coverage and risk at each threshold,
    highest confidence first, and the area under it."""

    @property
    def coverage(self) -> FloatArray: ...

    @property
    def risk(self) -> FloatArray: ...

    @property
    def aurc(self) -> float: ...


#: A given risk-coverage curve: its label, its number of answers and the curve (None: none);
#: the other protocols' reports hand these to :func:`risk_coverage_figure`.
Drawn = tuple[str, int, Curve | None]


def _risk_coverage_panel(
    ax: Any, curves: Sequence[Drawn], title: str, empty: str = "no scored answer"
) -> None:
    """Risk against coverage of each given curve; ``empty`` says why when none has a scored
    answer."""
    drawn = 0
    for k, (label, n, curve) in enumerate(curves):
        colour = _CUT_COLOURS[k % len(_CUT_COLOURS)]
        if curve is None or n == 0:
            continue
        ax.step(
            np.r_[0.0, curve.coverage],
            np.r_[curve.risk[0], curve.risk],
            where="pre",
            color=colour,
            lw=1.2,
            label=f"{label}: n={n}, AURC {curve.aurc:.3f}",
        )
        drawn += 1
    ax.set_xlim(0, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("coverage (share of answers accepted, 0–1)", fontsize=8)
    ax.set_ylabel("risk (error share accepted, 0–1)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.25, lw=0.5)
    ax.set_title(title, fontsize=9)
    if drawn:
        ax.legend(fontsize=6.5, loc="upper left", frameon=False)
    else:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)


def risk_coverage_figure(panels: Sequence[tuple[str, Sequence[Drawn]]]) -> bytes | None:
    """Risk-coverage curves, one panel per (title, curves), three panels to a row (None when
    no panel has a scored answer); the curves are computed by the protocols' analyses
    (grounding, probe)."""
    if not any(n for _, curves in panels for _, n, _ in curves):
        return None
    n_cols = min(3, len(panels))
    n_rows = -(-len(panels) // n_cols)
    plt = pyplot()
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(3.8 * n_cols, 3.4 * n_rows), squeeze=False)
    for k, (title, curves) in enumerate(panels):
        _risk_coverage_panel(axes[k // n_cols][k % n_cols], curves, title)
    for k in range(len(panels), n_rows * n_cols):
        axes[k // n_cols][k % n_cols].set_axis_off()
    fig.tight_layout()
    return png(fig)


def _aurc_panel(ax: Any, rows: pd.DataFrame, levels: Sequence[float], title: str) -> None:
    """AURC (95 % interval) of each signal at every level, and at the clean images as a
    separate marker, against visibility."""
    _visibility_axis(ax, levels)
    for signal, sub in rows.groupby("signal"):
        line, marker = STYLES[str(signal)]
        colour = COLOURS[str(signal)]
        swept = sub[np.isfinite(sub["level_m"].to_numpy(float))].sort_values("level_m")
        clean = sub[sub["level_m"] == math.inf]
        for part, x, ls, label in (
            (
                swept,
                swept["level_m"],
                line,
                f"{SIGNAL_LABELS[str(signal)]} ({sub['wording'].iloc[0]})",
            ),
            (clean, [_clean_x(levels)] * len(clean), "none", None),
        ):
            ax.errorbar(
                x,
                part["aurc"],
                yerr=error_bars(part["aurc"], part["aurc_low"], part["aurc_high"]),
                ls=ls,
                marker=marker,
                ms=4,
                lw=1.2,
                capsize=2,
                color=colour,
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
    title = f"{panel.model} — {panel.arm}\n{SIGNAL_LABELS[panel.signal]} ({panel.wording})"
    empty = "no scored answer (unparsed or abstained)" if panel.asked else "not asked"
    _risk_coverage_panel(ax, curves, title, empty)


def selective_figure(analysis: SweepAnalysis, task: str) -> bytes | None:
    """Selective prediction per model and arm it was shown: risk-coverage curves of the
    internal and the verbalized confidence at the clean images, the middle level and the
    murkiest level, and each signal's AURC (with its photo-bootstrap 95 % interval) against
    visibility (the task's risk panels and selective table,
    :mod:`clearsight.sweep.numbers.confidence`). Answered items only, as in the table; no panel for
    a wording the model was not asked.
    """
    table = analysis.tasks[task].selective
    # a panel per wording the model was asked (none for those it was not)
    rows = [r for r in (tuple(p for p in row if p.asked) for row in analysis.tasks[task].risk) if r]
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
            levels = analysis.data.levels[arm]
            _aurc_panel(ax, table[keep], levels, f"{model} — {arm}: AURC against V")
        else:
            ax.set_axis_off()
    fig.tight_layout()
    return png(fig)
