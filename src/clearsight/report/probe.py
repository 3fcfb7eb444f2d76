"""The probe protocol's report: analogues of the paper's Tables 1, 3, 7 and 9, Figures 2-3.

Everything comes from the run directory's records (:func:`load_probe_results`): transcripts of
models and people, and the stored belief-probe and query-type results. Written as a
self-contained ``probe_report.html`` (every model output escaped) and ``probe_summary.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from clearsight.probe.analysis import (
    ablation_table,
    belief_table,
    calls_table,
    consistency_bins,
    query_type_table,
    summary_table,
)
from clearsight.probe.protocol import ProbeResults, load_probe_results
from clearsight.report.html import Col, details, esc, fmt_num, page, pre, table
from clearsight.report.output import md_table, write_atomic

__all__ = ["ProbeReportPaths", "build_probe_report", "probe_tables"]


@dataclass(frozen=True)
class ProbeReportPaths:
    """Where :func:`build_probe_report` wrote its files."""

    html: Path
    summary_md: Path


def probe_tables(results: ProbeResults) -> dict[str, pd.DataFrame]:
    """The report's tables by title, in order (empty frames where the run lacks the data)."""
    frame = results.transcripts
    if frame.empty:
        return {}
    table1 = summary_table(frame, by=("domain",))
    consistency = None
    source = "the run's direct answers, rescaled to 11"
    if results.build is not None and not results.build.empty:
        consistency = results.build.assign(
            c11=(11 * results.build["c"] / results.build["n"]).round().astype(int)
        )
        source = "stage-1 build samples"
    return {
        "Table 1: accuracy (mean ± std over runs, %) and cross-run ECE by domain": table1,
        "Accuracy and ECE by dataset": summary_table(frame, by=("dataset",)),
        f"Fig. 2: accuracy (%) by the sensor's direct consistency c of 11 ({source})": (
            consistency_bins(frame, consistency)
        ),
        "Fig. 3: consistency-signal ablation (true, none, random u)": ablation_table(frame),
        "Table 3: query types (%) by round": query_type_table(results.queries),
        "Table 7: belief convergence (steps to max b >= 0.7, reach rate %)": belief_table(
            results.beliefs
        ),
        "Table 9: VLM calls per question": calls_table(frame),
    }


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "–" if math.isnan(value) else fmt_num(value, 2)
    return "" if value is None else str(value)


def _html_table(frame: pd.DataFrame, caption: str) -> str:
    if frame.empty:
        return "<p class='note'>(no data in this run)</p>"

    def getter(i: int) -> Callable[[Any], str]:
        return lambda row: _cell(row[i])

    cols = [
        Col(str(name), getter(i), text=frame[name].dtype == object)
        for i, name in enumerate(frame.columns)
    ]
    return table(frame, cols, caption)


def _examples(results: ProbeResults, run_dir: Path, limit: int = 6) -> str:
    from clearsight.probe.transcript import load_transcripts

    parts = []
    shown = 0
    for t in load_transcripts(run_dir):
        if t.strategy == "direct" or shown >= limit:
            continue
        shown += 1
        lines = [
            f"Q: {t.question}",
            *(f"({k}) {o}" for k, o in zip("ABCDEFGHIJ", t.options, strict=False)),
        ]
        for turn in t.turns:
            lines.append(f"[{turn.index}] reasoner: {turn.raw}")
            if turn.reply is not None:
                u = "–" if turn.shown_u is None else turn.shown_u
                lines.append(
                    f"    sensor: {turn.reply.reply or turn.reply.error} ({u}/{turn.reply.k})"
                )
        lines.append(f"=> {t.committed} (gold {t.gold}), stop: {t.stop}")
        summary = f"{t.instance_id} · {t.reasoner} · {t.strategy} · run {t.run}"
        parts.append(details(summary, pre("\n".join(lines))))
    return "".join(parts)


def build_probe_report(run_dir: Path | str) -> ProbeReportPaths:
    """Write ``probe_report.html`` and ``probe_summary.md`` into the run directory."""
    run = Path(run_dir)
    results = load_probe_results(run)
    tables = probe_tables(results)
    n = len(results.transcripts)
    body = [
        f"<h1>Probe report: {esc(run.name)}</h1>",
        f"<p class='note'>{n} conversations. Accuracy is per run, averaged over runs; "
        "ECE is cross-run (confidence = share of the R runs agreeing with the most common "
        "committed option); rounds include the committing turn; VLM calls = K per query.</p>",
    ]
    md = [f"# Probe report: {run.name}\n", f"{n} conversations.\n"]
    for title, frame in tables.items():
        body.append(f"<h2>{esc(title)}</h2>")
        body.append(_html_table(frame, ""))
        md.append(f"\n## {title}\n\n")
        md.append(md_table(frame.map(_cell) if not frame.empty else frame))
    body.append("<h2>Example conversations</h2>")
    body.append(_examples(results, run))
    paths = ProbeReportPaths(run / "probe_report.html", run / "probe_summary.md")
    write_atomic(paths.html, page(f"clearsight probe: {run.name}", "\n".join(body)))
    write_atomic(paths.summary_md, "".join(md))
    return paths
