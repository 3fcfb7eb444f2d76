"""Native trajectories segmented where they stand: a think block or tagged blocks, as written.

A native template's generation (:class:`~clearsight.grounding.trajectories.trajectory.Template`,
format ``think`` or ``blocks``) is never re-rendered: :func:`parse_written` finds the character
spans of its vision, reasoning and answer in the text itself and returns a
:class:`WrittenTrajectory`, which the elicitation scores as written (TGS-self hides its rationale
spans, hesitation cuts its sentences out of it).

* ``think`` (the paper's Qwen3-VL template, segmented afterwards, App. A.1.2): the sentences
  inside the think block are labelled by the rule-based segmenter
  (:func:`~clearsight.grounding.trajectories.parsing.label_sentences`): the leading restated
  observations are the vision span, the rest of the block the reasoning span (an answer
  sentence inside the block is reasoning: the final answer follows the block). The answer is
  what follows the answer tag after the block, up to the end of its line; without a tag, the
  last sentence after the block with an answer cue ("the answer is ..."), reduced to what
  follows "is"/":", else the first line after the block.
* ``blocks`` (VL-Calibration's tags, extracted directly): each tag's content up to its closing
  tag (or the next opening tag, or the end); a missing vision or reasoning block is an empty
  span.

A span is the segment's text stripped of surrounding white space. Anything the model wrote
after its answer (a confidence, a new question) is cut by :func:`finish_written`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clearsight.grounding.trajectories.parsing import (
    _ANSWER_CUE,
    cut_at_slot,
    find_tag,
    label_sentences,
    sentence_spans,
)
from clearsight.grounding.trajectories.trajectory import (
    SEGMENTS,
    Template,
    Trajectory,
    default_template,
)
from clearsight.validate import InputError

Span = tuple[int, int]


Spans = tuple[tuple[int, int], tuple[int, int], tuple[int, int]]


@dataclass(frozen=True)
class WrittenTrajectory(Trajectory):
    """A trajectory kept as the model wrote it (a native template's): ``text``, cut before any
    confidence it wrote, and the character ``spans`` of its vision, reasoning and answer in
    that text, as the segmenter found them; ``vision``/``reasoning``/``answer`` are those
    slices. It is scored as written: :meth:`render` is the text and the slot, nothing
    re-rendered."""

    text: str
    spans: Spans

    @classmethod
    def of(cls, text: str, spans: Spans) -> WrittenTrajectory:
        """The trajectory of ``text`` with segment ``spans`` (vision, reasoning, answer), which
        must be ordered, inside the text, and the answer not empty."""
        bounds = [b for span in spans for b in span]
        if bounds != sorted(bounds) or bounds[0] < 0 or bounds[-1] > len(text.rstrip()):
            raise InputError(f"segment spans {spans} are not ordered within the text")
        v, r, a = (text[s:e] for s, e in spans)
        if not a.strip():
            raise InputError("the trajectory's answer is empty")
        return cls(v, r, a, text, spans)

    def render(self, template: Template | None = None) -> tuple[str, dict[str, tuple[int, int]]]:
        """The text as written, then the template's confidence slot on a new line."""
        t = template or default_template()
        return self.text.rstrip() + "\n" + t.slot, dict(zip(SEGMENTS, self.spans, strict=True))

    def with_segment(self, axis: str, text: str) -> Trajectory:
        """The written text with the ``axis`` segment replaced by ``text`` (stripped), the
        other segments and everything around them kept as written."""
        if axis not in SEGMENTS:
            raise InputError(f"unknown axis {axis!r}; one of {SEGMENTS}")
        k = SEGMENTS.index(axis)
        return self._spliced(*self.spans[k], text.strip(), k)

    def cut(self, start: int, end: int) -> WrittenTrajectory:
        """The written text with ``[start, end)`` removed (a hesitation's truncation); a
        segment bound inside the removed range moves to its start."""
        return self._spliced(start, end, "", None)

    def _spliced(self, start: int, end: int, new: str, k: int | None) -> WrittenTrajectory:
        """``[start, end)`` replaced by ``new``; segment ``k`` (when given) becomes ``new``."""
        delta = len(new) - (end - start)

        def moved(b: int, after: bool) -> int:
            if (after and b >= end) or (b > start and b >= end):
                return b + delta
            return b if b <= start else start + len(new)

        def span(j: int) -> tuple[int, int]:
            if j == k:
                return start, start + len(new)
            after = k is not None and j > k
            return moved(self.spans[j][0], after), moved(self.spans[j][1], after)

        text = self.text[:start] + new + self.text[end:]
        return WrittenTrajectory.of(text, (span(0), span(1), span(2)))

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "text": self.text, "spans": [list(s) for s in self.spans]}


def trajectory_from_json(d: dict[str, Any]) -> Trajectory:
    """The :class:`Trajectory` (:class:`WrittenTrajectory` where it holds its text) of a
    :meth:`Trajectory.to_json` dict."""
    if "text" in d:
        (a, b), (c, e), (f, g) = d["spans"]
        spans = ((int(a), int(b)), (int(c), int(e)), (int(f), int(g)))
        return WrittenTrajectory.of(str(d["text"]), spans)
    return Trajectory(str(d["vision"]), str(d["reasoning"]), str(d["answer"]))


def _stripped(text: str, start: int, end: int) -> Span:
    """``[start, end)`` narrowed to its text without surrounding white space."""
    seg = text[start:end]
    a = start + len(seg) - len(seg.lstrip())
    return a, a + len(seg.strip())


