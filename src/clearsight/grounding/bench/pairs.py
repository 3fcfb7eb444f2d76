"""TGS-Bench: good/bad trajectory pairs that differ on exactly one axis (paper §4.2, App. B.1).

The good trajectory is a problem's canonical solution. The bad one copies it and changes one
component:

* **answer** — by rule (:func:`perturb_answer`): letter shift to the next option, numeric
  change (integers by a non-zero offset; structured numbers — fractions, decimals — keep their
  form and change one part), boolean flip. Text answers have no rule (the pair is skipped with
  that reason).
* **vision** / **reasoning** — one false observation / one arithmetic or logical error,
  injected by a generator model (any backend; the embedded SmolLM2 by default) and *checked*
  (:func:`check_edit`: the edit changes the span, character similarity >= 0.9, length within
  10 %). When the model's edit fails the check, a rule injects the error instead (one number
  changed, or a negation inserted where there is no number) and the pair records which
  injector made it and why the model's edit was refused.
* An optional **judge pass** (:func:`judge_request`) asks a model which of the two trajectories
  holds the error (the paper's independent-judge validation); both orders are balanced by seed.
  A judge that takes images sees the problem's image with the pair (the paper's judge is
  image-aware); a text-only judge reads the text alone, and its records say so.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from clearsight.grounding.problems.problem import LETTERS, Problem
from clearsight.grounding.trajectories.trajectory import Trajectory
from clearsight.models.base import Decoding, Message, Request
from clearsight.models.replies import checked_replies, noting_replaced, replaced_where
from clearsight.seeding import rng_for
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Backend

AXES: tuple[str, ...] = ("vision", "reasoning", "answer")
MIN_SIMILARITY = 0.9
MAX_LENGTH_CHANGE = 0.10

_INT = re.compile(r"(?<![\d.])-?\d+(?![\d.])")
_NUM = re.compile(r"\d+(?:\.\d+)?")


# --------------------------------------------------------------------------------------------
# Answer axis
# --------------------------------------------------------------------------------------------


def perturb_answer(answer: str, problem: Problem, rng: np.random.Generator) -> tuple[str, str]:
    """A wrong answer of the same form, and the rule that made it."""
    a = answer.strip()
    if problem.answer_type == "letter":
        n = len(problem.options) or 4
        k = LETTERS.find(a.upper())
        if k < 0 or k >= n:
            raise InputError(f"answer {a!r} is not one of {n} option letters")
        return LETTERS[(k + 1) % n], "letter_shift"
    if problem.answer_type == "boolean":
        flips = {"yes": "no", "no": "yes", "true": "false", "false": "true"}
        if a.lower() not in flips:
            raise InputError(f"answer {a!r} is not a boolean")
        out = flips[a.lower()]
        return (out.capitalize() if a[:1].isupper() else out), "boolean_flip"
    if problem.answer_type == "number":
        if re.fullmatch(r"-?\d+/\d+", a):
            num, den = (int(x) for x in a.split("/"))
            for step in (1, 2, -1, 3):
                if num + step > 0 and Fraction(num + step, den) != Fraction(num, den):
                    g = Fraction(num + step, den)
                    return f"{g.numerator}/{g.denominator}", "structured_number"
        if re.fullmatch(r"-?\d+\.\d+", a):
            whole, frac = a.split(".")
            last = (int(frac[-1]) + int(rng.integers(1, 9))) % 10
            return f"{whole}.{frac[:-1]}{last}", "structured_number"
        if re.fullmatch(r"-?\d+", a):
            v = int(a)
            step = int(rng.choice([-3, -2, -1, 1, 2, 3, 5, 10]))
            if v + step < 0 <= v:
                step = abs(step)
            return str(v + step), "numeric_change"
        raise InputError(f"numeric answer {a!r} has no perturbation rule")
    raise InputError("text answers have no perturbation rule")


# --------------------------------------------------------------------------------------------
# Vision / reasoning axes
# --------------------------------------------------------------------------------------------


def similarity(a: str, b: str) -> float:
    """Character similarity ``difflib.SequenceMatcher(None, a, b).ratio()`` in [0, 1]."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def check_edit(original: str, edited: str) -> str | None:
    """None when ``edited`` is an acceptable single edit of ``original``, else why not."""
    if edited.strip() == original.strip():
        return "the edit changes nothing"
    sim = similarity(original, edited)
    if sim < MIN_SIMILARITY:
        return f"character similarity {sim:.3f} < {MIN_SIMILARITY}"
    change = abs(len(edited) - len(original)) / max(len(original), 1)
    if change > MAX_LENGTH_CHANGE:
        return f"length changes by {change:.1%} > {MAX_LENGTH_CHANGE:.0%}"
    return None


