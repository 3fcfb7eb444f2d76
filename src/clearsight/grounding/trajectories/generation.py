"""A model's own trajectories (docs/methods.md §5): generated greedily under the run's template
from its opening (the vision tag, or a native template's prefill such as ``<think>``), cut
where the model starts writing its own confidence and after its answer; a generation that
reaches no answer within its tokens is cut after its last full sentence and continued once from
the answer tag (a native template first closes its rationale block: ``force``), marked
``answer_forced``. A canonical generation is segmented and re-rendered; a native one is kept
as written, its spans marked where they stand (:mod:`clearsight.grounding.trajectories.written`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clearsight.grounding.problems.problem import Problem
from clearsight.grounding.trajectories.parsing import (
    SENTENCE_END,
    cut_at_slot,
    find_tag,
    parse_trajectory,
)
from clearsight.grounding.trajectories.trajectory import (
    Template,
    Trajectory,
    default_template,
    user_message,
)
from clearsight.grounding.trajectories.written import finish_written, force_suffix, parse_written
from clearsight.models.base import Decoding, Message, Request, TextPart
from clearsight.models.replies import checked_replies, replaced_where
from clearsight.validate import InputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from clearsight.models.base import Backend


@dataclass(frozen=True)
class Generated:
    """A model's own trajectory for a problem: the raw text, the parsed trajectory (None with
    ``reason`` when it cannot be parsed), whether a second short call supplied the answer, and
    where lone surrogates were replaced in its replies (``answer:`` prefixes the second call's;
    :func:`~clearsight.models.replies.replaced_where`)."""

    text: str
    trajectory: Trajectory | None
    reason: str | None
    answer_forced: bool
    replaced: tuple[str, ...] = ()


def _forced_answers(
    backend: Backend,
    forced: Sequence[tuple[Problem, npt.NDArray[np.uint8] | None, str]],
    t: Template,
    answer_tokens: int,
) -> list[tuple[str | Exception, list[str]]]:
    """The second stage of :func:`generate_trajectories`: each generation that stated no
    answer (``forced``: its problem, image and text) continued once after the answer
    tag for ``answer_tokens`` tokens, all in one call. Per generation the whole text (or the
    exception of a reply that cannot be read) and where surrogates were replaced in the reply."""
    if not forced:
        return []
    bodies = [forced_body(text, t) for _, _, text in forced]
    requests = [
        Request(
            (user_message(p, t, im), Message("assistant", (TextPart(body),))),
            Decoding(max_new_tokens=answer_tokens),
        )
        for (p, im, _), body in zip(forced, bodies, strict=True)
    ]
    return [
        (r, [])
        if isinstance(r, Exception)
        else (_after_forced(body + r.texts[0], t), replaced_where(r, "answer: "))
        for body, r in zip(bodies, checked_replies(backend, requests), strict=True)
    ]


def generate_trajectories(
    backend: Backend,
    problems: Sequence[Problem],
    images: Sequence[npt.NDArray[np.uint8] | None],
    template: Template | None = None,
    max_new_tokens: int = 96,
    answer_tokens: int = 10,
) -> list[Generated | Exception]:
    """Each problem's greedy trajectory under the template, or the exception that says why its
    model gave no reply that can be read (:func:`~clearsight.models.replies.checked_replies`:
    that problem fails alone).

    The assistant turn is started with the vision tag; a generation that states no answer
    within ``max_new_tokens`` is continued once with the answer tag for ``answer_tokens`` more
    tokens (recorded as ``answer_forced``). All requests of a stage go to the backend at once.
    """
    t = template or default_template()
    first = [
        Request(
            (user_message(p, t, im), Message("assistant", (TextPart(t.opening),))),
            Decoding(max_new_tokens=max_new_tokens),
        )
        for p, im in zip(problems, images, strict=True)
    ]
    replies = checked_replies(backend, first)
    texts: list[str | Exception] = [
        r if isinstance(r, Exception) else finish_generation(t.opening + r.texts[0], t)
        for r in replies
    ]
    replaced = [[] if isinstance(r, Exception) else replaced_where(r) for r in replies]
    need = [i for i, x in enumerate(texts) if isinstance(x, str) and not has_answer(x, t)]
    forced = [(problems[i], images[i], str(texts[i])) for i in need]
    for i, (text, where) in zip(
        need, _forced_answers(backend, forced, t, answer_tokens), strict=True
    ):
        texts[i] = text
        replaced[i] += where
    return [
        text
        if isinstance(text, Exception)
        else dataclasses.replace(parse_generated(text, t, i in need), replaced=tuple(replaced[i]))
        for i, text in enumerate(texts)
    ]


def has_answer(text: str, t: Template) -> bool:
    """Whether a (finished) generation states its answer in the template's way."""
    if t.native:
        try:
            parse_written(text, t)
        except InputError:
            return False
        return True
    return find_tag(text, t.answer_tag) >= 0


def forced_body(text: str, t: Template) -> str:
    """A generation without an answer cut after its last full sentence, then what makes the
    model write its answer next (the answer tag; a native template's ``force``)."""
    body = last_sentence_end(text).rstrip()
    return body + (force_suffix(body, t) if t.native else "\n" + t.answer_tag)


def parse_generated(text: str, t: Template, forced: bool) -> Generated:
    """A generated text parsed as a trajectory (or the reason it is not one): a native one as
    written, a canonical one into its segments (also how ``clearsight verify --readouts``
    reads a stored generation again)."""
    try:
        traj = parse_written(text, t) if t.native else parse_trajectory(text, t)
        if not traj.answer.strip():
            raise InputError("the trajectory's answer is empty")
    except InputError as exc:
        return Generated(text, None, str(exc), forced)
    return Generated(text, traj, None, forced)


def finish_generation(text: str, template: Template | None = None) -> str:
    """A generated trajectory text cut where the model starts writing its own confidence and
    after the end of its answer (a native template's: :func:`finish_written`)."""
    t = template or default_template()
    if t.native:
        return finish_written(text, t)
    return _cut_after_answer(cut_at_slot(text), t)


def _after_forced(text: str, t: Template) -> str:
    """A forced continuation cut after its answer (a canonical one: after its answer line)."""
    return finish_written(text, t) if t.native else _cut_after_answer(text, t)


def _cut_after_answer(text: str, t: Template) -> str:
    """The text up to the end of the answer line (later text, e.g. a written confidence or a
    new question, is dropped)."""
    i = find_tag(text, t.answer_tag)
    if i < 0:
        return text
    j = text.find("\n", i + len(t.answer_tag))
    return text if j < 0 else text[:j]


def last_sentence_end(text: str) -> str:
    """``text`` cut after its last complete sentence (a generation stopped mid-sentence)."""
    m = list(SENTENCE_END.finditer(text))
    return text[: m[-1].end()] if m else text
