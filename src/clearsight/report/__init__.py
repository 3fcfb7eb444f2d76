"""Reports of every protocol's runs: one self-contained HTML page, Markdown and CSV summaries.

The sweep's: ``build_report(run_dir)`` writes ``report.html``, ``summary.md`` and
``summary.csv`` (into the run directory unless told otherwise); ``summary_table(run_dir)``
returns the crossings and W as a DataFrame to print. The analysis behind them is in
:mod:`clearsight.report.tables` (pure pandas and :mod:`clearsight.metrics`), the figures in
:mod:`clearsight.report.plots`, the page's building blocks in :mod:`clearsight.report.html` and
its sections in :mod:`clearsight.report.sections`. The run itself is read by
:mod:`clearsight.sweep.results`.

The probe's and grounding's reports (:mod:`clearsight.report.probe`,
:mod:`clearsight.report.grounding`) render their protocol's ``results`` module the same way and
write the same three files (:mod:`clearsight.report.output`).
"""

from __future__ import annotations

from clearsight.report.build import build_report, summary_table
from clearsight.report.output import ReportPaths

__all__ = ["ReportPaths", "build_report", "summary_table"]
