"""Reports of visibility-sweep runs: one self-contained HTML page plus Markdown and CSV summaries.

``build_report(run_dir)`` writes ``report.html``, ``summary.md`` and ``summary.csv`` (into the
run directory unless told otherwise); ``summary_table(run_dir)`` returns the crossings and W as a
DataFrame to print. The analysis behind them is in :mod:`clearsight.report.tables` (pure pandas
and :mod:`clearsight.metrics`), the figures in :mod:`clearsight.report.plots`, the page's
building blocks in :mod:`clearsight.report.html` and its sections in
:mod:`clearsight.report.sections`.
"""

from __future__ import annotations

from clearsight.report.build import ReportPaths, build_report, summary_table

__all__ = ["ReportPaths", "build_report", "summary_table"]
