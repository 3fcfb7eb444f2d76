"""Drawing helpers every figure shares, whatever protocol it shows: matplotlib headless
(:func:`pyplot`), a figure as PNG bytes with crowded tick labels slanted (:func:`png`), error-bar
lengths that never fail a figure (:func:`error_bars`), image thumbnails (:func:`png_thumbnail`)
and risk-coverage curves drawn from any protocol's analysis (:func:`risk_coverage_figure`).
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

__all__ = [
    "CUT_COLOURS",
    "Curve",
    "Drawn",
    "FloatArray",
    "error_bars",
    "overlapping_ticks",
    "png",
    "png_thumbnail",
    "pyplot",
    "risk_coverage_figure",
    "risk_coverage_panel",
    "slant_crowded_ticks",
]

FloatArray = npt.NDArray[np.float64]
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


def png_thumbnail(image: npt.NDArray[np.uint8], max_side: int = 220) -> bytes:
    """An RGB uint8 image as PNG bytes, shrunk so its longer side is at most ``max_side``."""
    from PIL import Image

    im = Image.fromarray(np.ascontiguousarray(image))
    im.thumbnail((max_side, max_side))
    buf = io.BytesIO()
    im.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


CUT_COLOURS = ("0.15", "#CC79A7", "#D55E00", "#0072B2", "#009E73")


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
#: the protocols' reports hand these to :func:`risk_coverage_figure`.
Drawn = tuple[str, int, Curve | None]


def risk_coverage_panel(
    ax: Any, curves: Sequence[Drawn], title: str, empty: str = "no scored answer"
) -> None:
    """Risk against coverage of each given curve; ``empty`` says why when none has a scored
    answer."""
    drawn = 0
    for k, (label, n, curve) in enumerate(curves):
        colour = CUT_COLOURS[k % len(CUT_COLOURS)]
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
        risk_coverage_panel(axes[k // n_cols][k % n_cols], curves, title)
    for k in range(len(panels), n_rows * n_cols):
        axes[k // n_cols][k % n_cols].set_axis_off()
    fig.tight_layout()
    return png(fig)
