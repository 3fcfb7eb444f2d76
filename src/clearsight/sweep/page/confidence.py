"""The sweep page's confidence tables of one task: calibration (ECE) with its reliability
diagrams and selective prediction (AURC) with its risk-coverage figure. Rendering only: every
number comes from the analysis.
"""

from __future__ import annotations

from clearsight.pages.html import Col, Details, Figure, Part, Table, fmt_ci, fmt_num
from clearsight.sweep.analysis import TaskAnalysis
from clearsight.sweep.numbers.facts import RunFacts
from clearsight.sweep.page import figures
from clearsight.sweep.page.labels import SIGNAL_LABELS

__all__ = ["calibration_section", "selective_section"]


def calibration_section(numbers: TaskAnalysis, figure: bool = True) -> list[Part]:
    """Reliability diagrams (if ``figure``) and the ECE/MCE/Brier/AUROC table with intervals
    of one task."""
    cal, task = numbers.calibration, numbers.task
    fig = figures.reliability_figure(numbers.reliability) if figure else None
    parts: list[Part] = ["<h3>Calibration</h3>"]
    parts.append(
        Figure(
            fig,
            f"reliability diagrams, {task}",
            "Reliability diagrams (10 equal-width bins, answered items): bin accuracy against "
            "mean confidence, pooled over the clean images and every level of the arm, and at "
            "the two murkiest levels. Marker area ∝ items in the bin; dotted: perfect calibration.",
        )
    )
    if cal.empty:
        return parts
    cols = [
        *_cell_cols(),
        Col("mean conf", lambda r: fmt_num(r.mean_conf)),
        Col("accuracy", lambda r: fmt_num(r.accuracy)),
        Col("ECE [95% CI]", lambda r: fmt_ci(r.ece, r.ece_low, r.ece_high, 3)),
        Col("MCE [95% CI]", lambda r: fmt_ci(r.mce, r.mce_low, r.mce_high, 3)),
        Col("Brier [95% CI]", lambda r: fmt_ci(r.brier, r.brier_low, r.brier_high, 3)),
        Col("AUROC [95% CI]", lambda r: fmt_ci(r.auroc, r.auroc_low, r.auroc_high, 3)),
    ]
    pooled = cal[cal["level"].isin(["pooled"]) | cal["level"].str.startswith("murkiest")]
    parts.append(
        "<p class='note'>Scored on answered items (an abstention has no chosen option to be "
        "right about); AUROC '–' where every scored answer is right or every one wrong. "
        "Brackets: 95 % percentile bootstrap intervals over source photos.</p>"
    )
    parts.append(Table(pooled, cols))
    parts.append(Details("ECE, MCE, Brier and AUROC at every level", [Table(cal, cols)]))
    return parts


def _cell_cols() -> list[Col]:
    """The columns that name a cell of a confidence table and its item counts."""
    return [
        Col("model", lambda r: r.model, text=True),
        Col("arm", lambda r: r.arm, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("signal", lambda r: SIGNAL_LABELS.get(r.signal, r.signal), text=True),
        Col("level", lambda r: r.level, text=True),
        Col("n", lambda r: fmt_num(r.n, 0)),
        Col("n scored", lambda r: fmt_num(r.n_scored, 0)),
    ]


def selective_section(run: RunFacts, numbers: TaskAnalysis, figure: bool = True) -> list[Part]:
    """Risk-coverage curves and AURC against visibility (if ``figure``), and AURC and E-AURC
    of each confidence signal gating the answers, per level, of one task."""
    sel, task = numbers.selective, numbers.task
    if sel.empty:
        return []
    fig = figures.selective_figure(run, numbers) if figure else None
    cols = [
        *_cell_cols(),
        Col("AURC [95% CI]", lambda r: fmt_ci(r.aurc, r.aurc_low, r.aurc_high, 3)),
        Col("E-AURC [95% CI]", lambda r: fmt_ci(r.e_aurc, r.e_aurc_low, r.e_aurc_high, 3)),
    ]
    pooled = sel[sel["level"].isin(["pooled"]) | sel["level"].str.startswith("murkiest")]
    return [
        "<h3>Selective prediction</h3>",
        "<p class='note'>Accepting the answered items whose confidence is at least a "
        "threshold, at every threshold: AURC is the area under the risk (error share of "
        "the accepted) against coverage (share accepted) curve, E-AURC its excess over the "
        "best ordering of the same answers (0: every right answer above every wrong one). "
        "Lower is better. Brackets: 95 % percentile bootstrap intervals over source "
        "photos.</p>",
        Figure(
            fig,
            f"risk-coverage curves and AURC against visibility, {task}",
            "Risk (error share of the accepted answers) against coverage for the main "
            "letter wording's internal confidence and the main verbal wording's verbalized "
            "confidence, at the clean images, the middle level and the murkiest level; "
            "right: each signal's AURC at every level with its 95 % photo-bootstrap "
            "interval.",
        ),
        Table(pooled, cols),
        Details("AURC and E-AURC at every level", [Table(sel, cols)]),
    ]
