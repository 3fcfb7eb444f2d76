"""Reports of every protocol's runs: one self-contained HTML page, Markdown and CSV summaries.

Rendering only: each protocol's numbers come from its own package. The sweep's:
``build_report(run_dir)`` writes ``report.html``, ``summary.md`` and ``summary.csv`` (into the
run directory unless told otherwise); ``summary_table(run_dir)`` returns the crossings and W as a
DataFrame to print. Its renderer is :mod:`clearsight.report.sweep` (the page's sections in
:mod:`clearsight.report.sections`, the qualitative examples in :mod:`clearsight.report.examples`,
the guard's section in :mod:`clearsight.report.guard`), drawing and formatting
:class:`clearsight.sweep.analysis.SweepAnalysis` with :mod:`clearsight.report.plots`,
:mod:`clearsight.report.labels` and :mod:`clearsight.report.html`.

The probe's and grounding's reports (:mod:`clearsight.report.probe`,
:mod:`clearsight.report.grounding`) render their protocol's ``results`` module the same way and
write the same three files (:mod:`clearsight.report.output`).
"""

from __future__ import annotations

from clearsight.report.output import ReportPaths
from clearsight.report.sweep import build_sweep_report as build_report
from clearsight.report.sweep import summary_table

__all__ = ["ReportPaths", "build_report", "summary_table"]
