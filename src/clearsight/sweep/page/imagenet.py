"""The sweep page's ImageNet-C section: the corruption severities placed on the physical
visibility axis (Fig. 7) with their table. Rendering only: every number comes from the analysis.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from clearsight.pages.html import Col, Details, Figure, Part, Table, esc, fmt_ci, fmt_num, fmt_range
from clearsight.sweep.analysis import SweepAnalysis
from clearsight.sweep.page import figures
from clearsight.sweep.results import TASK_NAMES

__all__ = ["imagenet_section"]


def imagenet_section(analysis: SweepAnalysis, task: str) -> list[Part]:
    """Fig. 7 and the severity table of ``task``."""
    run, numbers = analysis.run, analysis.tasks[task]
    name = esc(TASK_NAMES.get(task, task))
    head = f"<h2 id='imagenet-c'>ImageNet-C fog on the physical axis — {name}</h2>"
    tab = numbers.imagenet_c
    share = analysis.monotone
    if tab.empty and not run.has_veq:
        return [head + "<p class='note'>No ImageNet-C records in this run.</p>"]
    parts: list[Part] = [head]
    if not run.has_veq:
        parts.append(
            "<p class='warn'>No gain-matched V_eq records: severities cannot be placed on the "
            "visibility axis.</p>"
        )
    fig = figures.imagenet_c_figure(analysis, numbers) if not tab.empty else None
    parts.append(
        Figure(
            fig,
            "ImageNet-C severities on the fog accuracy curve",
            "Each ImageNet-C fog severity (s1–s5) at its median gain-matched equivalent "
            "visibility V_eq over scenes, horizontal bar: V_eq interquartile range; vertical "
            "bar: 95 % bootstrap interval of its accuracy. Line and band: the physical fog "
            "accuracy curve.",
        )
    )
    if share.n:
        parts.append(
            f"<p>V_eq decreases strictly over the severities for "
            f"{esc(f'{100 * share.strict:.0f}')} % of {esc(share.n)} scenes "
            f"(non-increasing, ties allowed: {esc(f'{100 * share.non_strict:.0f}')} %).</p>"
        )
    ranges = analysis.ranges
    if not math.isnan(ranges.nominal_pp):
        parts.append(
            "<p>Accuracy dynamic range, pooled across models and tasks in each model's main "
            "wording: "
            f"{esc(f'{ranges.nominal_pp:.1f}')} percentage points over the ImageNet-C "
            f"severities against {esc(fmt_num(ranges.physical_pp, 1))} over the physical fog "
            f"levels (largest minus smallest accuracy).</p>"
        )
    if not tab.empty:
        parts.append(_imagenet_wide(run.models, tab, numbers.main))
        parts.append(Details("Every wording", [Table(tab, _imagenet_cols())]))
    return parts


def _imagenet_cols() -> list[Col]:
    """Columns of the long ImageNet-C table."""
    return [
        Col("model", lambda r: r.model, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("severity", lambda r: fmt_num(r.severity, 0)),
        Col("median V_eq (m)", lambda r: fmt_num(r.veq_median, 1)),
        Col("V_eq IQR (m)", lambda r: fmt_range(r.veq_q25, r.veq_q75, 1)),
        Col("V_eq P90/P10", lambda r: fmt_num(r.veq_p90_p10, 2)),
        Col("median gain", lambda r: fmt_num(r.gain_median, 3)),
        Col("gain IQR", lambda r: fmt_range(r.gain_q25, r.gain_q75, 3)),
        Col("gain P90/P10", lambda r: fmt_num(r.gain_p90_p10, 2)),
        Col("scenes", lambda r: fmt_num(r.n_scenes, 0)),
        Col("n", lambda r: fmt_num(r.n, 0)),
        Col("accuracy [95% CI]", lambda r: fmt_ci(r.accuracy, r.acc_low, r.acc_high)),
        Col("clean", lambda r: fmt_num(r.clean_accuracy)),
        Col("Δ vs clean (pp)", lambda r: fmt_num(r.delta_pp, 1)),
    ]


def _imagenet_wide(models: Sequence[str], tab: pd.DataFrame, wording: str | None) -> Table:
    """Rows: severities with their V_eq; column groups: each model's accuracy in the main
    ``wording``."""
    main = tab[tab["wording"] == wording]
    rows = main.drop_duplicates("severity").sort_values("severity")
    cols = [
        Col("severity", lambda r: fmt_num(r.severity, 0)),
        Col("median V_eq (m)", lambda r: fmt_num(r.veq_median, 1), group="equivalent visibility"),
        Col("IQR (m)", lambda r: fmt_range(r.veq_q25, r.veq_q75, 1), group="equivalent visibility"),
        Col("median gain", lambda r: fmt_num(r.gain_median, 3), group="equivalent visibility"),
        Col("scenes", lambda r: fmt_num(r.n_scenes, 0), group="equivalent visibility"),
    ]
    for i, model in enumerate(m for m in models if m in set(main["model"])):
        mine = main.loc[main["model"] == model, ["severity", *_PER_MODEL]]
        by_severity = mine.add_suffix(f"_{i}")
        rows = rows.merge(by_severity, "left", left_on="severity", right_on=f"severity_{i}")
        group = f"{model} ({wording})"
        cols += [
            Col("accuracy [95% CI]", _accuracy_cell(i), group=group),
            Col("Δ vs clean (pp)", _delta_cell(i), group=group),
        ]
    return Table(rows, cols)


#: The columns of a model's cells in the wide ImageNet-C table.
_PER_MODEL = ("accuracy", "acc_low", "acc_high", "delta_pp")


def _accuracy_cell(i: int) -> Callable[[Any], str]:
    """The accuracy with its interval of the ``i``-th model of a wide row."""
    return lambda r: fmt_ci(
        getattr(r, f"accuracy_{i}"), getattr(r, f"acc_low_{i}"), getattr(r, f"acc_high_{i}")
    )


def _delta_cell(i: int) -> Callable[[Any], str]:
    """The change against the clean accuracy (pp) of the ``i``-th model of a wide row."""
    return lambda r: fmt_num(getattr(r, f"delta_pp_{i}"), 1)
