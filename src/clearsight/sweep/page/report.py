"""The sweep's report: ``report.html``, ``summary.md`` and ``summary.csv`` of a sweep run.

:func:`build_sweep_report` reads the run (read-only), computes its numbers with one seeded
scene bootstrap (:func:`clearsight.sweep.analysis.analyse_sweep`) and writes the three files
(:func:`write_sweep_report`: a given analysis rendered, nothing read from the run).
:func:`summary_table` gives an analysis' crossings/W table as a DataFrame to print.

The page's order: the run's provenance, then per task (identification t2
first, verification t3 in its own section) the curves (Fig. 3), crossings and W, reliability
diagrams with the calibration table, the full sweep table (Tables IX/X) and the controls; then
ImageNet-C severities on the physical axis (Fig. 7) and a few qualitative examples.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from clearsight.faces.face import NO_APPENDIX, Appendix
from clearsight.pages.cost import Cost
from clearsight.pages.html import Frame, fmt_ci, fmt_num, fmt_range
from clearsight.pages.output import MarkdownBlock, ReportPaths, Summary, md_text, write_report
from clearsight.sweep.analysis import SweepAnalysis, analyse_sweep
from clearsight.sweep.page.corruptions import corruption_crossing_rows
from clearsight.sweep.page.headline import headline_block
from clearsight.sweep.page.labels import depth_line, interval, interval_m, interval_of
from clearsight.sweep.page.recalibration import recalibration_markdown
from clearsight.sweep.page.sections import DEPTH_NOTE, SETTINGS_HEADING, sweep_page
from clearsight.sweep.page.settings import settings_frame
from clearsight.sweep.page.tables import WORDINGS_NOTE, wordings_table
from clearsight.sweep.results import TASK_NAMES
from clearsight.sweep.signals import AWARENESS

__all__ = ["build_sweep_report", "summary_table", "write_sweep_report"]


def summary_table(analysis: SweepAnalysis) -> pd.DataFrame:
    """The crossings and W of every model × task × arm × wording × signal of ``analysis``,
    ready to print.

    Columns: model, task, arm, wording, signal, ``V*`` (with '≤ 1.95 m' / '≥ 250 m' for
    censored crossings), its 95 % interval, ``W`` (with '≥' / '≤' for bounds) and its interval.
    """
    return _display_crossings(analysis.labelled)


def build_sweep_report(
    run_dir: Path | str,
    out_dir: Path | str | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    thumbnails: bool = True,
    appendix: Appendix = NO_APPENDIX,
) -> ReportPaths:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` for the run in ``run_dir``.

    ``out_dir`` defaults to the run directory. ``n_boot`` bootstrap replicates resample scenes
    with replacement from ``numpy.random.default_rng(seed)``: the same run, B and seed give the
    same numbers. ``thumbnails`` draws the qualitative examples' images (they need the photo,
    its depth and the physics, a few seconds). ``appendix``: what the report adds that is not
    the sweep's (the run's re-asks: :func:`clearsight.report.build_report` gives it).
    """
    run_dir = Path(run_dir)
    analysis = analyse_sweep(run_dir, n_boot=n_boot, seed=seed, thumbnails=thumbnails)
    out = Path(out_dir) if out_dir is not None else run_dir
    return write_sweep_report(analysis, out, appendix)


def write_sweep_report(
    analysis: SweepAnalysis, out_dir: Path | str, appendix: Appendix = NO_APPENDIX
) -> ReportPaths:
    """Render ``analysis`` (:func:`~clearsight.sweep.analysis.analyse_sweep`, its examples
    included) and ``appendix`` as ``report.html``, ``summary.md`` and ``summary.csv`` in
    ``out_dir``: summary.csv is the crossings with their labels and the bootstrap's B, seed and
    interval level, then each ImageNet-C corruption's on its metre grid
    (:func:`~clearsight.sweep.page.corruptions.corruption_crossing_rows`). The page and
    summary.md read the analysis' one headline table."""
    boot = analysis.bootstrap
    rows = [analysis.labelled, corruption_crossing_rows(analysis.corruptions)]
    crossings = pd.concat([r for r in rows if not r.empty] or rows[:1], ignore_index=True)
    summary_csv = crossings.assign(n_boot=boot.n_boot, seed=boot.seed, ci_level=boot.level)
    page, summary = sweep_page(analysis, appendix), sweep_summary(analysis, appendix)
    return write_report(Path(out_dir), html=page, summary_md=summary, summary_csv=summary_csv)


def _display_crossings(crossings: pd.DataFrame) -> pd.DataFrame:
    """The crossings frame reduced to printable columns."""
    if crossings.empty:
        return pd.DataFrame(columns=["model", "task", "arm", "wording", "signal", "V*", "W"])
    out = pd.DataFrame(
        {
            "model": crossings["model"],
            "task": crossings["task"],
            "arm": crossings["arm"],
            "wording": crossings["wording"],
            "signal": crossings["signal"],
            "V*": crossings["v_star"],
            "V* 95% CI": [
                interval_of(v, interval_m(lo, hi))
                for v, lo, hi in zip(
                    crossings["v_star"], crossings["v_low_m"], crossings["v_high_m"], strict=True
                )
            ],
            "W": crossings["w_display"],
            "W 95% CI": [
                interval_of(w, interval(lo, hi))
                for w, lo, hi in zip(
                    crossings["w_display"], crossings["w_low"], crossings["w_high"], strict=True
                )
            ],
            "note": crossings["note"],
        }
    )
    return out.reset_index(drop=True)


