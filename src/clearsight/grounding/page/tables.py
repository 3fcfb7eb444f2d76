"""Trajectory grounding's report tables as frames of display cells, drawn from its analysis:
the read-outs' scores (Table 2, :func:`readouts_frame`), content variation, hesitation, the
tests, the judge, failures and retention; summary.csv is :func:`tables`.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from clearsight.grounding.analysis import GroundingAnalysis, WilcoxonTest
from clearsight.grounding.confidence.readout_table import TABLE2
from clearsight.grounding.page.figures import methods
from clearsight.grounding.tgs import AXES, Score
from clearsight.metrics.bootstrap import Interval

ROWS: tuple[tuple[str, str], ...] = (
    ("tgs_self", "TGS-self"),
    ("tgs_pair_vision", "TGS-pair vision"),
    ("tgs_pair_reasoning", "TGS-pair reasoning"),
    ("tgs_pair_answer", "TGS-pair answer"),
    ("tgs_pair", "TGS-pair (mean of axes)"),
    ("ECE", "ECE (visible self confidence; mean over benchmarks)"),
    ("AUROC", "AUROC (visible self confidence; mean over benchmarks)"),
    ("ECE_pooled", "ECE pooled over items (item bootstrap)"),
    ("AUROC_pooled", "AUROC pooled over items (item bootstrap)"),
    ("AURC", "AURC (visible self confidence gating answers)"),
    ("E_AURC", "E-AURC (visible self confidence gating answers)"),
)


def score_text(key: str, interval: Interval, digits: int) -> str:
    """The score ``key``'s estimate and interval: '+0.150 [+0.050, +0.250]' for a TGS (a
    difference of confidences, signed), '0.120 [0.080, 0.160]' for every other score (ECE,
    AUROC, AURC, E-AURC: never negative, no sign)."""
    spec = f"{'+' if key.startswith('tgs') else ''}.{digits}f"
    i = interval
    return f"{i.estimate:{spec}} [{i.low:{spec}}, {i.high:{spec}}]"


def _fmt(key: str, score: Score | None) -> str:
    """A score of the scores table: estimate [low, high] (n, SD across benchmarks)."""
    if score is None or math.isnan(score.interval.estimate):
        return "n/a"
    sd = score.sd_benchmarks
    spread = "" if math.isnan(sd) else f", SD across benchmarks {sd:.4f}"
    return f"{score_text(key, score.interval, 4)} (n={score.n_items}{spread})"


def tables(analysis: GroundingAnalysis) -> pd.DataFrame:
    """Rows: the scores; columns: overall and each benchmark ("estimate [low, high]")."""
    rows = []
    for key, label in ROWS:
        row = {"score": label, "overall": _fmt(key, analysis.overall.get(key))}
        for bench, sc in analysis.per_benchmark.items():
            row[bench] = _fmt(key, sc.get(key))
        rows.append(row)
    return pd.DataFrame(rows)


#: How the page and the summary state the intervals.
INTERVALS = (
    "Estimates with 95 % two-stage bootstrap intervals (benchmarks, then items within them): "
    "ECE and AUROC too are each benchmark's own, averaged over the benchmarks; the rows "
    "'pooled over items', AURC and E-AURC pool the items, with an item bootstrap."
)


def beside(analysis: GroundingAnalysis) -> str:
    """'; beside it: the runs a, b' where other runs are compared with this one."""
    names = ", ".join(a.name for a in analysis.others)
    return f"; beside it: the runs {names}" if names else ""


def num(value: Any, digits: int = 3) -> str:
    """A number of the analysis with ``digits`` decimals ('n/a' when missing or NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def variation_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """Content variation per axis: alternatives scored, the share with JSD <= 0.1, and for
    sampled alternatives how many were sampled and accepted, and the main rejection
    reasons."""
    sampling = analysis.variation_sampling
    rows = []
    for axis, v in analysis.variation.items():
        row: dict[str, str | int] = {"axis": axis, "alternatives": v.n}
        row["P(JSD <= 0.1)"] = num(v.share)
        if axis in sampling:
            s = sampling[axis]
            row["sampled / accepted"] = f"{s.sampled} / {s.accepted}"
            top = sorted(s.reasons.items(), key=lambda kv: -kv[1])[:2]
            row["rejected because"] = "; ".join(f"{n} x {why}" for why, n in top)
        rows.append(row)
    return pd.DataFrame(rows)


#: Table 2's score columns: the paper's four, then ECE and AUROC pooled over items.
TABLE2_COLUMNS = (*TABLE2, "ECE pooled", "AUROC pooled")


def readouts_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """The methods side by side (the paper's Table 2): every read-out of the run and of the
    runs beside it (:func:`~clearsight.grounding.page.figures.methods`), with ECE, AUROC
    (means over benchmarks), TGS-self, TGS-pair, ECE and AUROC pooled over items (estimate
    [95 % interval]), coverage and P(JSD <= 0.1) per axis."""
    rows = []
    keys = zip((*TABLE2, "ECE_pooled", "AUROC_pooled"), TABLE2_COLUMNS, strict=True)
    columns = tuple(keys)
    for name, r in methods(analysis):
        row = {"method": name, **_score_cells(r.scores, columns)}
        row["coverage"] = num(r.coverage)
        for axis in AXES:
            v = r.variation[axis]
            row[f"P(JSD<=0.1) {axis}"] = f"{num(v.share)} (n={v.n})"
        rows.append(row)
    return pd.DataFrame(rows)


#: How each measure's common-valid population is named in the report.
POPULATIONS: dict[str, str] = {
    "masking": "masking (Figs. 11/12)",
    "tgs_self": "TGS-self (Fig. 15)",
    "calibration": "ECE and AUROC (Figs. 15/16)",
    **{f"tgs_pair_{axis}": f"TGS-pair {axis}" for axis in AXES},
}


def common_note(analysis: GroundingAnalysis) -> str:
    """The common-valid populations in one sentence: per measure its items and methods."""
    common = analysis.common
    if common is None:
        return ""
    parts = [
        f"{label}: n = {common.n[m]} items ({common.methods[m]} methods)"
        for m, label in POPULATIONS.items()
    ]
    return (
        "Each measure on the items valid for every method of this report that has it (its "
        "common-valid population; Table 2 and the scores table keep each run's own valid "
        "items): " + "; ".join(parts) + "."
    )


#: The columns of :func:`common_frame`: (score key, column).
COMMON_COLUMNS: tuple[tuple[str, str], ...] = (
    ("E_r0.00", "E(r=0)"),
    ("dE_r1.00", "ΔE(r=1)"),
    ("tgs_self", "TGS-self"),
    ("ECE", "ECE"),
    ("AUROC", "AUROC"),
    ("tgs_pair", "TGS-pair"),
    *((f"tgs_pair_{axis}", f"TGS-pair {axis}") for axis in AXES),
)


def common_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """Every method's scores on the common-valid populations (estimate [95 % interval]):
    the numbers of Figs. 11/12 (E at r = 0 and its change at r = 1) and 15/16."""
    rows = [
        {"method": name, **_score_cells(r.scores, COMMON_COLUMNS)}
        for name, r in methods(analysis, common=True)
    ]
    return pd.DataFrame(rows)


def _score_cells(scores: dict[str, Score], columns: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """A method's cells: per (score key, column) its estimate [95 % interval], 'n/a' where
    it has none."""
    cells = {}
    for key, column in columns:
        d = scores.get(key)
        ok = d is not None and not math.isnan(d.interval.estimate)
        cells[column] = score_text(key, d.interval, 3) if d is not None and ok else "n/a"
    return cells


def hesitation_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """Hesitation events, the share whose confidence moved by at most 0.02, the mean change."""
    h = analysis.hesitation
    if h is None:
        return pd.DataFrame()
    row = {
        "events": h.n_events,
        "trajectories with an event": h.n_trajectories,
        "most events in one trajectory": h.max_events_per_trajectory,
        "P(|c_pre - c_post| <= 0.02)": num(h.stable_share),
        "mean change": num(h.mean_change, 4),
    }
    return pd.DataFrame([row])


def _test_row(test: str, w: WilcoxonTest) -> dict[str, str | int]:
    """One row of the tests table."""
    return {"test": test, "T": num(w.statistic, 1), "p": num(w.p, 4), "benchmarks": w.n}


def tests_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """The exact Wilcoxon tests: visible against masked, then this run against the others."""
    rows = []
    if (w := analysis.visible_vs_masked) is not None:
        rows.append(_test_row("visible vs masked confidence, over benchmark means", w))
    for c in analysis.comparisons:
        rows.append(_test_row(f"{c.score}: this run vs {c.other}", c.test))
    return pd.DataFrame(rows)


def judge_input(n: float, with_image: float) -> str:
    """What the judge saw of ``n`` pairs, ``with_image`` of them with the problem's image:
    'image and text' (the paper's image-aware judge), 'text only' (a judge that takes no
    images, or problems without one) or the share that had the image."""
    if with_image >= n:
        return "image and text"
    return "text only" if not with_image else f"image and text in {int(with_image)} of {int(n)}"


def judge_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """Per axis: pairs judged, the share where the judge picked the bad side, and what the
    judge saw (:func:`judge_input`)."""
    rows = [
        {
            "axis": axis,
            "pairs": v["n"],
            "picked the bad side": num(v["picked_bad"]),
            "judge saw": judge_input(v["n"], v.get("with_image", 0)),
        }
        for axis, v in analysis.judge.items()
    ]
    return pd.DataFrame(rows)


def failures_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """Failed or skipped items by kind and reason."""
    rows = [{"kind: reason": k, "items": n} for k, n in sorted(analysis.failures.items())]
    return pd.DataFrame(rows)


def retention_frame(analysis: GroundingAnalysis) -> pd.DataFrame | None:
    """The TGS-Bench retention table when the run scored a TGS-Bench file with one."""
    frame = analysis.retention
    return frame if frame is not None and not frame.empty else None