def inject_rule(text: str, axis: str, rng: np.random.Generator) -> tuple[str, str]:
    """One error by rule: change one number (reasoning: preferably a result right after "="),
    else insert a negation after the first "is"/"must"/"are". Returns (edited, rule)."""
    matches = list(_INT.finditer(text))
    if axis == "reasoning":
        results = [m for m in matches if text[: m.start()].rstrip().endswith("=")]
        matches = results or matches
    if matches:
        m = matches[int(rng.integers(0, len(matches)))]
        v = int(m.group(0))
        step = int(rng.choice([-2, -1, 1, 2, 3]))
        if v + step < 0:
            step = abs(step)
        new = str(v + step)
        return text[: m.start()] + new + text[m.end() :], "number_change"
    neg = re.search(r"\b(is|are|must)\b(?! not)", text)
    if neg:
        return text[: neg.end()] + " not" + text[neg.end() :], "negation"
    raise InputError(f"no rule can inject a {axis} error into {text[:60]!r}")


_EDIT_PROMPT = {
    "vision": (
        "Here is an observation from a solution:\n{span}\n\nRewrite it with exactly ONE false "
        "detail (for example one wrong number), changing as few characters as possible. Write "
        "only the rewritten observation."
    ),
    "reasoning": (
        "Here is a reasoning step from a solution:\n{span}\n\nRewrite it with exactly ONE "
        "arithmetic or logical error, changing as few characters as possible. Write only the "
        "rewritten reasoning."
    ),
}


def edit_request(span: str, axis: str, max_new_tokens: int | None = None) -> Request:
    """The generator model's request to inject one ``axis`` error into ``span`` (greedy)."""
    if axis not in _EDIT_PROMPT:
        raise InputError(f"model injection is for vision and reasoning, not {axis!r}")
    budget = max_new_tokens or min(
        128, 6 + len(span) // 3
    )  # ~3 characters a token; longer fails the length check
    return Request(
        (Message.user(_EDIT_PROMPT[axis].replace("{span}", span)),),
        Decoding(max_new_tokens=budget),
    )


@dataclass(frozen=True)
class Edit:
    """A bad span: the text, who made it (``model`` or ``rule``), the rule or the model's
    refused attempt, the checks' numbers, and where lone surrogates were replaced in the
    model's reply (stored as ``extra.replaced_surrogates`` only where there were any)."""

    axis: str
    original: str
    edited: str
    injector: str
    rule: str | None
    model_attempt: str | None
    model_refused: str | None
    similarity: float
    replaced: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        fields = {k: v for k, v in vars(self).items() if k != "replaced"}
        return noting_replaced(fields, self.replaced)


class EditFailedError(RuntimeError):
    """The generator gave no reply that can be read for a span (its message: the backend's
    failure or the refused reply, ``"Type: message"``): the item fails and a rerun asks again,
    rather than the rule standing in for an edit the model was never able to make."""


