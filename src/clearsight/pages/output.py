"""How every report writes its files: one layout, atomically, with Markdown tables in one format.

Every protocol's report writes the same three files into the run directory (or the directory
it is given): ``report.html`` (the self-contained page), ``summary.md`` (its tables in Markdown)
and ``summary.csv`` (its main table, for a spreadsheet or a script), and returns their
:class:`ReportPaths`. Text that came from a model or an instance file is escaped for each
format: HTML in the page (:func:`clearsight.pages.html.esc`), Markdown in the summary
(:func:`md_text`, :func:`md_table`), formula cells in the CSV (:func:`csv_text`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from clearsight.paths import write_target

__all__ = [
    "NO_APPENDIX",
    "Appendix",
    "Document",
    "MarkdownBlock",
    "ReportPaths",
    "Summary",
    "csv_text",
    "markdown_section",
    "md_table",
    "md_text",
    "write_atomic",
    "write_report",
]


@dataclass(frozen=True)
class ReportPaths:
    """Where a report wrote its files."""

    out_dir: Path
    html: Path
    summary_md: Path
    summary_csv: Path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a reader never sees half a file;
    the value of any key variable in it is redacted (:func:`clearsight.credentials.redact`).
    The temporary file is never a link out of the folder (:func:`~clearsight.paths.write_target`);
    ``path`` itself is replaced, never written through."""
    from clearsight.credentials import redact

    tmp = write_target(path.with_name(f".{path.name}.tmp"))
    tmp.write_text(redact(text), encoding="utf-8")
    os.replace(tmp, path)


@dataclass(frozen=True)
class Appendix:
    """What a report shows besides its protocol's own sections, made outside the protocol by
    :func:`clearsight.report.build_report`: the run's re-asks by ``clearsight verify`` (its
    Reproducibility section), as the page's HTML and summary.md's lines; empty where the run has
    none. A protocol's page places it and never reads it from the run itself."""

    html: str = ""
    markdown: tuple[str, ...] = ()


#: A report without an appendix.
NO_APPENDIX = Appendix()


class Document(Protocol):
    """A file of a report composed as a value (a page of blocks, a summary of lines and
    tables) and rendered once, when the report writes it."""

    def text(self) -> str:
        """The file's whole text."""
        ...


class MarkdownBlock(Protocol):
    """A part of a summary that renders itself as Markdown lines (a table, a headline)."""

    def markdown(self) -> list[str]:
        """Its summary.md lines."""
        ...


@dataclass(frozen=True)
class Summary:
    """A summary.md composed of ``parts``: lines of Markdown (each one line of the file,
    escaped by whoever wrote it) and blocks that render their own lines."""

    parts: Sequence[str | MarkdownBlock]

    def text(self) -> str:
        """The summary's Markdown."""
        lines: list[str] = []
        for part in self.parts:
            lines += [part] if isinstance(part, str) else part.markdown()
        return "\n".join(lines)


def write_report(
    out_dir: Path,
    *,
    html: str | Document,
    summary_md: str | Document,
    summary_csv: pd.DataFrame,
) -> ReportPaths:
    """Write ``report.html``, ``summary.md`` (each a text or a :class:`Document` rendered
    here) and ``summary.csv`` (the frame, without its index) into ``out_dir``, creating it if
    needed; each file is replaced atomically."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(
        out_dir=out_dir,
        html=out_dir / "report.html",
        summary_md=out_dir / "summary.md",
        summary_csv=out_dir / "summary.csv",
    )
    write_atomic(paths.summary_csv, csv_text(summary_csv))
    write_atomic(paths.summary_md, summary_md if isinstance(summary_md, str) else summary_md.text())
    write_atomic(paths.html, html if isinstance(html, str) else html.text())
    return paths


def md_text(value: Any) -> str:
    """``value`` as inert Markdown text on one line, for text that came from a model, an
    instance file or a user (names, answers, reasons): no raw HTML (``<``, ``>`` and ``&`` as
    entities, as report.html escapes them), no link or image (``](`` broken), no table cell
    break (``|``), no line break; backslashes kept as backslashes."""
    text = " ".join(str(value).split())
    return text.translate(_MD_ESCAPES).replace("](", "]\\(")


_MD_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "&": "&amp;", "<": "&lt;", ">": "&gt;"})


def md_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table, every header and cell through :func:`md_text`."""
    if frame.empty:
        return "_(none)_\n"
    head = "| " + " | ".join(md_text(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = [
        "| " + " | ".join(md_text(v) for v in row) + " |" for row in frame.itertuples(index=False)
    ]
    return "\n".join([head, rule, *body]) + "\n"


def markdown_section(markdown: str, heading: str) -> str:
    """The section of ``markdown`` under the level-2 heading ``## heading``, heading included,
    up to the next heading of level 1 or 2 (trailing blank lines dropped); empty if it has
    no such heading."""
    lines = markdown.splitlines()
    try:
        start = lines.index(f"## {heading}")
    except ValueError:
        return ""
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith(("# ", "## "))),
        len(lines),
    )
    return "\n".join(lines[start:end]).rstrip()


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV (no index) for a spreadsheet: a text cell that a spreadsheet would
    run as a formula gets a leading ``'``, so it opens as the text it is (:func:`_csv_cell`)."""
    text = [name for name in frame.columns if not pd.api.types.is_numeric_dtype(frame[name])]
    if text:
        frame = frame.copy()
        for name in text:
            frame[name] = frame[name].map(_csv_cell)
    return frame.to_csv(index=False)


def _csv_cell(value: Any) -> Any:
    """One cell of :func:`csv_text`: a text starting with ``=``, ``@``, a tab or a carriage
    return is a formula to a spreadsheet; one starting with ``+`` or ``-`` too, unless it is a
    signed number, as the reports write one (``+0.15 [+0.10, +0.20] (n=6)``), that calls no
    function and reaches nothing outside its sheet (no ``|``, ``!``, ``"``, no ``NAME(``)."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_STARTS):
        return value
    if _SIGNED_NUMBER.match(value) and not _FORMULA_PARTS.search(value):
        return value
    return "'" + value


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: A signed number at the start of a cell (``-0.5``, ``+0.15 [...]``, ``-.5``).
_SIGNED_NUMBER = re.compile(r"[+-]\.?\d")
#: What makes a formula reach beyond arithmetic: another program (``|``), another sheet
#: (``!``), a string or a function call.
_FORMULA_PARTS = re.compile(r"[|!\"]|[A-Za-z_][A-Za-z0-9_.]*\s*\(")
