"""How the sweep's numbers read on the page, in summary.md and summary.csv: metres, signed
decimals, intervals, crossing visibilities V* with their censoring, widths W with their bounds
(and why the reference observer's is not about 0 where it is not by design), the signals' names
and the depth line of the header.

Rendering only: every number comes from :class:`clearsight.sweep.analysis.SweepAnalysis`.
"""

from __future__ import annotations

import math

import pandas as pd

from clearsight.pages.html import fmt_num, fmt_range
from clearsight.sweep.numbers.depth import DepthSummary
from clearsight.sweep.references.observer import GENERIC_WORDING
from clearsight.sweep.results import level_label
from clearsight.sweep.signals import SIGNALS

__all__ = [
    "NO_VALUE",
    "SIGNAL_LABELS",
    "V_STAR_READING",
    "crossing_label",
    "depth_line",
    "interval",
    "interval_m",
    "interval_of",
    "labelled_crossings",
    "metres",
    "observer_note",
    "signed",
    "w_label",
    "with_interval",
]

#: What a crossing visibility V* is, in the words of the page's first screen and of its crossings
#: tables.
V_STAR_READING = (
    "V*: the visibility in metres where a signal first gets past half-way between its clean "
    "value and its floor (interpolated in log V)"
)

#: The labels that name no value (:func:`crossing_label`'s 'n/a', :func:`w_label`'s
#: 'undetermined'): no interval is printed beside them.
NO_VALUE = frozenset({"", "n/a", "undetermined"})

#: Each signal's name on the page (:class:`clearsight.sweep.signals.Signal`'s ``label``).
SIGNAL_LABELS: dict[str, str] = {s.name: s.label for s in SIGNALS}


def metres(v: float) -> str:
    """A visibility with three significant digits, trailing zeros kept: 250, 12.0, 3.51."""
    if not math.isfinite(v):
        return "–"
    if abs(v) >= 99.95:
        return f"{v:.0f}"
    if abs(v) >= 9.995:
        return f"{v:.1f}"
    return f"{v:.2f}" if abs(v) >= 0.9995 else f"{v:.3g}"


def signed(w: float, digits: int = 2) -> str:
    """A signed decimal without a negative zero: '+0.03', '-0.21', '+0.00'."""
    return f"{round(w, digits) + 0.0:+.{digits}f}"


def interval_m(low: float, high: float) -> str:
    """'[12.1, 15.9] m' with three significant digits; '' if missing."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"[{metres(low)}, {metres(high)}] m"


def interval(low: float, high: float) -> str:
    """'[-0.02, +0.10]'; '' if missing."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"[{signed(low)}, {signed(high)}]"


def with_interval(label: str, ci: str) -> str:
    """``label`` and its interval ``ci`` ('≥ +0.30 [+0.00, +0.45]'); the label alone where it
    names no value (:data:`NO_VALUE`: 'n/a', 'undetermined'), whose interval would bound
    nothing."""
    return f"{label} {interval_of(label, ci)}".strip()


def interval_of(label: str, ci: str) -> str:
    """The interval ``ci`` of a value shown as ``label`` in a column of its own; '' where the
    label names no value (:data:`NO_VALUE`)."""
    return "" if label in NO_VALUE else ci


def crossing_label(v_star: float, censored: str, levels: tuple[float, ...] | None = None) -> str:
    """V* for display: '14.2 m', '≤ 1.95 m' (censored below), '≥ 250 m' (above), 'n/a'."""
    if censored == "undefined" or not math.isfinite(v_star):
        return "n/a"
    if censored == "below":
        return f"≤ {level_label(min(levels) if levels else v_star)} m"
    if censored == "above":
        return f"≥ {level_label(max(levels) if levels else v_star)} m"
    return f"{metres(v_star)} m"


def w_label(w: float, bound: str) -> str:
    """W for display: '+0.02', '≥ +0.79' (lower bound), '≤ -0.10' (upper), 'undetermined'."""
    if bound in ("", "nan"):
        return ""
    if bound == "undetermined" or not math.isfinite(w):
        return "undetermined" if math.isfinite(w) else "n/a"
    prefix = {"lower": "≥ ", "upper": "≤ "}.get(bound, "")
    return f"{prefix}{signed(w)}"


def labelled_crossings(
    crossings: pd.DataFrame, levels: dict[str, tuple[float, ...]]
) -> pd.DataFrame:
    """The crossings frame with the labels a reader sees inserted: ``v_star`` after
    ``censored`` (:func:`crossing_label`, censored crossings at the arm's end ``levels``) and
    ``w_display`` after ``w_bound`` (:func:`w_label`) — the columns of summary.csv."""
    out = crossings.copy()
    v_star = [
        crossing_label(v, c or "none", levels.get(a))
        for v, c, a in zip(out["v_star_m"], out["censored"], out["arm"], strict=True)
    ]
    w_display = [w_label(w, b) for w, b in zip(out["w"], out["w_bound"], strict=True)]
    out.insert(list(out.columns).index("censored") + 1, "v_star", v_star)
    out.insert(list(out.columns).index("w_bound") + 1, "w_display", w_display)
    return out


def depth_line(depth: DepthSummary) -> str:
    """One line for the report header, e.g. 'median of per-image median depths 7.3 m (IQR
    2.4–14.5 m over 22 scenes); pixels at the clip bounds: 0.1 % ≤ 0.5 m, 9.8 % ≥ 80 m'."""
    if depth.n_scenes == 0:
        return "no depth profile stored (a run made before profiles were)"
    return (
        f"median of per-image median depths {fmt_num(depth.median_m, 1)} m "
        f"(IQR {fmt_range(depth.q25_m, depth.q75_m, 1)} m over {depth.n_scenes} scenes); "
        f"pixels at the clip bounds: {fmt_num(100 * depth.near_share, 1)} % ≤ 0.5 m, "
        f"{fmt_num(100 * depth.far_share, 1)} % ≥ 80 m"
    )


def observer_note(model: str, wording: str, signal: str) -> str:
    """Why the reference observer's W on ``signal`` under ``wording`` is not about 0, in words
    for the tables; '' for every other model, wording and signal."""
    if model.partition(":")[0] != "observer" or wording != GENERIC_WORDING or signal != "abstain":
        return ""
    return (
        "by design: the reference observer abstains only on the option that names the cause "
        "(reduced visibility), never on 'I don't know'; not a blind spot"
    )
