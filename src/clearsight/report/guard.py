"""The sweep report's guard section: the visibility guard's estimate against the true
visibility of a sweep, per guarded model and arm (the numbers:
:mod:`clearsight.sweep.numbers.guarded`).
"""

from __future__ import annotations

import pandas as pd

from clearsight.report.html import esc, frame_table

__all__ = ["guard_section_html"]


def guard_section_html(tab: pd.DataFrame) -> str:
    """The report's guard section: the estimate-error table
    (:func:`~clearsight.sweep.numbers.guarded.guard_estimate_table`) with what its columns mean;
    empty for a run without guarded models (so the report can always call it)."""
    if tab.empty:
        return ""
    note = (
        "The guard's visibility estimate V̂ (dark channel prior with the scene's depth, "
        "docs/guard.md) against the true V of each shown fog/water image: its error "
        "log10(V̂ / V) in decades, median and quartiles over the images with a finite V̂ "
        "(n_finite of n_images), and the share of images it abstained on."
    )
    return (
        "<h2 id='guard'>The visibility guard's estimate</h2>\n"
        f"<p class='note'>{esc(note)}</p>\n{frame_table(tab)}"
    )
