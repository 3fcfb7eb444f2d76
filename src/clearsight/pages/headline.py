"""The headline every report leads with, whatever its protocol: a small table of the run's main
figures and one generated sentence per model that reads it, first on the page and first in
summary.md (under ``## Headline``). Each protocol makes its own frame and sentences from its
analysis; :func:`headline_html` and :func:`headline_markdown` lay them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from clearsight.pages.html import Figure, esc, frame_table
from clearsight.pages.output import md_table, md_text

__all__ = ["HEADING", "Headline", "headline_html", "headline_markdown"]


#: The heading of the headline, on the page and in summary.md.
HEADING = "Headline"


def headline_html(
    frame: pd.DataFrame,
    sentences: Sequence[str],
    caption: str = "",
    lead: str = "",
    figure: str = "",
) -> str:
    """The headline section of a report page: the ``lead`` (what its numbers mean, before
    them), its table, its sentences with a small ``figure`` beside them (markup: a
    :class:`~clearsight.pages.html.Figure`'s) and the ``caption`` (what each column reads)
    under them, so the table, the sentences and the figure fit a first screen."""
    items = "".join(f"<li>{esc(s)}</li>" for s in sentences)
    parts = [f"<section id='headline'><h2>{HEADING}</h2>"]
    if lead:
        parts.append(f"<p class='lead'>{esc(lead)}</p>")
    parts.append(frame_table(frame))
    if items or figure:
        parts.append(f"<div class='beside'>{f'<ul>{items}</ul>' if items else ''}{figure}</div>")
    if caption:
        parts.append(f"<p class='note'>{esc(caption)}</p>")
    return "".join(parts) + "</section>"


def headline_markdown(
    frame: pd.DataFrame, sentences: Sequence[str], caption: str = "", lead: str = ""
) -> list[str]:
    """The headline section of a summary.md: ``## Headline``, the ``lead``, the table, the
    sentences (one bullet each) and the caption."""
    lines = [f"## {HEADING}", ""]
    if lead:
        lines += [md_text(lead), ""]
    lines += [md_table(frame)]
    lines += [f"- {md_text(s)}" for s in sentences]
    if caption:
        lines += ["", f"_{md_text(caption)}_"]
    return [*lines, ""]


@dataclass(frozen=True)
class Headline:
    """A report's headline as a block of its page and of its summary: the ``frame``, the
    ``sentences`` that read it, a ``caption``, the ``lead`` sentence before them and a small
    ``figure`` beside the sentences (the page's only)."""

    frame: pd.DataFrame
    sentences: Sequence[str]
    caption: str = ""
    lead: str = ""
    figure: Figure | None = None

    def html(self) -> str:
        """The page's headline section (:func:`headline_html`)."""
        figure = self.figure.html() if self.figure is not None else ""
        return headline_html(self.frame, self.sentences, self.caption, self.lead, figure)

    def markdown(self) -> list[str]:
        """The summary's headline section (:func:`headline_markdown`)."""
        return headline_markdown(self.frame, self.sentences, self.caption, self.lead)
