"""The grounding report: TGS-self, TGS-pair per axis and averaged, ECE, AUROC, AURC and E-AURC
beside them.

Rendering only: every number comes from the run's analysis
(:func:`clearsight.grounding.analysis.analyse_grounding`, a
:class:`~clearsight.grounding.analysis.GroundingAnalysis`), here titled, drawn and written in
the layout every report shares (:mod:`clearsight.pages.output`): ``report.html`` with the
tables (per benchmark and overall; the calibration read-outs side by side, the paper's Table 2;
content variation, hesitation, the exact Wilcoxon tests, the judge, the TGS-Bench retention and
the failures) and its figures (:mod:`clearsight.report.grounding_figures`), ``summary.md`` and
``summary.csv`` with the scores table. Runs given beside it (other checkpoints or methods) join
Table 2 as rows and the comparison figures (Figs. 6, 7, 15, 16) as methods; their masking
curves and JSD histograms are overlaid on the run's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from clearsight.grounding.analysis import TABLE2, GroundingAnalysis, WilcoxonTest, analyse_grounding
from clearsight.grounding.tgs import AXES, Score
from clearsight.pages.cost import cost_html, cost_markdown
from clearsight.pages.html import esc, frame_table, img, page
from clearsight.pages.output import ReportPaths, md_table, md_text, write_report
from clearsight.report.grounding_figures import (
    ece_tgs_figure,
    hesitation_figure,
    jsd_figure,
    masking_figure,
    methods,
    methods_figure,
    pair_axes_figure,
    selective_figure,
)
from clearsight.report.headline import (
    GROUNDING_CAPTION,
    grounding_headline,
    headline_html,
    headline_markdown,
)
from clearsight.report.reproducibility import reproducibility_html, reproducibility_markdown

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


def _fmt(score: Score | None) -> str:
    """A score of the scores table: estimate [low, high] (n, SD across benchmarks)."""
    if score is None or math.isnan(score.interval.estimate):
        return "n/a"
    i, sd = score.interval, score.sd_benchmarks
    spread = "" if math.isnan(sd) else f", SD across benchmarks {sd:.4f}"
    return f"{i.estimate:+.4f} [{i.low:+.4f}, {i.high:+.4f}] (n={score.n_items}{spread})"


def tables(analysis: GroundingAnalysis) -> pd.DataFrame:
    """Rows: the scores; columns: overall and each benchmark ("estimate [low, high]")."""
    rows = []
    for key, label in ROWS:
        row = {"score": label, "overall": _fmt(analysis.overall.get(key))}
        for bench, sc in analysis.per_benchmark.items():
            row[bench] = _fmt(sc.get(key))
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------ page


#: How the page and the summary state the intervals.
INTERVALS = (
    "Estimates with 95 % two-stage bootstrap intervals (benchmarks, then items within them): "
    "ECE and AUROC too are each benchmark's own, averaged over the benchmarks; the rows "
    "'pooled over items', AURC and E-AURC pool the items, with an item bootstrap."
)


def _beside(analysis: GroundingAnalysis) -> str:
    """'; beside it: the runs a, b' where other runs are compared with this one."""
    names = ", ".join(a.name for a in analysis.others)
    return f"; beside it: the runs {names}" if names else ""


def _num(value: Any, digits: int = 3) -> str:
    """A number of the analysis with ``digits`` decimals ('n/a' when missing or NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _variation_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """Content variation per axis: alternatives scored, the share with JSD <= 0.1, and for
    sampled alternatives how many were sampled and accepted, and the main rejection
    reasons."""
    sampling = analysis.variation_sampling
    rows = []
    for axis, v in analysis.variation.items():
        row: dict[str, str | int] = {"axis": axis, "alternatives": v.n}
        row["P(JSD <= 0.1)"] = _num(v.share)
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
    runs beside it (:func:`~clearsight.report.grounding_figures.methods`), with ECE, AUROC
    (means over benchmarks), TGS-self, TGS-pair, ECE and AUROC pooled over items (estimate
    [95 % interval]), coverage and P(JSD <= 0.1) per axis."""
    rows = []
    for name, r in methods(analysis):
        row: dict[str, str] = {"method": name}
        for key, column in zip(
            (*TABLE2, "ECE_pooled", "AUROC_pooled"), TABLE2_COLUMNS, strict=True
        ):
            d = r.scores.get(key)
            i = d.interval if d is not None else None
            ok = i is not None and not math.isnan(i.estimate)
            row[column] = f"{i.estimate:+.3f} [{i.low:+.3f}, {i.high:+.3f}]" if i and ok else "n/a"
        row["coverage"] = _num(r.coverage)
        for axis in AXES:
            v = r.variation[axis]
            row[f"P(JSD<=0.1) {axis}"] = f"{_num(v.share)} (n={v.n})"
        rows.append(row)
    return pd.DataFrame(rows)


def _hesitation_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """Hesitation events, the share whose confidence moved by at most 0.02, the mean change."""
    h = analysis.hesitation
    if h is None:
        return pd.DataFrame()
    row = {
        "events": h.n_events,
        "trajectories with an event": h.n_trajectories,
        "most events in one trajectory": h.max_events_per_trajectory,
        "P(|c_pre - c_post| <= 0.02)": _num(h.stable_share),
        "mean change": _num(h.mean_change, 4),
    }
    return pd.DataFrame([row])


def _test_row(test: str, w: WilcoxonTest) -> dict[str, str | int]:
    """One row of the tests table."""
    return {"test": test, "T": _num(w.statistic, 1), "p": _num(w.p, 4), "benchmarks": w.n}


def _tests_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """The exact Wilcoxon tests: visible against masked, then this run against the others."""
    rows = []
    if (w := analysis.visible_vs_masked) is not None:
        rows.append(_test_row("visible vs masked confidence, over benchmark means", w))
    for c in analysis.comparisons:
        rows.append(_test_row(f"{c.score}: this run vs {c.other}", c.test))
    return pd.DataFrame(rows)


def _judge_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """Per axis: pairs judged and the share where the judge picked the bad side."""
    rows = [
        {"axis": axis, "pairs": v["n"], "picked the bad side": _num(v["picked_bad"])}
        for axis, v in analysis.judge.items()
    ]
    return pd.DataFrame(rows)


def _failures_frame(analysis: GroundingAnalysis) -> pd.DataFrame:
    """Failed or skipped items by kind and reason."""
    rows = [{"kind: reason": k, "items": n} for k, n in sorted(analysis.failures.items())]
    return pd.DataFrame(rows)


def _retention(analysis: GroundingAnalysis) -> pd.DataFrame | None:
    """The TGS-Bench retention table when the run scored a TGS-Bench file with one."""
    frame = analysis.retention
    return frame if frame is not None and not frame.empty else None


#: Alt text and caption of each figure of the page, by the name build_grounding_report gives it.
_FIGURES: dict[str, tuple[str, str]] = {
    "masking": (
        "masking curve",
        "Mean expected confidence E (left) and its change from r = 0 (right) against the share "
        "r of rationale tokens masked, each run on its items valid at every share, with 95 % "
        "two-stage intervals.",
    ),
    "jsd": (
        "JSD histograms",
        "JSD between the confidence distributions of a trajectory and its content variant, per "
        "axis, each run as the share of its alternatives; dashed: the 0.1 threshold.",
    ),
    "hesitation": (
        "hesitation scatter",
        "Confidence before and after every hesitation event (one point each, the answer held "
        "fixed); the diagonal is no change.",
    ),
    "methods": (
        "ECE, TGS-self and TGS-pair per method",
        "Fig. 6: ECE (mean over benchmarks), TGS-self and TGS-pair of every method (run and "
        "read-out) with 95 % two-stage intervals; lower ECE, higher TGS is better.",
    ),
    "pair_axes": (
        "TGS-pair per axis",
        "Fig. 7: TGS-pair on each axis (the bad trajectory's one error in vision, reasoning or "
        "the answer) per method, with 95 % two-stage intervals.",
    ),
    "ece_vs_tgs_self": (
        "ECE against TGS-self",
        "Fig. 15: ECE against TGS-self, one point per method, 95 % intervals on both axes.",
    ),
    "ece_vs_tgs_pair": (
        "ECE against TGS-pair",
        "Fig. 16: ECE against TGS-pair, one point per method, 95 % intervals on both axes.",
    ),
    "selective": (
        "risk-coverage curves",
        "Risk (error share of the accepted answers) against coverage, accepting the own "
        "answers whose visible self confidence is at least a threshold; AURC and E-AURC with "
        "item-bootstrap intervals in the scores table.",
    ),
}


def _figure(figures: dict[str, bytes | None], name: str) -> str:
    """The figure ``name`` inlined with its caption, or a note when the run lacks its data."""
    alt, caption = _FIGURES[name]
    return img(figures[name], alt, caption) or "<p class='note'>(no data in this run)</p>"


def render_html(
    analysis: GroundingAnalysis, figures: dict[str, bytes | None], reproducibility: str = ""
) -> str:
    """The self-contained page: the scores table, the masking curve, variation, hesitation,
    the tests, ECE against TGS, the judge and the failures, tables with their figures (and the
    run's ``reproducibility`` section, where it has re-asks)."""
    sections = [
        ("Scores", frame_table(tables(analysis))),
        ("Methods side by side (Table 2)", frame_table(readouts_frame(analysis))),
        ("Calibration against grounding (Fig. 6)", _figure(figures, "methods")),
        ("TGS-pair per axis (Fig. 7)", _figure(figures, "pair_axes")),
        ("Masking curve", _figure(figures, "masking")),
        ("Content variation", frame_table(_variation_frame(analysis)) + _figure(figures, "jsd")),
        (
            "Hesitation",
            frame_table(_hesitation_frame(analysis)) + _figure(figures, "hesitation"),
        ),
        ("Tests", frame_table(_tests_frame(analysis))),
        (
            "ECE against TGS (Figs. 15, 16)",
            _figure(figures, "ece_vs_tgs_self") + _figure(figures, "ece_vs_tgs_pair"),
        ),
        ("Selective prediction", _figure(figures, "selective")),
    ]
    if analysis.judge:
        sections.append(("Judge validation", frame_table(_judge_frame(analysis))))
    if (retention := _retention(analysis)) is not None:
        sections.append(("TGS-Bench retention (kept / attempted)", frame_table(retention)))
    sections.append(("Failed or skipped items", frame_table(_failures_frame(analysis))))
    name = analysis.name
    body = [
        f"<h1>Trajectory grounding: {esc(name)}</h1>",
        headline_html(*grounding_headline(analysis), GROUNDING_CAPTION),
        f"<p class='note'>Elicitations: {esc(analysis.n_elicitations)}; own "
        f"trajectories: {esc(analysis.n_trajectories)}; accuracy of own answers: "
        f"{esc(_num(analysis.accuracy))}; scores of the read-out "
        f"{esc(analysis.readout)}{esc(_beside(analysis))}. {esc(INTERVALS)}</p>",
        f"<p class='note'>Trajectory template: {esc(analysis.trajectory)}.</p>",
        *(f"<h2>{esc(title)}</h2>\n{html}" for title, html in sections),
    ]
    body.append(reproducibility)
    body.append(cost_html(analysis.cost))
    return page(f"clearsight grounding: {name}", "\n".join(body))


def render_grounding_report(analysis: GroundingAnalysis, run_dir: Path | str) -> ReportPaths:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` of ``analysis`` into the
    grounding run directory ``run_dir``."""
    figures = {
        "methods": methods_figure(analysis),
        "pair_axes": pair_axes_figure(analysis),
        "ece_vs_tgs_self": ece_tgs_figure(analysis, "tgs_self"),
        "ece_vs_tgs_pair": ece_tgs_figure(analysis, "tgs_pair"),
        "jsd": jsd_figure(analysis),
        "masking": masking_figure(analysis),
        "hesitation": hesitation_figure(analysis),
        "selective": selective_figure(analysis),
    }
    return write_report(
        Path(run_dir),
        html=render_html(analysis, figures, reproducibility_html(Path(run_dir))),
        summary_md=summary_markdown(analysis, reproducibility_markdown(Path(run_dir))),
        summary_csv=tables(analysis),
    )


def build_grounding_report(
    run_dir: Path | str, others: Sequence[Path | str] = (), *, n_boot: int = 5000, seed: int = 0
) -> tuple[ReportPaths, GroundingAnalysis]:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` into the run directory (its
    analysis, :func:`~clearsight.grounding.analysis.analyse_grounding`, rendered); returns
    where they are and the analysis.

    ``others``: further grounding runs (other models, checkpoints or methods) compared by
    exact Wilcoxon over benchmark means of TGS-self and TGS-pair, in Table 2 and Figs. 6, 7, 15
    and 16 beside the run's read-outs, their masking curves and JSD histograms overlaid.
    """
    analysis = analyse_grounding(run_dir, others, n_boot=n_boot, seed=seed)
    return render_grounding_report(analysis, run_dir), analysis


def _test_json(w: WilcoxonTest | None, n_key: str = "n_benchmarks") -> dict[str, float] | None:
    """A test as the summary prints it (T, p and its number of benchmarks)."""
    return None if w is None else {"T": w.statistic, "p": w.p, n_key: w.n}


def _summary_details(analysis: GroundingAnalysis) -> list[str]:
    """summary.md below the tables: variation, hesitation, tests, judge, retention."""
    lines = ["## Content variation", ""]
    for axis, v in analysis.variation.items():
        lines.append(f"- {md_text(axis)}: P(JSD <= 0.1) = {v.share:.3f} (n = {v.n})")
    for axis, s in analysis.variation_sampling.items():
        lines.append(
            f"- {md_text(axis)}: {s.sampled} sampled, {s.accepted} accepted; "
            f"rejected: {md_text(s.reasons)}"
        )
    h = asdict(analysis.hesitation) if analysis.hesitation is not None else {}
    lines += [
        "",
        "## Hesitation",
        "",
        f"- events: {h.get('n_events')} in {h.get('n_trajectories')} trajectories (at most "
        f"{h.get('max_events_per_trajectory')} in one); P(|c_pre - c_post| <= 0.02) = "
        f"{h.get('stable_share')}; mean change = {h.get('mean_change')}",
        "",
        "## Tests",
        "",
        f"- visible vs masked (exact Wilcoxon over benchmark means): "
        f"{_test_json(analysis.visible_vs_masked)}",
    ]
    lines += [
        f"- {md_text({'other': c.other, 'score': c.score, **(_test_json(c.test, 'n') or {})})}"
        for c in analysis.comparisons
    ]
    if analysis.judge:
        lines += ["", "## Judge validation", ""]
        lines += [
            f"- {md_text(axis)}: judge picked the bad side in {v['picked_bad']:.3f} of "
            f"{v['n']} pairs"
            for axis, v in analysis.judge.items()
        ]
    if (retention := _retention(analysis)) is not None:
        lines += ["", "## TGS-Bench retention (kept / attempted)", "", md_table(retention)]
    return lines


def summary_markdown(analysis: GroundingAnalysis, reproducibility: Sequence[str] = ()) -> str:
    """The Markdown summary: the table, variation, hesitation, tests, judge, failures (and the
    run's ``reproducibility`` section, where it has re-asks)."""
    lines = [
        "# Trajectory grounding",
        "",
        *headline_markdown(*grounding_headline(analysis), GROUNDING_CAPTION),
        f"Elicitations: {analysis.n_elicitations}; own trajectories: "
        f"{analysis.n_trajectories}; accuracy of own answers: {analysis.accuracy}",
        "",
        INTERVALS,
        "",
        f"Main read-out: {md_text(analysis.readout)}{md_text(_beside(analysis))}",
        "",
        f"Trajectory template: {md_text(analysis.trajectory)}",
        "",
        md_table(tables(analysis)),
    ]
    lines += ["## Methods side by side (Table 2)", "", md_table(readouts_frame(analysis))]
    lines += _summary_details(analysis)
    lines += ["", "## Failed or skipped items", ""]
    failures = sorted(analysis.failures.items())
    lines += [f"- {n} x {md_text(k)}" for k, n in failures] or ["- none"]
    lines += ["", *reproducibility, *cost_markdown(analysis.cost)]
    return "\n".join(lines) + "\n"


__all__ = [
    "build_grounding_report",
    "readouts_frame",
    "render_grounding_report",
    "render_html",
    "summary_markdown",
    "tables",
]
