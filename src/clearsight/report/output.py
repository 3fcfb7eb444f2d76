"""How every report writes its files: one layout, atomically, with Markdown tables in one format.

Every protocol's report writes the same three files into the run directory (or the directory
it is given): ``report.html`` (the self-contained page), ``summary.md`` (its tables in Markdown)
and ``summary.csv`` (its main table, for a spreadsheet or a script), and returns their
:class:`ReportPaths`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["ReportPaths", "md_table", "write_atomic", "write_report"]


@dataclass(frozen=True)
class ReportPaths:
    """Where a report wrote its files."""

    out_dir: Path
    html: Path
    summary_md: Path
    summary_csv: Path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a reader never sees half a file;
    the value of any key variable in it is redacted (:func:`clearsight.credentials.redact`)."""
    from clearsight.credentials import redact

    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(redact(text), encoding="utf-8")
    os.replace(tmp, path)


def write_report(
    out_dir: Path, *, html: str, summary_md: str, summary_csv: pd.DataFrame
) -> ReportPaths:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` (the frame, without its index)
    into ``out_dir``, creating it if needed; each file is replaced atomically."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(
        out_dir=out_dir,
        html=out_dir / "report.html",
        summary_md=out_dir / "summary.md",
        summary_csv=out_dir / "summary.csv",
    )
    write_atomic(paths.summary_csv, summary_csv.to_csv(index=False))
    write_atomic(paths.summary_md, summary_md)
    write_atomic(paths.html, html)
    return paths


def md_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table ('|' in cells escaped)."""
    if frame.empty:
        return "_(none)_\n"

    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(cell(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"