def _controls_display(controls: pd.DataFrame) -> pd.DataFrame:
    """The controls table with formatted numbers (for Markdown)."""
    return pd.DataFrame(
        {
            "model": controls["model"],
            "wording": controls["wording"],
            "condition": controls["condition"],
            "n": controls["n"].astype(int),
            "accuracy [95% CI]": [
                fmt_ci(e, lo, hi)
                for e, lo, hi in zip(
                    controls["accuracy"], controls["acc_low"], controls["acc_high"], strict=True
                )
            ],
            **{s.short: controls[s.mean_column].map(fmt_num) for s in AWARENESS},
            "chance": controls["chance"].map(fmt_num),
        }
    )


def sweep_summary(analysis: SweepAnalysis, appendix: Appendix) -> Summary:
    """summary.md as a value: the headline (``## Headline``: the analysis' table rendered by
    :mod:`clearsight.sweep.page.headline`), the crossings/W table and the controls table of
    each task, the ImageNet-C severities on the metre axis, calibration under weather
    (:mod:`clearsight.sweep.page.recalibration`), the ``appendix`` and the cost."""
    run, boot = analysis.run, analysis.bootstrap
    lines: list[str | MarkdownBlock] = [
        f"# clearsight sweep summary — {md_text(run.name)}",
        "",
        headline_block(analysis),
        "## Run",
        "",
        f"Models: {md_text(', '.join(run.models) or '(none)')}. Scenes: {boot.n_scenes}. "
        f"Bootstrap: {boot.n_boot} resamples of the {boot.n_clusters} source photos (a photo's "
        f"scenes together), seed {boot.seed}, "
        f"{round(100 * boot.level)} % percentile intervals.",
        "",
        f"Depth: {md_text(run.depth_source)}; {depth_line(analysis.depth)}.",
        "",
        DEPTH_NOTE,
        "",
        f"## {SETTINGS_HEADING}",
        "",
        Frame(settings_frame(analysis.data.manifest.get("config", {}), boot)),
    ]
    display = _display_crossings(analysis.labelled)
    for task in run.tasks:
        name = md_text(TASK_NAMES.get(task, task))
        lines += [f"## Crossings and blind-spot width W — {name}", ""]
        lines.append(Frame(display[display["task"] == task].drop(columns="task")))
        controls = analysis.tasks[task].controls
        lines += [f"## Controls — {name}", ""]
        lines.append(
            Frame(_controls_display(controls))
            if not controls.empty
            else "_No control conditions in this run._\n"
        )
        lines += _wordings_markdown(analysis, task, name)
    lines += _imagenet_markdown(analysis)
    lines += recalibration_markdown(analysis)
    lines += appendix.markdown  # none without re-asks
    lines.append(Cost(analysis.cost))
    return Summary(lines)


def _wordings_markdown(analysis: SweepAnalysis, task: str, name: str) -> list[str | MarkdownBlock]:
    """Table VI of ``task`` as the page shows it (:func:`wordings_table`), under its heading;
    nothing with fewer than two verbalized wordings."""
    shown = wordings_table(analysis.tasks[task].wordings, analysis.run)
    if shown is None:
        return []
    heading = f"## Verbalized wordings on matched images (Table VI) — {name}"
    return [heading, "", md_text(WORDINGS_NOTE), "", shown]


def _ranges(low: pd.Series, high: pd.Series, digits: int) -> list[str]:
    """Each row's 'low–high' (:func:`fmt_range`)."""
    return [fmt_range(a, b, digits) for a, b in zip(low, high, strict=True)]


def _imagenet_markdown(analysis: SweepAnalysis) -> list[str | MarkdownBlock]:
    """V_eq and the retained gain per severity (median, IQR, P10/P90 and the spread), the
    monotone shares and the accuracy dynamic ranges — what the report's ImageNet-C section
    states."""
    if not analysis.run.has_veq:
        return []
    veq = analysis.veq
    rows = pd.DataFrame(
        {
            "severity": veq["severity"].map(lambda v: fmt_num(v, 0)),
            "median V_eq (m)": veq["veq_median"].map(lambda v: fmt_num(v, 1)),
            "IQR (m)": _ranges(veq["veq_q25"], veq["veq_q75"], 1),
            "P10–P90 (m)": _ranges(veq["veq_p10"], veq["veq_p90"], 1),
            "P90/P10": veq["veq_p90_p10"].map(lambda v: fmt_num(v, 2)),
            "median gain": veq["gain_median"].map(lambda v: fmt_num(v, 3)),
            "gain IQR": _ranges(veq["gain_q25"], veq["gain_q75"], 3),
            "gain P90/P10": veq["gain_p90_p10"].map(lambda v: fmt_num(v, 2)),
            "scenes": veq["n_scenes"].map(lambda v: fmt_num(v, 0)),
        }
    )
    share, ranges = analysis.monotone, analysis.ranges
    return [
        "## ImageNet-C fog on the physical axis",
        "",
        Frame(rows),
        f"V_eq decreases strictly over the severities for {fmt_num(100 * share.strict, 0)} % "
        f"of {share.n} scenes (non-increasing: {fmt_num(100 * share.non_strict, 0)} %). "
        f"Accuracy dynamic range, pooled across models and tasks in each model's main wording: "
        f"{fmt_num(ranges.nominal_pp, 1)} pp over the severities, "
        f"{fmt_num(ranges.physical_pp, 1)} pp over the physical fog levels.",
        "",
    ]