def _answer_after(text: str, at: int, t: Template) -> Span:
    """The answer span after position ``at`` (the end of the rationale block): see the module
    docstring. InputError when none is stated."""
    end_of_body = at + len(cut_at_slot(text[at:]))
    tag = find_tag(text, t.answer_tag, at)
    if 0 <= tag < end_of_body:
        a = tag + len(t.answer_tag)
        while a < end_of_body and text[a].isspace():
            a += 1
        nl = text.find("\n", a, end_of_body)
        span = _stripped(text, a, end_of_body if nl < 0 else nl)
    else:
        sents = sentence_spans(text, at, end_of_body)
        cued = [s for s in sents if _ANSWER_CUE.search(text[s[0] : s[1]])]
        if cued:
            s, e = cued[-1]
            m = re.search(r"(?:answer is|answer\s*:|result is)\s*", text[s:e], re.IGNORECASE)
            span = _stripped(text, s + m.end() if m else s, e)
            if text[span[0] : span[1]].endswith("."):
                span = (span[0], span[1] - 1)
        else:
            first = text[at:end_of_body].strip().split("\n")[0]
            i = text.find(first, at) if first else -1
            span = (i, i + len(first)) if first else (end_of_body, end_of_body)
    if span[1] <= span[0]:
        raise InputError("the trajectory states no final answer after its rationale")
    return span


def _think(text: str, t: Template) -> WrittenTrajectory:
    if t.block is None:
        raise InputError(f"template {t.id} has the think format but no block tags")
    opening, closing = t.block
    o = find_tag(text, opening)
    start = 0 if o < 0 else o + len(opening)
    c = find_tag(text, closing, start)
    if c < 0:
        raise InputError(f"the trajectory does not close its {closing} block")
    sents = sentence_spans(text, start, c)
    labels = label_sentences([text[a:b] for a, b in sents])
    vis = [s for s, lab in zip(sents, labels, strict=True) if lab == "vision"]
    rea = [s for s, lab in zip(sents, labels, strict=True) if lab != "vision"]
    first = sents[0][0] if sents else start
    vision = (vis[0][0], vis[-1][1]) if vis else (first, first)
    reasoning = (rea[0][0], rea[-1][1]) if rea else (vision[1], vision[1])
    answer = _answer_after(text, c + len(closing), t)
    return WrittenTrajectory.of(text, (vision, reasoning, answer))


def _closing(tag: str) -> str:
    return "</" + tag[1:] if tag.startswith("<") else ""


def _block(text: str, tag: str, tags: tuple[str, ...]) -> Span | None:
    """The stripped content span of block ``tag``: up to the next tag of any block (its own
    closing tag, another's opening or closing one) or the end; None when it is not there."""
    i = find_tag(text, tag)
    if i < 0:
        return None
    a = i + len(tag)
    marks = [*tags, *(_closing(x) for x in tags)]
    stops = [j for j in (find_tag(text, x, a) for x in marks if x) if j >= 0]
    return _stripped(text, a, min(stops, default=len(text)))


def _blocks(text: str, t: Template) -> WrittenTrajectory:
    tags = (t.vision_tag, t.reasoning_tag, t.answer_tag)
    found = [_block(text, tag, tags) for tag in tags]
    answer = found[2]
    if answer is None or answer[1] <= answer[0]:
        raise InputError(f"the trajectory has no {t.answer_tag} block")
    reasoning = found[1] or (answer[0], answer[0])
    vision = found[0] or (reasoning[0], reasoning[0])
    if found[1] is None and found[0] is not None:
        reasoning = (vision[1], vision[1])
    return WrittenTrajectory.of(text, (vision, reasoning, answer))


def parse_written(text: str, template: Template) -> WrittenTrajectory:
    """The segments of a native template's text where they stand (module docstring);
    InputError when the text has no final answer (or its blocks are out of order)."""
    if template.format == "think":
        return _think(text, template)
    if template.format == "blocks":
        return _blocks(text, template)
    raise InputError(f"template {template.id} is not a native template (format {template.format})")


def finish_written(text: str, template: Template) -> str:
    """``text`` cut after its answer (its line, or its closing tag): the confidence or any
    later text a model wrote is dropped. A text without an answer is returned as it is."""
    try:
        end = parse_written(text, template).spans[2][1]
    except InputError:
        return text
    closing = _closing(template.answer_tag) if template.format == "blocks" else ""
    at = find_tag(text, closing, end)
    if at >= 0 and not text[end:at].strip():
        end = at + len(closing)
    return text[:end]


def force_suffix(text: str, template: Template) -> str:
    """What to append to a generation that reached no answer so that the model writes one
    next: for tagged blocks, the closing tag of the block left open (if any), then the answer
    tag; otherwise the part of the template's ``force`` after the last of its tags the text
    already holds (a think block already closed gets only the answer tag)."""
    if template.format == "blocks":
        opened = [
            (i, tag)
            for tag in (template.vision_tag, template.reasoning_tag)
            if (i := find_tag(text, tag, last=True)) >= 0
        ]
        _, last = max(opened, default=(-1, ""))
        left_open = last and find_tag(text, _closing(last), find_tag(text, last, last=True)) < 0
        return ("\n" + _closing(last) if left_open else "") + "\n" + template.answer_tag
    force = template.force or "\n" + template.answer_tag
    pos = 0
    for piece in (p.strip() for p in force.split("\n")):
        if piece and find_tag(text, piece) >= 0:
            pos = force.find(piece) + len(piece)
    return force[pos:] or "\n" + template.answer_tag
