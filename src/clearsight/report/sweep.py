"""The sweep's report: ``report.html``, ``summary.md`` and ``summary.csv`` of a sweep run.

:func:`build_sweep_report` reads the run (read-only), computes its numbers with one seeded
scene bootstrap (:func:`clearsight.sweep.analysis.analyse_sweep`) and writes the three files
(:func:`write_sweep_report`: a given analysis rendered). :func:`summary_table` gives the
crossings/W table as a DataFrame for the CLI to print.

The page follows the paper's order: the run's provenance, then per task (identification t2
first, verification t3 in its own section) the curves (Fig. 3), crossings and W, reliability
diagrams with the calibration table, the full sweep table (Tables IX/X) and the controls; then
ImageNet-C severities on the physical axis (Fig. 7) and a few qualitative examples.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from clearsight.report.cost import cost_markdown
from clearsight.report.headline import headline_markdown, sweep_caption, sweep_headline
from clearsight.report.html import fmt_ci, fmt_num, fmt_range
from clearsight.report.labels import depth_line, interval, interval_m, labelled_crossings
from clearsight.report.output import ReportPaths, md_table, md_text, write_report
from clearsight.report.reproducibility import reproducibility_markdown
from clearsight.report.sections import DEPTH_NOTE, render_report
from clearsight.sweep.analysis import SweepAnalysis, analyse_sweep
from clearsight.sweep.headline import headline_table
from clearsight.sweep.numbers.crossings import scene_bootstrap
from clearsight.sweep.results import TASK_NAMES, load_run_data

__all__ = ["build_sweep_report", "summary_table", "write_sweep_report"]


# The last analysis, so summary_table() right after build_report() (the CLI) does not redo it.
_LAST: dict[tuple[str, int, int, tuple[float, ...]], pd.DataFrame] = {}


def _run_stamp(run_dir: Path) -> tuple[float, ...]:
    """Modification times of the run's database files (changes when records are added)."""
    return tuple(
        p.stat().st_mtime_ns / 1e9
        for p in (run_dir / "run.sqlite", run_dir / "run.sqlite-wal")
        if p.exists()
    )


def _cache_key(run_dir: Path, n_boot: int, seed: int) -> tuple[str, int, int, tuple[float, ...]]:
    return (str(Path(run_dir).resolve()), n_boot, seed, _run_stamp(Path(run_dir)))


# ----------------------------------------------------------------------------------- public


def summary_table(run_dir: Path | str, *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The crossings and W of every model × task × arm × wording × signal, ready to print.

    Columns: model, task, arm, wording, signal, ``V*`` (with '≤ 1.95 m' / '≥ 250 m' for
    censored crossings), its 95 % interval, ``W`` (with '≥' / '≤' for bounds) and its interval.
    Reuses the analysis of a :func:`build_sweep_report` call on the same unchanged run in this
    process; otherwise runs the bootstrap alone (no tables, no figures).
    """
    key = _cache_key(Path(run_dir), n_boot, seed)
    crossings = _LAST.get(key)
    if crossings is None:
        data = load_run_data(Path(run_dir))
        boot = scene_bootstrap(data, n_boot=n_boot, seed=seed)
        crossings = labelled_crossings(boot.crossings, data.levels)
        _LAST.clear()
        _LAST[key] = crossings
    return _display_crossings(crossings)


def build_sweep_report(
    run_dir: Path | str,
    out_dir: Path | str | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    thumbnails: bool = True,
) -> ReportPaths:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` for the run in ``run_dir``.

    ``out_dir`` defaults to the run directory. ``n_boot`` bootstrap replicates resample scenes
    with replacement from ``numpy.random.default_rng(seed)``: the same run, B and seed give the
    same numbers. ``thumbnails`` renders the qualitative examples' images (bundled scenes only;
    they need the photo, its depth and the physics, a few seconds).
    """
    run_dir = Path(run_dir)
    key = _cache_key(run_dir, n_boot, seed)
    analysis = analyse_sweep(run_dir, n_boot=n_boot, seed=seed)
    _LAST.clear()
    _LAST[key] = labelled_crossings(analysis.crossings, analysis.data.levels)
    out = Path(out_dir) if out_dir is not None else run_dir
    return write_sweep_report(analysis, out, thumbnails=thumbnails)


def write_sweep_report(
    analysis: SweepAnalysis, out_dir: Path | str, *, thumbnails: bool = True
) -> ReportPaths:
    """Render ``analysis`` (:func:`~clearsight.sweep.analysis.analyse_sweep`) as
    ``report.html``, ``summary.md`` and ``summary.csv`` in ``out_dir``: summary.csv is the
    crossings with their labels and the bootstrap's B, seed and interval level."""
    boot = analysis.bootstrap
    crossings = labelled_crossings(analysis.crossings, analysis.data.levels)
    return write_report(
        Path(out_dir),
        html=render_report(analysis, thumbnails=thumbnails),
        summary_md=summary_markdown(analysis),
        summary_csv=crossings.assign(n_boot=boot.n_boot, seed=boot.seed, ci_level=boot.level),
    )


# ------------------------------------------------------------------------------ summaries


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
                interval_m(lo, hi)
                for lo, hi in zip(crossings["v_low_m"], crossings["v_high_m"], strict=True)
            ],
            "W": crossings["w_display"],
            "W 95% CI": [
                interval(lo, hi)
                for lo, hi in zip(crossings["w_low"], crossings["w_high"], strict=True)
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
            "internal conf": controls["internal_conf"].map(fmt_num),
            "verbal conf": controls["verbal_conf"].map(fmt_num),
            "abstain": controls["abstain_rate"].map(fmt_num),
            "chance": controls["chance"].map(fmt_num),
        }
    )