def inject_errors(
    generator: Backend | None,
    spans: Sequence[tuple[str, str]],
    seeds: Sequence[int],
) -> list[Edit | InputError | EditFailedError]:
    """Edits of ``spans`` (``(axis, text)`` pairs): the generator's first (all requests in one
    call), the rule's where the generator's edit fails :func:`check_edit` or there is none; an
    InputError where no edit can be made, an :class:`EditFailedError` where the generator's
    reply cannot be read (:func:`~clearsight.models.replies.checked_replies`)."""
    attempts: list[str | Exception | None] = [None] * len(spans)
    replaced: list[tuple[str, ...]] = [()] * len(spans)
    if generator is not None and spans:
        replies = checked_replies(generator, [edit_request(t, a) for a, t in spans])
        attempts = [
            r if isinstance(r, Exception) else _first_paragraph(r.texts[0]) for r in replies
        ]
        replaced = [() if isinstance(r, Exception) else tuple(replaced_where(r)) for r in replies]
    out: list[Edit | InputError | EditFailedError] = []
    for (axis, text), attempt, seed, where in zip(spans, attempts, seeds, replaced, strict=True):
        if isinstance(attempt, Exception):
            out.append(EditFailedError(f"{type(attempt).__name__}: {attempt}"))
            continue
        refused = None
        if attempt is not None:
            refused = check_edit(text, attempt)
            if refused is None:
                out.append(
                    Edit(
                        axis,
                        text,
                        attempt,
                        "model",
                        None,
                        attempt,
                        None,
                        similarity(text, attempt),
                        where,
                    )
                )
                continue
        out.append(_rule_edit(axis, text, seed, attempt, refused, where))
    return out


def _rule_edit(
    axis: str,
    text: str,
    seed: int,
    attempt: str | None,
    refused: str | None,
    where: tuple[str, ...],
) -> Edit | InputError:
    """The rule's edit of the ``axis`` span ``text`` where the generator made none
    (``attempt`` None) or its edit was ``refused`` by :func:`check_edit`; an InputError where
    the rule cannot edit the span or its edit fails the same check."""
    try:
        edited, rule = inject_rule(text, axis, rng_for("grounding.inject", axis, seed))
    except InputError as exc:
        return exc
    why = check_edit(text, edited)
    if why is not None:
        return InputError(f"rule edit of the {axis} span fails its check: {why}")
    return Edit(axis, text, edited, "rule", rule, attempt, refused, similarity(text, edited), where)


def _first_paragraph(text: str) -> str:
    return text.strip().split("\n\n")[0].strip()


def bad_trajectory(good: Trajectory, axis: str, new_text: str) -> Trajectory:
    """``good`` with the ``axis`` component replaced (the others copied unchanged; a
    trajectory kept as written stays as written around it)."""
    return good.with_segment(axis, new_text)


# --------------------------------------------------------------------------------------------
# Judge pass
# --------------------------------------------------------------------------------------------


def judge_request(
    problem: Problem,
    good: Trajectory,
    bad: Trajectory,
    bad_first: bool,
    image: npt.NDArray[np.uint8] | None = None,
) -> Request:
    """Ask which of a pair's two trajectories holds the error, the bad one shown first or
    second; candidates "1" and "2" (one pass). With the problem's ``image`` (pixels, for a
    judge that takes images) the image comes first in the turn, as the paper's image-aware
    judge sees it; without one the judge reads the text only."""
    first, second = (bad, good) if bad_first else (good, bad)
    a, _ = first.render()
    b, _ = second.render()
    text = (
        f"Problem: {problem.question}\n\nSolution 1:\n{a.rsplit(chr(10), 1)[0]}\n\n"
        f"Solution 2:\n{b.rsplit(chr(10), 1)[0]}\n\nOne of the two solutions contains an "
        "error. Which one? Answer 1 or 2."
    )
    turn = Message.user(text) if image is None else Message.user(image, text)
    return Request((turn,), candidates=("1", "2"), generate=False)


def judge_p_bad(probs: Mapping[str, float], bad_first: bool) -> float | None:
    """The judge's probability that the bad side holds the error, from its probabilities of
    "1" and "2" renormalised over the two; None when it put no probability on either."""
    p1, p2 = float(probs.get("1", 0.0)), float(probs.get("2", 0.0))
    if p1 + p2 <= 0:
        return None
    return (p1 if bad_first else p2) / (p1 + p2)
