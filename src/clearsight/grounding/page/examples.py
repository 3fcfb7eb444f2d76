"""The grounding report's example trajectories (Figs. 1 and 4), in HTML and in Markdown: each
rationale sentence in order, every hesitation event marked with its marker and the
confidences elicited before and after it (:mod:`clearsight.grounding.examples`)."""

from __future__ import annotations

from clearsight.grounding.analysis import GroundingAnalysis
from clearsight.grounding.examples import EXAMPLE_RULE, Example, MarkedSentence
from clearsight.grounding.page.tables import num
from clearsight.pages.html import esc
from clearsight.pages.output import md_text

__all__ = ["event_label", "examples_html", "examples_markdown"]


def event_label(s: MarkedSentence) -> str:
    """An event's label: 'event 1 "wait": c_pre 0.810 → c_post 0.790' (1-based)."""
    return f'event {(s.event or 0) + 1} "{s.marker}": c_pre {num(s.pre)} → c_post {num(s.post)}'


def _heading(e: Example) -> str:
    """An example's line: problem, benchmark, answer, right or wrong, visible confidence."""
    verdict = "right" if e.correct else "wrong"
    return (
        f"{e.problem} ({e.benchmark}): answer {e.answer!r} ({verdict}); confidence with the "
        f"trajectory visible {num(e.confidence)}"
    )


def _rule(analysis: GroundingAnalysis) -> str:
    """The stated rule that chose the examples."""
    return EXAMPLE_RULE.format(n=len(analysis.examples), seed=analysis.example_seed)


def examples_html(analysis: GroundingAnalysis) -> str:
    """The examples as paragraphs, each event sentence in ``<mark>`` with its label."""
    if not analysis.examples:
        return "<p class='note'>(no own trajectory with a scored hesitation event)</p>"
    parts = [f"<p class='note'>{esc(_rule(analysis))}.</p>"]
    for e in analysis.examples:
        body = []
        for s in e.sentences:
            if s.marker is None:
                body.append(esc(s.text))
                continue
            label = esc(event_label(s))
            body.append(f"<mark title='{label}'>{esc(s.text)}</mark> <b>[{label}]</b>")
        parts.append(f"<h3>{esc(_heading(e))}</h3>\n<p>{' '.join(body)}</p>")
    return "\n".join(parts)


def examples_markdown(analysis: GroundingAnalysis) -> list[str]:
    """The examples as Markdown lines: a heading each, the rationale with every event
    sentence in bold followed by its label."""
    if not analysis.examples:
        return ["(no own trajectory with a scored hesitation event)"]
    lines = [md_text(_rule(analysis)) + ".", ""]
    for e in analysis.examples:
        body = [
            md_text(s.text) if s.marker is None else f"**{md_text(s.text)}** [{event_label(s)}]"
            for s in e.sentences
        ]
        lines += [f"### {md_text(_heading(e))}", "", " ".join(body), ""]
    return lines
