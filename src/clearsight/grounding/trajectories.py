"""Trajectories: the template, parsing, segmentation into vision / reasoning / answer spans.

A trajectory (docs/methods.md §5) is a vision rationale (what is read from the picture — for a text
problem, the facts read from the statement), a reasoning chain and a final answer, followed by
the confidence slot. The template (``data/template.json``, versioned by id and content hash)
asks for tagged sections ("Observation:", "Reasoning:", "Answer:", "Confidence (0-10):"), the
way the paper's VL-Calibration template asks for tagged blocks; generations that keep the tags
are split at them, and free text is split by the rule-based :func:`segment` (its agreement
with a hand-labelled sample, ``data/segmentation_sample.jsonl``, is :func:`segmenter_agreement`).

A trajectory is *rendered* into the template's layout (:meth:`Trajectory.render`; the canonical
tagged text by default), which gives the character span of each segment; a model-native
template's generation is kept as written instead (a
:class:`~clearsight.grounding.written.WrittenTrajectory`: its text and the spans the segmenter
found in it). The elicitation maps
spans to tokens through the tokenizer's offsets. A model's own trajectories are generated in
:mod:`clearsight.grounding.generation`; the templates and a run's choice among them are
:mod:`clearsight.grounding.templates`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from clearsight.grounding.problems import Problem
from clearsight.models.base import ImagePart, Message, TextPart
from clearsight.seeding import content_hash
from clearsight.validate import InputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


SEGMENTS: tuple[str, ...] = ("vision", "reasoning", "answer")


@dataclass(frozen=True)
class Template:
    """A trajectory template: the user prompt (``{question}`` filled in), the answer tag and the
    confidence slot text, and how the model's own text is laid out (``format``):

    * ``tagged`` (None; the canonical ``data/template.json``): "Observation:" / "Reasoning:" /
      "Answer:" lines (``vision_tag``, ``reasoning_tag``, ``answer_tag``); a generation is
      split at the tags and re-rendered in that form;
    * ``think``: a free-form rationale inside a think block (``block``: its opening and closing
      tags), its sentences labelled vision / reasoning by the segmenter, then the answer line;
    * ``blocks``: tagged blocks ``<vision>..</vision>``, ``<reasoning>..</reasoning>``,
      ``<answer>..</answer>`` (``vision_tag``, ``reasoning_tag``, ``answer_tag`` open them),
      extracted directly.

    A native (``think``, ``blocks``) generation is kept as written
    (:class:`~clearsight.grounding.written.WrittenTrajectory`). ``prefill`` starts the
    assistant's turn (None: the vision tag); ``force`` is what closes a think block and opens
    the answer when a generation reaches no answer (tagged blocks close the block left open);
    ``layout`` renders a trajectory that was not written in the template (a TGS-Bench pair)
    with ``{vision}``, ``{reasoning}``, ``{answer}`` (None: the tagged lines). Fields left
    None stay out of the content hash, so the canonical template keeps the hash its runs were
    keyed with."""

    id: str
    user: str
    answer_tag: str
    slot: str
    vision_tag: str = ""
    reasoning_tag: str = ""
    format: str | None = None
    block: tuple[str, str] | None = None
    prefill: str | None = None
    force: str | None = None
    layout: str | None = None

    @property
    def hash(self) -> str:
        """Content hash recorded with every item that uses the template."""
        return content_hash({k: v for k, v in vars(self).items() if v is not None})[:16]

    @property
    def native(self) -> bool:
        """Whether the model's text is kept as written (a ``think`` or ``blocks`` template)."""
        return self.format in ("think", "blocks")

    @property
    def opening(self) -> str:
        """The text the assistant's turn starts with."""
        return self.vision_tag if self.prefill is None else self.prefill

    @property
    def lines(self) -> str:
        """The layout a trajectory is rendered with (see the class docstring)."""
        if self.layout is not None:
            return self.layout
        return (
            f"{self.vision_tag} {{vision}}\n{self.reasoning_tag} {{reasoning}}\n"
            f"{self.answer_tag} {{answer}}\n"
        )


@lru_cache(maxsize=1)
def default_template() -> Template:
    """The bundled template ``data/template.json``."""
    data = json.loads(files("clearsight.grounding").joinpath("data/template.json").read_text())
    return template_of(data)


def template_of(data: dict[str, Any]) -> Template:
    """The :class:`Template` of a data file's mapping (``block`` a pair of tags)."""
    if data.get("block") is not None:
        data = {**data, "block": tuple(data["block"])}
    return Template(**data)


@dataclass(frozen=True)
class Trajectory:
    """Vision rationale, reasoning chain and final answer (texts, any may be empty but the
    answer)."""

    vision: str
    reasoning: str
    answer: str

    def render(self, template: Template | None = None) -> tuple[str, dict[str, tuple[int, int]]]:
        """The text ending at the confidence slot, laid out by the template
        (:attr:`Template.lines`; each segment stripped), and each segment's character span."""
        t = template or default_template()
        text, pos = "", 0
        spans: dict[str, tuple[int, int]] = {}
        for m in re.finditer(r"\{(vision|reasoning|answer)\}", t.lines):
            body = getattr(self, m.group(1)).strip()
            text += t.lines[pos : m.start()]
            spans[m.group(1)] = (len(text), len(text) + len(body))
            text += body
            pos = m.end()
        return text + t.lines[pos:] + t.slot, spans

    def rationale_spans(self, template: Template | None = None) -> list[tuple[int, int]]:
        """Character spans of the designated rationale (vision and reasoning), non-empty only."""
        _, spans = self.render(template)
        return [spans[s] for s in ("vision", "reasoning") if spans[s][1] > spans[s][0]]

    def with_segment(self, axis: str, text: str) -> Trajectory:
        """The trajectory with its ``axis`` component replaced (the others copied unchanged)."""
        if axis not in SEGMENTS:
            raise InputError(f"unknown axis {axis!r}; one of {SEGMENTS}")
        return dataclasses.replace(self, **{axis: text})

    def to_json(self) -> dict[str, str]:
        return {"vision": self.vision, "reasoning": self.reasoning, "answer": self.answer}


def good_trajectory(problem: Problem) -> Trajectory:
    """The canonical (correct) trajectory of a problem that carries a solution."""
    if not problem.solution:
        raise InputError(f"problem {problem.id} has no canonical solution to build pairs from")
    s = problem.solution
    return Trajectory(s["observation"], s["reasoning"], s["answer"])


# --------------------------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------------------------


def user_message(
    problem: Problem,
    template: Template | None = None,
    image: npt.NDArray[np.uint8] | None = None,
) -> Message:
    """The problem as the template's user turn (the image first, when there is one)."""
    t = template or default_template()
    text = TextPart(t.user.replace("{question}", problem.question))
    if image is None:
        return Message("user", (text,))
    return Message("user", (ImagePart(image), text))


def elicit_messages(
    problem: Problem,
    trajectory: Trajectory,
    template: Template | None = None,
    image: npt.NDArray[np.uint8] | None = None,
) -> tuple[tuple[Message, ...], dict[str, tuple[int, int]]]:
    """The conversation whose last turn is ``trajectory`` up to the confidence slot, and the
    segment spans within that turn's text."""
    text, spans = trajectory.render(template)
    return (
        user_message(problem, template, image),
        Message("assistant", (TextPart(text),)),
    ), spans


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
