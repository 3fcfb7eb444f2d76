"""Trajectories: the template, a trajectory's vision / reasoning / answer spans, its prompts.

A trajectory (docs/methods.md §5) is a vision rationale (what is read from the picture — for a text
problem, the facts read from the statement), a reasoning chain and a final answer, followed by
the confidence slot. The template (``data/template.json``, versioned by id and content hash)
asks for tagged sections ("Observation:", "Reasoning:", "Answer:", "Confidence (0-10):"), the
way the paper's VL-Calibration template asks for tagged blocks; generations that keep the tags
are split at them, and free text is split by a rule-based segmenter
(:mod:`clearsight.grounding.trajectories.parsing`).

A trajectory is *rendered* into the template's layout (:meth:`Trajectory.render`; the canonical
tagged text by default), which gives the character span of each segment; a model-native template's
generation is kept as written instead (a
:class:`~clearsight.grounding.trajectories.written.WrittenTrajectory`: its text and the spans the
segmenter found in it). The elicitation maps spans to tokens through the tokenizer's offsets. A
model's own trajectories are generated in :mod:`clearsight.grounding.trajectories.generation`; the
templates and a run's choice among them are :mod:`clearsight.grounding.trajectories.templates`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from clearsight.grounding.problems.problem import Problem
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
    (:class:`~clearsight.grounding.trajectories.written.WrittenTrajectory`). ``prefill`` starts the
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
