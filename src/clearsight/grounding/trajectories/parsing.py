"""Reading a trajectory text: cut at its confidence slot, split at its tags, or segmented by rule.

A given trajectory is cut at its (last) confidence slot, keeping the numeral written there
(:func:`split_at_slot`); a generation is cut where the slot starts, since a confidence is
elicited from the distribution at the slot, never from what a model wrote (:func:`cut_at_slot`).
:func:`parse_trajectory` splits the text at the template's tags where they stand and otherwise
by the rule-based :func:`segment`, which labels sentences vision / reasoning / answer by cues;
its agreement with a hand-labelled sample (``data/segmentation_sample.jsonl``) is
:func:`segmenter_agreement`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files

from clearsight.grounding.trajectories.trajectory import (
    SEGMENTS,
    Template,
    Trajectory,
    default_template,
)
from clearsight.validate import InputError

# --------------------------------------------------------------------------------------------
# Parsing generations and given trajectories
# --------------------------------------------------------------------------------------------

_SLOT = re.compile(r"confidence\s*(?:\(\s*0\s*-\s*10\s*\))?\s*:[ \t]*", re.IGNORECASE)
_WRITTEN = re.compile(r"^\s*(-?\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class Slotted:
    """A given trajectory text cut at its confidence slot, and the confidence written there."""

    body: str
    written: int | None


def split_at_slot(text: str) -> Slotted:
    """Cut a full trajectory at its (last) confidence slot.

    InputError when there is no slot, or when the numeral written in it is outside 0..10 or not
    a whole number (a trajectory with an unreadable confidence is not silently repaired).
    """
    matches = list(_SLOT.finditer(text))
    if not matches:
        raise InputError("no confidence slot: the trajectory has no 'Confidence (0-10):' line")
    m = matches[-1]
    after = _WRITTEN.match(text[m.end() :])
    written = None
    if after:
        value = float(after.group(1))
        if value != int(value) or not 0 <= value <= 10:
            raise InputError(f"the written confidence {after.group(1)} is not a numeral 0..10")
        written = int(value)
    return Slotted(text[: m.start()], written)


def cut_at_slot(text: str) -> str:
    """``text`` cut where its (first) confidence slot starts: a confidence is elicited from the
    distribution at the slot, never from what a model wrote there."""
    m = _SLOT.search(text)
    return text if m is None else text[: m.start()]


def find_tag(text: str, tag: str, start: int = 0, *, last: bool = False) -> int:
    """The position in ``text`` itself of the first (``last``: the last) occurrence of ``tag``
    at or after ``start``, letter case ignored; -1 when there is none (or ``tag`` is empty).

    Matched case-insensitively where the text stands, never in a case-mapped copy: a lower-case
    copy can be longer than the text (``"İ".lower()`` is two characters), and a position found
    in it would point past the tag in the text."""
    if not tag:
        return -1
    pattern = re.compile(re.escape(tag), re.IGNORECASE)
    if not last:
        m = pattern.search(text, start)
        return -1 if m is None else m.start()
    found = -1
    for m in pattern.finditer(text, start):
        found = m.start()
    return found


def _section(text: str, tag: str, stops: Sequence[str]) -> str | None:
    i = find_tag(text, tag)
    if i < 0:
        return None
    rest = text[i + len(tag) :]
    end = len(rest)
    for stop in stops:
        j = find_tag(rest, stop)
        if 0 <= j < end:
            end = j
    return rest[:end].strip()


def parse_trajectory(text: str, template: Template | None = None) -> Trajectory:
    """Segments of a trajectory text: tags where present, :func:`segment` otherwise.

    InputError when no answer can be found (neither an answer tag nor an answer sentence).
    """
    t = template or default_template()
    body = cut_at_slot(text)
    answer = _section(body, t.answer_tag, ["\n"])
    if answer is not None:
        answer = answer.strip()
        before = body[: find_tag(body, t.answer_tag)]
        vision = _section(before, t.vision_tag, [t.reasoning_tag])
        reasoning = _section(before, t.reasoning_tag, [])
        if vision is not None and reasoning is not None:
            return Trajectory(vision, reasoning, answer)
        seg = segment(before.replace(t.vision_tag, " ").replace(t.reasoning_tag, " "))
        return Trajectory(seg.vision, seg.reasoning, answer or seg.answer)
    seg = segment(body.replace(t.vision_tag, " ").replace(t.reasoning_tag, " "))
    if not seg.answer:
        raise InputError("the trajectory states no final answer")
    return seg


# --------------------------------------------------------------------------------------------
# Rule-based segmenter
# --------------------------------------------------------------------------------------------

#: Where a sentence ends: after a run of . ! ? followed by white space or the end, and at a
#: newline. A run is matched from its first mark only (the look-behind) and never given back
#: (possessive), so finding every end costs one pass over the text, however long a stretch
#: without an end (a number such as 3.5, a file name, a long think block) is.
SENTENCE_END = re.compile(r"(?<![.!?])[.!?]++(?=\s|$)|\n")
_ANSWER_CUE = re.compile(
    r"\b(the (final )?answer is\b|final answer\b|answer\s*:|so the answer\b|answer would be\b|"
    r"the result is\b|option [A-J] is correct\b)",
    re.IGNORECASE,
)
_REASON_CUE = re.compile(
    r"(=|\d\s*[-+x*/×÷^]\s*\d|\b(so|therefore|thus|hence|because|since|which means|we get|"
    r"gives|compute|calculate|subtract|add(ing)?|multiply|divide|total|sum|must|means|"
    r"implies|follows|order|difference|then)\b)",
    re.IGNORECASE,
)


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Character spans in ``text`` of the sentences of ``text[start:end]``, each stripped of
    surrounding white space (empty ones left out): the text is cut at every
    :data:`SENTENCE_END`, so every character that is not white space lies in one sentence. One
    pass over the text (linear in its length)."""
    stop = len(text) if end is None else end
    cuts = [m.end() for m in SENTENCE_END.finditer(text, start, stop)]
    out = []
    for a, b in zip([start, *cuts], [*cuts, stop], strict=True):
        body = text[a:b]
        core = body.strip()
        if core:
            lead = a + len(body) - len(body.lstrip())
            out.append((lead, lead + len(core)))
    return out


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` (split after . ! ? followed by space, and at newlines;
    :func:`sentence_spans`)."""
    return [text[a:b] for a, b in sentence_spans(text)]


def label_sentences(sents: Sequence[str]) -> list[str]:
    """The segmenter's label per sentence, contiguous vision -> reasoning -> answer.

    Rules: the last sentence with an answer cue ("the answer is", "final answer", ...) and
    everything after it is the answer; before it, sentences up to the first one with a
    reasoning cue (an equation, an operator between numbers, "so", "therefore", "because", ...)
    are the vision rationale (restated observations); the rest is reasoning.
    """
    n = len(sents)
    answer_at = next((i for i in range(n - 1, -1, -1) if _ANSWER_CUE.search(sents[i])), n)
    first_reason = next((i for i in range(answer_at) if _REASON_CUE.search(sents[i])), answer_at)
    return (
        ["vision"] * first_reason
        + ["reasoning"] * (answer_at - first_reason)
        + ["answer"] * (n - answer_at)
    )


def segment(text: str) -> Trajectory:
    """A free-text trajectory split by :func:`label_sentences` (answer: the answer sentences,
    reduced to what follows "is"/":" in the first of them when it can be)."""
    sents = sentences(text)
    labels = label_sentences(sents)
    part = {
        k: " ".join(s for s, lab in zip(sents, labels, strict=True) if lab == k) for k in SEGMENTS
    }
    answer = part["answer"]
    m = re.search(r"(?:answer is|answer\s*:|result is)\s*(.+)", answer, re.IGNORECASE)
    if m:
        answer = m.group(1).strip().rstrip(".")
    return Trajectory(part["vision"], part["reasoning"], answer)


@dataclass(frozen=True)
class Agreement:
    """Sentence-level agreement of the segmenter with hand labels."""

    sentences: int
    agree: int
    trajectories: int
    per_label: dict[str, tuple[int, int]]

    @property
    def rate(self) -> float:
        return self.agree / self.sentences if self.sentences else float("nan")


def hand_labelled_sample() -> list[list[tuple[str, str]]]:
    """The bundled hand-labelled trajectories: per trajectory, (sentence, label) pairs."""
    raw = files("clearsight.grounding").joinpath("data/segmentation_sample.jsonl").read_text()
    out = []
    for line in raw.splitlines():
        if line.strip():
            out.append([(str(s), str(lab)) for s, lab in json.loads(line)["sentences"]])
    return out


def segmenter_agreement(sample: Sequence[Sequence[tuple[str, str]]] | None = None) -> Agreement:
    """Share of hand-labelled sentences the segmenter labels the same (the paper's manual check
    reports over 95 % on 100 samples)."""
    data = hand_labelled_sample() if sample is None else sample
    total = agree = 0
    per: dict[str, list[int]] = {k: [0, 0] for k in SEGMENTS}
    for traj in data:
        sents = [s for s, _ in traj]
        for (_, gold), got in zip(traj, label_sentences(sents), strict=True):
            total += 1
            agree += gold == got
            per[gold][0] += gold == got
            per[gold][1] += 1
    return Agreement(total, agree, len(data), {k: (v[0], v[1]) for k, v in per.items()})


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------
