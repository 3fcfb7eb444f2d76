"""The sweep page's section on the limits of seeing (issue 45 item 4): the reference observers
of a run (detection at 2 %, recognition at 5 %, people's recognition;
:data:`~clearsight.sweep.references.recognition.REFERENCE_OBSERVERS`) drawn as reference curves
beside every model's accuracy on each arm, with their V* and W, computed like a model's.
Rendering only: the curves and crossings are the analysis's.
"""

from __future__ import annotations

from clearsight.pages.html import Col, Figure, Part, Table, esc
from clearsight.pages.plots import png, pyplot
from clearsight.sweep.analysis import SweepAnalysis
from clearsight.sweep.page.labels import crossing_label, interval, interval_m, w_label
from clearsight.sweep.page.plots import accuracy_line, reference_lines, series, visibility_axis
from clearsight.sweep.references.recognition import REFERENCE_OBSERVERS, human_fit
from clearsight.sweep.signals import by_name

__all__ = ["references_figure", "references_section"]


def _meaning() -> str:
    """What each reference curve means, with the human data's caveats."""
    fit = human_fit()
    return (
        "<p>Reference curves: <b>observer</b> detects the target half the time at 2 % retained "
        "contrast (the contrast that defines meteorological visibility V); "
        "<b>observer:recognition</b> at 5 % (the CIE's threshold for recognising an object); "
        "<b>observer:human</b> sees it as people recognised 16 object classes in Geirhos et "
        "al. 2017's contrast experiment: a log-logistic fitted to their five points "
        f"(midpoint {esc(f'{100 * fit.c50:.1f}')} % contrast, lapse "
        f"{esc(f'{100 * fit.lapse:.1f}')} %), corrected for guessing among 16 and read at each "
        "target's retained contrast (under Koschmieder fog exp(−3.912 z / V) for a target at "
        "z metres). Each names the object when it sees it, guesses among the options when not, "
        "and states its probability of being right. Caveats of the human curve: grey-scale "
        "images, 200 ms presentations followed by a mask, 16 classes; people given colour, "
        "time or fewer options recognise more at the same contrast.</p>"
    )


def references_section(analysis: SweepAnalysis, task: str) -> list[Part]:
    """The section: what each reference means, the figure, their crossings and W."""
    head = "<h2 id='limits'>The limits of seeing: reference curves</h2>"
    present = [m for m in REFERENCE_OBSERVERS if m in analysis.run.models]
    if not present:
        return [
            head + "<p class='note'>No reference observer in this run: add "
            f"{esc(', '.join(REFERENCE_OBSERVERS))} to <code>models</code>.</p>"
        ]
    caption = (
        "Each model's accuracy (main letter wording; thin coloured lines) against visibility "
        "per arm, with the reference observers' accuracy as grey reference curves."
    )
    cr = analysis.crossings
    mine = cr[cr["model"].isin(present) & (cr["task"] == task)]
    return [
        head,
        _meaning(),
        Figure(references_figure(analysis, task, present), "The limits of seeing", caption),
        Table(mine, _crossing_cols(), "V* and W of the reference observers"),
    ]


def _crossing_cols() -> list[Col]:
    """Columns of the references' crossings table."""
    return [
        Col("reference", lambda r: r.model, text=True),
        Col("what it is", lambda r: REFERENCE_OBSERVERS[r.model], text=True),
        Col("arm", lambda r: r.arm, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("signal", lambda r: by_name(r.signal).label, text=True),
        Col("V*", lambda r: crossing_label(r.v_star_m, r.censored), text=True),
        Col("V* 95% CI", lambda r: interval_m(r.v_low_m, r.v_high_m), text=True),
        Col("W", lambda r: w_label(r.w, r.w_bound) or "–", text=True),
        Col("W 95% CI", lambda r: interval(r.w_low, r.w_high), text=True),
        Col("note", lambda r: r.note, text=True),
    ]


def references_figure(analysis: SweepAnalysis, task: str, present: list[str]) -> bytes | None:
    """One panel per arm: every other model's accuracy and the ``present`` references'."""
    wording = analysis.tasks[task].letter
    arms = list(analysis.run.levels)
    if wording is None or not arms:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(arms), figsize=(6.0 * len(arms), 4.0), squeeze=False)
    models = [m for m in analysis.run.models if m not in present]
    for ax, arm in zip(axes[0], arms, strict=True):
        visibility_axis(ax, analysis.run.levels[arm])
        for model in models:
            accuracy_line(
                ax, series(analysis.curves, model, task, wording, "accuracy", arm)[0], model
            )
        reference_lines(ax, analysis.curves, (task, wording, arm), present)
        ax.set_title(f"{arm} — accuracy ({wording})", fontsize=10)
        ax.set_ylabel("accuracy (share right, 0–1)", fontsize=9)
        ax.legend(fontsize=7, loc="lower left", frameon=False)
    fig.tight_layout()
    return png(fig)
