"""HTML building blocks and the page skeleton of the report.

The page is one self-contained file: inline CSS, figures as ``data:image/png;base64`` URIs, no
script and no external resource, so it can be mailed, archived or opened offline. Everything
that comes from a run (model names, prompts, model replies, error messages, manifest values)
passes through :func:`esc` (``html.escape`` with quotes) before it reaches the page; the only
unescaped strings are the fixed markup written in this package.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd

from clearsight.pages.output import md_table

__all__ = [
    "Block",
    "Col",
    "Details",
    "Figure",
    "Frame",
    "Page",
    "Part",
    "Table",
    "cell_text",
    "details",
    "esc",
    "fmt_ci",
    "fmt_num",
    "frame_table",
    "img",
    "page",
    "pre",
    "render",
    "table",
]

CSS = """
body { font: 14px/1.45 -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; color: #1a1a1a;
       margin: 0 auto; max-width: 1280px; padding: 1.5em 2em 4em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.3em; border-bottom: 2px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
h3 { font-size: 1.08em; margin: 1.4em 0 0.4em; }
p.note, .note { color: #555; font-size: 0.92em; }
#headline h2 { margin-top: 0.8em; }
#headline table { font-size: 12px; }
#headline td, #headline th { padding: 1px 5px; }
#headline td:not(.t) { white-space: nowrap; }
p.lead { font-size: 1.05em; margin: 0.2em 0 0.6em; }
.beside { display: flex; flex-wrap: wrap; gap: 0.5em 2em; align-items: flex-start; }
.beside ul { flex: 1 1 420px; margin: 0.2em 0; padding-left: 1.4em; }
.beside figure { flex: 0 0 auto; margin: 0; }
p.warn { background: #fff4e5; border-left: 4px solid #e69f00; padding: 0.4em 0.8em; }
table { border-collapse: collapse; margin: 0.4em 0 1em; font-size: 12.5px; }
th, td { border: 1px solid #d6d6d6; padding: 2px 7px; text-align: right; vertical-align: top; }
th { background: #f3f4f6; font-weight: 600; }
td.t, th.t { text-align: left; }
tr:nth-child(even) td { background: #fafafa; }
table.kv td { text-align: left; }
table.kv td:first-child { font-weight: 600; background: #f6f6f6; white-space: nowrap; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; font-size: 11.5px;
      font-family: ui-monospace, Menlo, Consolas, monospace; }
img.fig { max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
figure { margin: 0.6em 0 1.2em; }
figcaption { color: #444; font-size: 0.9em; max-width: 1100px; }
details > summary { cursor: pointer; font-weight: 600; margin: 0.4em 0; }
nav { background: #f6f6f6; padding: 0.5em 1em; border-radius: 4px; font-size: 0.93em; }
nav a { margin-right: 1em; }
.thumbs { display: flex; gap: 12px; flex-wrap: wrap; }
.thumbs figure { margin: 0; }
.thumbs figcaption { text-align: center; }
"""


def esc(value: Any) -> str:
    """``value`` as text safe inside HTML content and attribute values."""
    return html.escape("" if value is None else str(value), quote=True)


def fmt_num(value: Any, digits: int = 2) -> str:
    """A number with ``digits`` decimals; '–' for missing values."""
    if value is None:
        return "–"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(v):
        return "–"
    return f"{v:.{digits}f}"


def fmt_range(low: Any, high: Any, digits: int = 2) -> str:
    """'2.4–14.5': a range such as an IQR ('–' for each missing end)."""
    return f"{fmt_num(low, digits)}–{fmt_num(high, digits)}"


def fmt_ci(estimate: Any, low: Any, high: Any, digits: int = 2) -> str:
    """'0.93 [0.88, 0.97]' (the interval omitted when it is missing)."""
    est = fmt_num(estimate, digits)
    if fmt_num(low) == "–" or fmt_num(high) == "–":
        return est
    return f"{est} [{fmt_num(low, digits)}, {fmt_num(high, digits)}]"


@dataclass(frozen=True)
class Col:
    """A table column: header, how to get a cell's text from a row, left-aligned or not."""

    header: str
    cell: Callable[[Any], str]
    text: bool = False
    group: str = ""


def table(rows: pd.DataFrame, cols: Sequence[Col], caption: str = "") -> str:
    """An HTML table of ``rows``: every header and cell escaped; optional group header row."""
    parts = ["<table>"]
    if caption:
        parts.append(f"<caption class='note'>{esc(caption)}</caption>")
    if any(c.group for c in cols):
        parts.append("<tr>")
        i = 0
        while i < len(cols):
            j = i
            while j + 1 < len(cols) and cols[j + 1].group == cols[i].group:
                j += 1
            parts.append(f"<th colspan='{j - i + 1}'>{esc(cols[i].group)}</th>")
            i = j + 1
        parts.append("</tr>")
    parts.append("<tr>" + "".join(_th(c) for c in cols) + "</tr>")
    for row in rows.itertuples(index=False):
        cells = "".join(f"<td{_cls(c)}>{esc(c.cell(row))}</td>" for c in cols)
        parts.append(f"<tr>{cells}</tr>")
    parts.append("</table>")
    return "\n".join(parts)


def cell_text(value: Any) -> str:
    """A cell of a plain frame as text: floats with two decimals ('–' for NaN), None empty."""
    if isinstance(value, float):
        return "–" if math.isnan(value) else fmt_num(value, 2)
    return "" if value is None else str(value)


def frame_table(frame: pd.DataFrame, caption: str = "") -> str:
    """Every column of ``frame`` as a :func:`table` of :func:`cell_text` cells, text columns
    left-aligned; a note instead when the frame is empty (the run lacks that data)."""
    if frame.empty:
        return "<p class='note'>(no data in this run)</p>"

    def getter(i: int) -> Callable[[Any], str]:
        return lambda row: cell_text(row[i])

    cols = [
        Col(str(name), getter(i), text=not pd.api.types.is_numeric_dtype(frame[name]))
        for i, name in enumerate(frame.columns)
    ]
    return table(frame, cols, caption)


def _cls(col: Col) -> str:
    """The class attribute of a left-aligned (text) column's cells."""
    return " class='t'" if col.text else ""


def _th(col: Col) -> str:
    """One escaped header cell."""
    return f"<th{_cls(col)}>{esc(col.header)}</th>"


def img(png: bytes | None, alt: str, caption: str = "", css_class: str = "fig") -> str:
    """A figure with the PNG inlined as a base64 data URI (empty string if ``png`` is None)."""
    if png is None:
        return ""
    data = base64.b64encode(png).decode("ascii")
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return (
        f"<figure><img class='{css_class}' alt='{esc(alt)}' "
        f"src='data:image/png;base64,{data}'>{cap}</figure>"
    )


def pre(text: Any) -> str:
    """Preformatted, escaped text (model replies, prompts)."""
    return f"<pre>{esc(text)}</pre>"


def details(summary: str, body: str, open_: bool = False) -> str:
    """A collapsible block (native HTML, no script); ``summary`` is escaped, ``body`` is not."""
    return f"<details{' open' if open_ else ''}><summary>{esc(summary)}</summary>{body}</details>"


def page(title: str, body: str) -> str:
    """The whole document: doctype, inline CSS, escaped title, ``body`` markup."""
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}\n"
        "</body>\n</html>\n"
    )


# ---------------------------------------------------------------------- a page as a value


class Block(Protocol):
    """A part of a page that renders itself as HTML (a table, a figure, a headline)."""

    def html(self) -> str:
        """Its markup."""
        ...


#: A part of a page: markup written (and escaped) by the page's code, or a block.
Part = str | Block


def render(parts: Iterable[Part], sep: str = "\n") -> str:
    """The markup of ``parts`` in order, joined by ``sep``."""
    return sep.join(p if isinstance(p, str) else p.html() for p in parts)


@dataclass(frozen=True)
class Table:
    """A :func:`table` of ``rows`` in the columns ``cols``."""

    rows: pd.DataFrame
    cols: Sequence[Col]
    caption: str = ""

    def html(self) -> str:
        """The table's markup."""
        return table(self.rows, self.cols, self.caption)

    def markdown(self) -> list[str]:
        """The same cells as summary.md lines (:func:`md_table`; the column groups left out)."""
        rows = list(self.rows.itertuples(index=False))
        cells = [[c.cell(r) for c in self.cols] for r in rows]
        return [md_table(pd.DataFrame(cells, columns=[c.header for c in self.cols]))]


@dataclass(frozen=True)
class Frame:
    """Every column of a frame as a table (:func:`frame_table`; :func:`md_table` in a
    summary)."""

    frame: pd.DataFrame
    caption: str = ""

    def html(self) -> str:
        """The table's markup."""
        return frame_table(self.frame, self.caption)

    def markdown(self) -> list[str]:
        """The table as summary.md lines."""
        return [md_table(self.frame)]


@dataclass(frozen=True)
class Figure:
    """A figure (:func:`img`; nothing where ``png`` is None)."""

    png: bytes | None
    alt: str
    caption: str = ""
    css_class: str = "fig"

    def html(self) -> str:
        """The figure's markup."""
        return img(self.png, self.alt, self.caption, self.css_class)


@dataclass(frozen=True)
class Details:
    """A collapsible block (:func:`details`) holding ``body``."""

    summary: str
    body: Sequence[Part]
    open_: bool = False

    def html(self) -> str:
        """The block's markup."""
        return details(self.summary, render(self.body), self.open_)


@dataclass(frozen=True)
class Page:
    """A whole page: its title and its parts, rendered once when the report writes it."""

    title: str
    parts: Sequence[Part]

    def text(self) -> str:
        """The page's document (:func:`page`)."""
        return page(self.title, render(self.parts))
