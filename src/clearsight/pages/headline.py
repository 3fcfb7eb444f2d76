"""The headline every report leads with, whatever its protocol: a small table of the run's main
figures and one generated sentence per model that reads it, first on the page and first in
summary.md (under ``## Headline``). Each protocol makes its own frame and sentences from its
analysis; :func:`headline_html` and :func:`headline_markdown` lay them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from clearsight.pages.html import esc, frame_table
from clearsight.pages.output import md_table, md_text

__all__ = ["HEADING", "Headline", "headline_html", "headline_markdown"]


#: The heading of the headline, on the page and in summary.md.
HEADING = "Headline"


def headline_html(frame: pd.DataFrame, sentences: Sequence[str], caption: str = "") -> str:
    """The headline section of a report page: its table, its sentences and a caption."""
    items = "".join(f"<li>{esc(s)}</li>" for s in sentences)
    return (
        f"<section id='headline'><h2>{HEADING}</h2>{frame_table(frame, caption)}"
        f"{f'<ul>{items}</ul>' if items else ''}</section>"
    )


def headline_markdown(
    frame: pd.DataFrame, sentences: Sequence[str], caption: str = ""
) -> list[str]:
    """The headline section of a summary.md: ``## Headline``, the table, the sentences (one
    bullet each) and the caption."""
    lines = [f"## {HEADING}", "", md_table(frame)]
    lines += [f"- {md_text(s)}" for s in sentences]
    if caption:
        lines += ["", f"_{md_text(caption)}_"]
    return [*lines, ""]


@dataclass(frozen=True)
class Headline:
    """A report's headline as a block of its page and of its summary: the ``frame``, the
    ``sentences`` that read it and a ``caption``."""

    frame: pd.DataFrame
    sentences: Sequence[str]
    caption: str = ""

    def html(self) -> str:
        """The page's headline section (:func:`headline_html`)."""
        return headline_html(self.frame, self.sentences, self.caption)

    def markdown(self) -> list[str]:
        """The summary's headline section (:func:`headline_markdown`)."""
        return headline_markdown(self.frame, self.sentences, self.caption)
