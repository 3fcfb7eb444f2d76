"""The grounding report: TGS-self, TGS-pair per axis and averaged, ECE, AUROC, AURC and E-AURC
beside them.

Rendering only: every number comes from the run's analysis
(:func:`clearsight.grounding.analysis.analyse_grounding`, a
:class:`~clearsight.grounding.analysis.GroundingAnalysis`), here titled, drawn and written in
the layout every report shares (:mod:`clearsight.pages.output`): ``report.html`` with the
tables (per benchmark and overall; the calibration read-outs side by side, the paper's Table 2;
content variation, hesitation, the exact Wilcoxon tests, the judge, the TGS-Bench retention and
the failures) and its figures (:mod:`clearsight.grounding.page.figures`), ``summary.md`` and
``summary.csv`` with the scores table. Runs given beside it (other checkpoints or methods) join
Table 2 as rows and the comparison figures (Figs. 6, 7, 15, 16) as methods; their masking
curves and JSD histograms are overlaid on the run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from clearsight.faces.face import NO_APPENDIX, Appendix
from clearsight.grounding.analysis import GroundingAnalysis, WilcoxonTest, analyse_grounding
from clearsight.grounding.page.examples import examples_html, examples_markdown
from clearsight.grounding.page.figures import (
    ece_tgs_figure,
    hesitation_figure,
    jsd_figure,
    masking_figure,
    methods_figure,
    pair_axes_figure,
    selective_figure,
)
from clearsight.grounding.page.headline import GROUNDING_CAPTION, grounding_headline
from clearsight.grounding.page.tables import (
    INTERVALS,
    beside,
    common_frame,
    common_note,
    failures_frame,
    hesitation_frame,
    judge_frame,
    judge_input,
    num,
    readouts_frame,
    retention_frame,
    tables,
    tests_frame,
    variation_frame,
)
from clearsight.pages.cost import cost_html, cost_markdown
from clearsight.pages.headline import headline_html, headline_markdown
from clearsight.pages.html import esc, frame_table, img, page
from clearsight.pages.output import ReportPaths, md_table, md_text, write_report

# ------------------------------------------------------------------------------------ page


#: Alt text and caption of each figure of the page, by the name build_grounding_report gives it.
_FIGURES: dict[str, tuple[str, str]] = {
    "masking": (
        "masking curve",
        "Figs. 11/12: mean expected confidence E (left) and its change from r = 0 (right) "
        "against the share r of rationale tokens masked, every method on the items valid at "
        "every share for all of them (the common-valid population), with 95 % two-stage "
        "intervals.",
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
        "Fig. 15: ECE against TGS-self, one point per method, 95 % intervals on both axes, "
        "each measure on its common-valid population.",
    ),
    "ece_vs_tgs_pair": (
        "ECE against TGS-pair",
        "Fig. 16: ECE against TGS-pair, one point per method, 95 % intervals on both axes, "
        "each measure on its common-valid population.",
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


def _sections(
    analysis: GroundingAnalysis, figures: dict[str, bytes | None]
) -> list[tuple[str, str]]:
    """The page's sections in order, (title, HTML): tables with their figures, then the
    judge, the retention and the failures where the run has them."""
    sections = [
        ("Scores", frame_table(tables(analysis))),
        ("Methods side by side (Table 2)", frame_table(readouts_frame(analysis))),
        ("Calibration against grounding (Fig. 6)", _figure(figures, "methods")),
        ("TGS-pair per axis (Fig. 7)", _figure(figures, "pair_axes")),
        (
            "Common-valid populations (Figs. 11/12, 15/16)",
            f"<p class='note'>{esc(common_note(analysis))}</p>"
            + frame_table(common_frame(analysis)),
        ),
        ("Masking curve (Figs. 11/12)", _figure(figures, "masking")),
        ("Content variation", frame_table(variation_frame(analysis)) + _figure(figures, "jsd")),
        (
            "Hesitation",
            frame_table(hesitation_frame(analysis)) + _figure(figures, "hesitation"),
        ),
        ("Example trajectories with hesitation markers (Figs. 1, 4)", examples_html(analysis)),
        ("Tests", frame_table(tests_frame(analysis))),
        (
            "ECE against TGS (Figs. 15, 16)",
            _figure(figures, "ece_vs_tgs_self") + _figure(figures, "ece_vs_tgs_pair"),
        ),
        ("Selective prediction", _figure(figures, "selective")),
    ]
    if analysis.judge:
        sections.append(("Judge validation", frame_table(judge_frame(analysis))))
    if (retention := retention_frame(analysis)) is not None:
        sections.append(("TGS-Bench retention (kept / attempted)", frame_table(retention)))
    sections.append(("Failed or skipped items", frame_table(failures_frame(analysis))))
    return sections


def render_html(
    analysis: GroundingAnalysis, figures: dict[str, bytes | None], reproducibility: str = ""
) -> str:
    """The self-contained page: the headline, the run's counts, then its sections
    (:func:`_sections`) (and the run's ``reproducibility`` section, where it has re-asks)."""
    sections = _sections(analysis, figures)
    name = analysis.name
    body = [
        f"<h1>Trajectory grounding: {esc(name)}</h1>",
        headline_html(*grounding_headline(analysis), GROUNDING_CAPTION),
        f"<p class='note'>Elicitations: {esc(analysis.n_elicitations)}; own "
        f"trajectories: {esc(analysis.n_trajectories)}; accuracy of own answers: "
        f"{esc(num(analysis.accuracy))}; scores of the read-out "
        f"{esc(analysis.readout)}{esc(beside(analysis))}. {esc(INTERVALS)}</p>",
        f"<p class='note'>Trajectory template: {esc(analysis.trajectory)}.</p>",
        *(f"<h2>{esc(title)}</h2>\n{html}" for title, html in sections),
    ]
    body.append(reproducibility)
    body.append(cost_html(analysis.cost))
    return page(f"clearsight grounding: {name}", "\n".join(body))


def render_grounding_report(
    analysis: GroundingAnalysis, run_dir: Path | str, appendix: Appendix = NO_APPENDIX
) -> ReportPaths:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` of ``analysis`` (and the
    report's ``appendix``) into the grounding run directory ``run_dir``."""
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
        html=render_html(analysis, figures, appendix.html),
        summary_md=summary_markdown(analysis, appendix.markdown),
        summary_csv=tables(analysis),
    )


def build_grounding_report(
    run_dir: Path | str,
    others: Sequence[Path | str] = (),
    *,
    n_boot: int = 5000,
    seed: int = 0,
    appendix: Appendix = NO_APPENDIX,
) -> tuple[ReportPaths, GroundingAnalysis]:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` into the run directory (its
    analysis, :func:`~clearsight.grounding.analysis.analyse_grounding`, rendered); returns
    where they are and the analysis.

    ``others``: further grounding runs (other models, checkpoints or methods) compared by
    exact Wilcoxon over benchmark means of TGS-self and TGS-pair, in Table 2 and Figs. 6, 7, 15
    and 16 beside the run's read-outs, their masking curves and JSD histograms overlaid.
    ``appendix``: what the report adds that is not grounding's (the run's re-asks:
    :func:`clearsight.report.build_report` gives it).
    """
    analysis = analyse_grounding(run_dir, others, n_boot=n_boot, seed=seed)
    return render_grounding_report(analysis, run_dir, appendix), analysis


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
        "## Example trajectories with hesitation markers (Figs. 1, 4)",
        "",
        *examples_markdown(analysis),
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
            f"{v['n']} pairs; it saw {judge_input(v['n'], v.get('with_image', 0))}"
            for axis, v in analysis.judge.items()
        ]
    if (retention := retention_frame(analysis)) is not None:
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
        f"Main read-out: {md_text(analysis.readout)}{md_text(beside(analysis))}",
        "",
        f"Trajectory template: {md_text(analysis.trajectory)}",
        "",
        md_table(tables(analysis)),
    ]
    lines += ["## Methods side by side (Table 2)", "", md_table(readouts_frame(analysis))]
    if analysis.common is not None:
        lines += ["", "## Common-valid populations (Figs. 11/12, 15/16)", ""]
        lines += [md_text(common_note(analysis)), "", md_table(common_frame(analysis))]
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