def summary_markdown(analysis: SweepAnalysis) -> str:
    """summary.md: the headline (``## Headline``: :mod:`clearsight.report.headline`), the
    crossings/W table and the controls table of each task, and the ImageNet-C severities on
    the metre axis."""
    data, boot = analysis.data, analysis.bootstrap
    frame, sentences = sweep_headline(headline_table(analysis), data.levels)
    lines = [
        f"# clearsight sweep summary — {md_text(data.name)}",
        "",
        *headline_markdown(frame, sentences, sweep_caption(boot.w_pairing)),
        "## Run",
        "",
        f"Models: {md_text(', '.join(data.models) or '(none)')}. Scenes: {boot.n_scenes}. "
        f"Bootstrap: {boot.n_boot} resamples of the {boot.n_clusters} source photos (a photo's "
        f"scenes together), seed {boot.seed}, "
        f"{round(100 * boot.level)} % percentile intervals.",
        "",
        f"Depth: {depth_line(analysis.depth)}.",
        "",
        DEPTH_NOTE,
        "",
    ]
    display = _display_crossings(labelled_crossings(analysis.crossings, data.levels))
    for task in data.tasks:
        name = md_text(TASK_NAMES.get(task, task))
        lines += [f"## Crossings and blind-spot width W — {name}", ""]
        lines.append(md_table(display[display["task"] == task].drop(columns="task")))
        controls = analysis.tasks[task].controls
        lines += [f"## Controls — {name}", ""]
        lines.append(
            md_table(_controls_display(controls))
            if not controls.empty
            else "_No control conditions in this run._\n"
        )
    lines += _imagenet_markdown(analysis)
    lines += reproducibility_markdown(data.run_dir)  # none without re-asks
    lines += cost_markdown(analysis.cost)
    return "\n".join(lines)


def _ranges(low: pd.Series, high: pd.Series, digits: int) -> list[str]:
    """Each row's 'low–high' (:func:`fmt_range`)."""
    return [fmt_range(a, b, digits) for a, b in zip(low, high, strict=True)]


def _imagenet_markdown(analysis: SweepAnalysis) -> list[str]:
    """V_eq and the retained gain per severity (median, IQR, P10/P90 and the spread), the
    monotone shares and the accuracy dynamic ranges — what the report's ImageNet-C section
    states."""
    if analysis.data.veq.empty:
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
        md_table(rows),
        f"V_eq decreases strictly over the severities for {fmt_num(100 * share.strict, 0)} % "
        f"of {share.n} scenes (non-increasing: {fmt_num(100 * share.non_strict, 0)} %). "
        f"Accuracy dynamic range, pooled across models, tasks and wordings: "
        f"{fmt_num(ranges.nominal_pp, 1)} pp over the severities, "
        f"{fmt_num(ranges.physical_pp, 1)} pp over the physical fog levels.",
        "",
    ]
