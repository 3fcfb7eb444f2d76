"""The probe protocol's report: analogues of the paper's Tables 1-9 and 11, Figures 2-7 (as
plots beside their tables, drawn by :mod:`clearsight.probe.page.figures`), the early-anchoring
share and speed ratio, and risk-coverage curves of the cross-run confidence.

Rendering only: every number comes from the run's analysis
(:func:`clearsight.probe.analysis.analyse_probe`, a
:class:`~clearsight.probe.analysis.ProbeAnalysis`), here titled, drawn and written in the
layout every report shares
(:mod:`clearsight.pages.output`): a self-contained ``report.html`` (every model output
escaped), ``summary.md`` with every table and ``summary.csv`` with Table 1, the main one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from clearsight.faces.face import NO_APPENDIX, Appendix
from clearsight.pages.cost import cost_markdown
from clearsight.pages.headline import headline_html, headline_markdown
from clearsight.pages.html import cell_text, esc, frame_table, img, page
from clearsight.pages.output import ReportPaths, md_table, md_text, write_report
from clearsight.pages.plots import Drawn, risk_coverage_figure
from clearsight.probe.analysis import ProbeAnalysis, analyse_probe
from clearsight.probe.numbers.risk import RiskPanel
from clearsight.probe.page.examples import examples_html
from clearsight.probe.page.figures import (
    bars_figure,
    belief_figure,
    consistency_datasets_figure,
    consistency_figure,
    sensor_ece_figure,
)
from clearsight.probe.page.headline import PROBE_CAPTION, probe_headline

__all__ = [
    "FIG5",
    "MAIN_TABLE",
    "build_probe_report",
    "probe_figures",
    "probe_tables",
    "selective_figure",
]

#: The title of Fig. 4 (belief trajectories), drawn above Table 7's convergence numbers.
FIG4 = (
    "Fig. 4 and Table 7: belief in the gold option p_correct(t) per probed conversation, and "
    "convergence (steps to max b >= 0.7, reach rate %), per reasoner, sensor and signal"
)
#: The title of Fig. 5, drawn under its table (the mean, median, 90th percentile and most).
FIG5 = "Fig. 5: queries per conversation by strategy and dataset"
#: The title of Fig. 6, drawn under its table (Fig. 2 split by dataset).
FIG6 = (
    "Fig. 6: accuracy (%) by the sensor's direct consistency c of 11, per dataset (solid: "
    "the VLM answering directly; dashed: with a reasoner)"
)
#: The title of the early-anchoring table (the paper's §4.4 shares, from the belief probe).
ANCHORING = (
    "Early anchoring and convergence speed (§4.4): anchored = % of probed conversations at max "
    "b >= 0.7 after the first reply; steps = mean steps to it; speed = the dataset's slowest "
    "steps over these (clearsight's reading of the paper's 'x times faster')"
)


def fig7_title(table: pd.DataFrame) -> str:
    """Fig. 7's title, naming the two sensors of largest mean ECE gap where there are two
    (:func:`~clearsight.probe.numbers.sensors.most_distinct_sensors`)."""
    from clearsight.probe.numbers.sensors import most_distinct_sensors

    pair = most_distinct_sensors(table)
    apart = "" if pair is None else f"; most distinct: {pair[0]} and {pair[1]}, {pair[2]:.3f} apart"
    return (
        "Fig. 7: each sensor's ECE by dataset from the stage-1 build samples (the majority "
        "letter's share as confidence: clearsight's reading)" + apart
    )


#: The title of the main table, the one summary.csv holds.
MAIN_TABLE = (
    "Table 1: accuracy (mean ± SD over runs, %) and cross-run ECE by domain, each domain the "
    "macro-average of its datasets"
)


def probe_tables(analysis: ProbeAnalysis) -> dict[str, pd.DataFrame]:
    """The report's tables by title, in order (empty frames where the run lacks the data; none
    at all for a run without a finished conversation)."""
    if not analysis.conversations:
        return {}
    source = (
        "stage-1 build samples"
        if analysis.consistency_from_build
        else "none: c is defined by the stage-1 build samples, `clearsight probe build`"
    )
    return {
        MAIN_TABLE: analysis.domains,
        "Table 11: accuracy, cross-run ECE, AURC and E-AURC by dataset": analysis.datasets,
        f"Fig. 2: accuracy (%) by the sensor's direct consistency c of 11 ({source})": (
            analysis.consistency
        ),
        "Fig. 3: consistency-signal ablation (true, none, random u)": analysis.ablation,
        "Table 3: query types (%) by round (rounds counted by query), averaged over datasets, "
        "one BP trial per reasoner (its first run, true u, first sensor)": analysis.query_types,
        "Table 3 pooled (clearsight's wider population: every strategy, run, sensor and "
        "signal)": analysis.query_types_pooled,
        FIG6: analysis.consistency_datasets,
        FIG5: analysis.queries,
        FIG4: analysis.convergence,
        "Table 7 pooled (clearsight's wider population: each reasoner's conversations with "
        "every sensor and signal)": analysis.convergence_pooled,
        ANCHORING: analysis.anchoring,
        fig7_title(analysis.sensor_calibration): analysis.sensor_calibration,
        "Table 9: VLM calls per question": analysis.calls,
        "Table 2: BP accuracy (%) by dataset before and after self-distillation": (
            analysis.distillation
        ),
        "Table 5: semantic-equivalence judges against people's labels of u (exact and "
        "within-1 agreement %, MAE, Cohen's kappa, quadratic kappa, Pearson)": (
            analysis.validations
        ),
        "The query-type judge against people's labels of query types (App. H: % equal to the "
        "consensus, % equal to at least one person's, Cohen's kappa against the consensus)": (
            analysis.query_type_validations
        ),
        "Table 8: wall-clock seconds per conversation by strategy and sensor (the "
        "conversation record's time, model loading excluded)": (analysis.latency),
        "Table 4: accuracy (%, mean over runs) by dataset with each sensor (runs with another "
        "sensor side by side)": analysis.sensors,
        "Table 6: accuracy (mean ± SD over runs, %) and cross-run ECE by dataset with each K "
        "(runs with another K side by side)": analysis.samples,
    }


def probe_figures(analysis: ProbeAnalysis, tables: dict[str, pd.DataFrame]) -> dict[str, bytes]:
    """Figs. 2-7 by the title of the table each belongs under (only those with data)."""
    out: dict[str, bytes | None] = {}
    for title, frame in tables.items():
        if title.startswith("Fig. 2"):
            out[title] = consistency_figure(frame)
        elif title == FIG6:
            out[title] = consistency_datasets_figure(frame)
        elif title.startswith("Fig. 3"):
            out[title] = bars_figure(frame, "acc", "acc_std", "accuracy (%, ± SD over runs)")
        elif title == FIG4:
            out[title] = belief_figure(analysis.beliefs)
        elif title == FIG5:
            out[title] = bars_figure(frame, "queries", None, "queries per conversation")
        elif title.startswith("Fig. 7"):
            out[title] = sensor_ece_figure(frame)
    return {k: v for k, v in out.items() if v is not None}


def selective_figure(panels: Sequence[RiskPanel]) -> bytes | None:
    """Risk-coverage curves of the cross-run confidence gating the cross-run predictions: one
    panel per reasoner and sensor, one curve per strategy and signal
    (:func:`~clearsight.probe.numbers.risk.risk_panels`)."""
    drawn: list[tuple[str, list[Drawn]]] = [
        (panel.title, [(c.label, int(c.confidence.size), c.curve) for c in panel.curves])
        for panel in panels
    ]
    return risk_coverage_figure(drawn) if drawn else None


def _tables_html_md(
    tables: dict[str, pd.DataFrame], figures: dict[str, bytes]
) -> tuple[list[str], list[str]]:
    """Each table (with its figure) as HTML and as Markdown."""
    body, md = [], []
    for title, frame in tables.items():
        body.append(f"<h2>{esc(title)}</h2>")
        body.append(frame_table(frame))
        if title in figures:
            body.append(img(figures[title], title, title))
        md.append(f"\n## {md_text(title)}\n\n")
        md.append(md_table(frame.map(cell_text) if not frame.empty else frame))
    return body, md


def _selective_section(panels: Sequence[RiskPanel]) -> str:
    """The report's section of risk-coverage curves (:func:`selective_figure`), or a note
    where no setting has the two runs per instance a cross-run confidence needs."""
    figure = img(
        selective_figure(panels),
        "risk-coverage curves of the cross-run confidence",
        "Risk (error share of the accepted predictions) against coverage, accepting the "
        "instances whose cross-run confidence is at least a threshold; AURC and E-AURC "
        "per setting and dataset in Table 11 (aurc, e_aurc).",
    )
    return "<h2>Selective prediction (cross-run confidence)</h2>\n" + (
        figure or "<p class='note'>(no setting with two or more runs per instance)</p>"
    )


def render_probe_report(
    analysis: ProbeAnalysis, run_dir: Path | str, appendix: Appendix = NO_APPENDIX
) -> ReportPaths:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` of ``analysis`` (and the
    report's ``appendix``) into the probe run directory ``run_dir``."""
    run = Path(run_dir)
    tables = probe_tables(analysis)
    figures = probe_figures(analysis, tables)
    n = analysis.conversations
    body = [
        f"<h1>Probe report: {esc(run.name)}</h1>",
        f"<p class='note'>{n} conversations. Accuracy is per run, averaged over runs; "
        "ECE is cross-run (confidence = share of the R runs agreeing with the most common "
        "committed option); rounds include the committing turn; VLM calls = K per answered "
        "query.</p>",
        *(f"<p class='note'>{esc(line)}</p>" for line in analysis.settings),
    ]
    headline, sentences = probe_headline(analysis.domains)
    body.insert(1, headline_html(headline, sentences, PROBE_CAPTION))
    md = [
        f"# Probe report: {md_text(run.name)}\n\n",
        "\n".join(headline_markdown(headline, sentences, PROBE_CAPTION)),
        f"\n{n} conversations.\n",
        *(f"\n{md_text(line)}\n" for line in analysis.settings),
    ]
    tables_html, tables_md = _tables_html_md(tables, figures)
    body += tables_html
    md += tables_md
    body.append(_selective_section(analysis.risk))
    body.append("<h2>Example conversations</h2>")
    body.append(examples_html(analysis.examples))
    body.append(appendix.html)  # empty without re-asks
    md.append("\n" + "\n".join([*appendix.markdown, *cost_markdown(analysis.cost)]))
    return write_report(
        run,
        html=page(f"clearsight probe: {run.name}", "\n".join(body)),
        summary_md="".join(md),
        summary_csv=tables.get(MAIN_TABLE, pd.DataFrame()),
    )


def build_probe_report(
    run_dir: Path | str, others: Sequence[Path | str] = (), appendix: Appendix = NO_APPENDIX
) -> ReportPaths:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` into the probe run directory
    (its analysis, :func:`~clearsight.probe.analysis.analyse_probe`, rendered); ``others``:
    further probe runs whose settings stand beside the run's own in every table (with another
    sensor or K, Tables 4 and 6 too; ``clearsight report RUN OTHER...``); ``appendix``: what
    the report adds that is not the probe's (the run's re-asks)."""
    return render_probe_report(analyse_probe(run_dir, others), run_dir, appendix)
