"""The sweep's read-outs: what a raw model response says, computed from the stored raw output alone.

Kept apart from the backends (lm-evaluation-harness style) so a run can be re-scored without
calling a model again (docs/methods.md §3). An API backend's letter probabilities come from its
top-k log-probabilities (:mod:`clearsight.models.logprobs`); trajectory grounding's numerals
are read in :mod:`clearsight.grounding.confidence.numerals`.

* **Letter probabilities** (:func:`letter_readout`). The next-token distribution at the answer
  position restricted to the offered letters: the raw probabilities and their total mass are
  kept; renormalised over every offered letter (abstain included) the argmax is the answer; the
  *internal confidence* is the largest probability renormalised over the content options only
  (the model's belief in its best answer, kept separate from the abstention signal).
* **Verbalized confidence** (:func:`parse_verbalized`, :func:`parse_confidence`). ``Answer:
  <letter>`` and ``Confidence: <number>`` parsed from the reply; a reply without a number is
  stored as unparsed (None), never guessed. Scales: see :func:`parse_confidence`.
* **Abstention from text** (:func:`detect_abstention`): the abstain letter as the answer, or
  the abstain option's own words in a reply that names no letter.
* **A sweep item's read-outs** (:func:`sweep_readouts`): one :class:`SweepReadouts` per
  answered question, what a sweep record stores beside the raw output; a V_eq record's
  :class:`VeqReadouts` and a depth record's :class:`DepthReadouts` (computed by the model-free
  units, :mod:`clearsight.sweep.unit`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from clearsight.tasks import Question
from clearsight.validate import InputError

# ---------------------------------------------------------------------------------------------
# Letter probabilities


@dataclass(frozen=True)
class LetterReadout:
    """Option probabilities read from one forward pass."""

    raw: dict[str, float]
    mass: float
    renormalised: dict[str, float]
    answer: str | None
    confidence: float | None


def letter_readout(
    candidate_probs: Mapping[str, float] | None,
    letters: Sequence[str],
    abstain_letter: str | None = None,
) -> LetterReadout:
    """Answer and internal confidence from raw candidate probabilities (see module docstring).

    A response without candidate probabilities, or with zero mass on the letters, gives no
    answer (``None``), which the metrics count as not correct. A probability that is not a
    finite number in [0, 1] is an InputError (a run checks replies before they get here:
    :mod:`clearsight.models.replies`).
    """
    offered = [*letters, *([abstain_letter] if abstain_letter else [])]
    raw = {letter: float((candidate_probs or {}).get(letter, 0.0)) for letter in offered}
    if not all(0.0 <= v <= 1.0 for v in raw.values()):  # NaN fails too
        raise InputError(f"candidate probabilities outside [0, 1] in {raw}")
    mass = sum(raw.values())
    if candidate_probs is None or mass <= 0:
        return LetterReadout(raw, mass, {}, None, None)
    renorm = {k: v / mass for k, v in raw.items()}
    answer = max(offered, key=lambda k: renorm[k])
    content = sum(raw[k] for k in letters)
    confidence = max(raw[k] for k in letters) / content if content > 0 else None
    return LetterReadout(raw, mass, renorm, answer, confidence)


# ---------------------------------------------------------------------------------------------
# Verbalized answers and confidences

_ANSWER = re.compile(r"answer\s*[:=\-]?\s*\(?\s*([A-Z])\b", re.IGNORECASE)
_LEADING_LETTER = re.compile(r"^\s*\(?([A-Z])[\).:\s]")
_NUMBER = r"(?P<num>\d+(?:\.\d+)?|\.\d+)"
_UNIT = (
    r"(?P<unit>\s*%|\s*percent\b|\s*/\s*100\b|\s*/\s*10\b|\s+out\s+of\s+100\b|\s+out\s+of\s+10\b)?"
)
#: "Confidence: 85", "confidence level is 90%", "Confidence score = 7/10", "confidence of 0.85"
_CONFIDENCE = re.compile(
    r"confidence\s*(?:level|score)?\s*(?:is|of|[:=\-])?\s*(?:about|around|approximately|~)?\s*"
    + _NUMBER
    + _UNIT,
    re.IGNORECASE,
)
#: "I am 90% confident", "80 percent sure", "7 out of 10 certain"
_CONFIDENT = re.compile(
    r"(?<![\w.])" + _NUMBER + _UNIT + r"\s+(?:confident|sure|certain)\b", re.IGNORECASE
)
_SCALES = (1.0, 10.0, 100.0)


def _confidence_value(num: str, unit: str | None, scale: float) -> float | None:
    value = float(num)
    u = re.sub(r"\s+", "", (unit or "").lower())
    if u in ("%", "percent", "/100", "outof100"):
        top, fraction = 100.0, False
    elif u in ("/10", "outof10"):
        top, fraction = 10.0, False
    else:
        top = scale
        # a decimal in [0, 1] on a 0-100 prompt is a probability ("0.85" means 85 %)
        fraction = scale == 100.0 and "." in num and value <= 1.0
    if fraction:
        return value
    if not 0.0 <= value <= top:
        return None
    return value / top


def parse_confidence(text: str, scale: float = 100.0) -> float | None:
    """The stated confidence in ``text`` as a number in [0, 1], or None when none is stated.

    ``scale`` is the range the prompt asked for (100, 10 or 1). What the reply says wins over
    the prompt: ``85%``, ``85 percent``, ``85/100`` and ``85 out of 100`` are read on 0-100,
    ``7/10`` and ``7 out of 10`` on 0-10. A bare number is read on the prompt's scale, with one
    exception: **on a 0-100 prompt a number with a decimal point in [0, 1] (``0.85``, ``1.0``)
    is read as a probability** (0.85, 1.0), because a model that writes ``0.85`` when asked
    for 0-100 means 85 %, not 0.85 % — while a bare ``1`` stays 1 %. Numbers outside the scale
    (``150``, ``12/10``) and words without a number (``"very high"``) are unparsed (None):
    an unparseable reply is stored as such, never guessed. The first confidence statement
    wins; ``Confidence: <n>`` statements are preferred over ``<n>% sure`` phrasings.
    """
    if scale not in _SCALES:
        raise InputError(f"confidence scale must be one of {_SCALES}, got {scale!r}")
    for pattern in (_CONFIDENCE, _CONFIDENT):
        m = pattern.search(text)
        if m:
            return _confidence_value(m.group("num"), m.group("unit"), scale)
    return None


def parse_verbalized(
    text: str, letters: Sequence[str], *, scale: float = 100.0
) -> tuple[str | None, float | None]:
    """``(letter, confidence in [0, 1])`` from a verbalized reply; each None when absent.

    The letter is the one after ``Answer:`` (or a reply that starts with a letter) when it is
    one of ``letters``; the confidence is :func:`parse_confidence` on the prompt's ``scale``
    (0-100 by default, the scale of the versioned verbalized prompts).
    """
    letter = None
    m = _ANSWER.search(text) or _LEADING_LETTER.search(text)
    if m and m.group(1).upper() in letters:
        letter = m.group(1).upper()
    return letter, parse_confidence(text, scale)


def _words(text: str) -> str:
    """Lower-case words separated by single spaces; apostrophes (straight or curly) dropped
    so ``don't``, ``don’t`` and ``dont`` compare equal."""
    text = re.sub(r"['\u2019\u2018`]", "", text.lower())
    return " ".join(re.findall(r"[a-z0-9]+", text))


def detect_abstention(
    text: str,
    letters: Sequence[str],
    abstain_letter: str | None,
    abstain_text: str | None = None,
) -> bool:
    """Whether a free-text reply abstains.

    True when the parsed answer letter (:func:`parse_verbalized`) is ``abstain_letter``, or —
    only when the reply names no offered letter — when it contains the abstain option's own
    words (``abstain_text``, e.g. "I don't know"), compared as whole words, case, punctuation
    and apostrophes ignored. A reply that names a content letter has answered, whatever else
    it says; with neither an abstain letter nor an abstain text nothing counts as abstaining.
    """
    letter, _ = parse_verbalized(text, letters)
    if letter is not None:
        return abstain_letter is not None and letter == abstain_letter
    if not abstain_text:
        return False
    needle = _words(abstain_text)
    return bool(needle) and f" {needle} " in f" {_words(text)} "


# ---------------------------------------------------------------------------------------------
# A sweep item's read-outs


class SweepReadouts(TypedDict):
    """The read-outs of one answer to a sweep question, as its record stores them.

    ``answer``: the chosen letter (None: no answer could be read); ``abstained``: it is the
    abstain letter; ``correct``: it is the right one. A letter wording fills
    ``internal_conf``, ``letter_mass`` (the offered letters' total probability) and
    ``letter_probs`` (their raw probabilities); a verbalized one ``verbal_conf`` and
    ``verbal_parsed`` (a confidence could be read). ``chance`` is 1/k and ``n_options`` k,
    the content options' number.
    """

    chance: float
    n_options: int
    answer: str | None
    internal_conf: float | None
    verbal_conf: float | None
    letter_mass: float | None
    verbal_parsed: NotRequired[bool]
    letter_probs: NotRequired[dict[str, float]]
    abstained: bool
    correct: bool


class VeqReadouts(TypedDict):
    """A V_eq record (kind ``sweep.veq``): the gain-matched equivalent visibility in metres of
    one scene at one ImageNet-C severity, the retained contrast gain it matches (``gain``,
    left out by runs made before it was stored) and the detail the corruption added (``added``:
    :attr:`clearsight.physics.Equivalence.added`, left out by runs made before it was stored)."""

    v_eq_m: float
    gain: NotRequired[float]
    added: NotRequired[float]


class DepthReadouts(TypedDict):
    """A depth record (kind ``sweep.depth``): the scene's
    :class:`~clearsight.scenes.depth.DepthProfile` as stored."""

    median_m: float
    q25_m: float
    q75_m: float
    near_share: float
    far_share: float


def sweep_readouts(q: Question, raw: Mapping[str, Any]) -> SweepReadouts:
    """Answer, correctness, abstention and confidences of one answer to ``q``, from its raw
    output (a verbalized wording reads the first generated text, a letter wording the
    candidate probabilities: :func:`parse_verbalized`, :func:`letter_readout`)."""
    if q.readout == "verbalized":
        texts = raw.get("texts") or [""]
        answer, conf = parse_verbalized(texts[0], q.letters)
        return {
            "chance": q.chance,
            "n_options": len(q.answer_letters),
            "answer": answer,
            "verbal_conf": conf,
            "internal_conf": None,
            "letter_mass": None,
            "verbal_parsed": conf is not None,
            "abstained": answer is not None and answer == q.abstain,
            "correct": answer == q.correct,
        }
    lr = letter_readout(raw.get("candidate_probs"), q.answer_letters, q.abstain)
    return {
        "chance": q.chance,
        "n_options": len(q.answer_letters),
        "answer": lr.answer,
        "internal_conf": lr.confidence,
        "verbal_conf": None,
        "letter_mass": lr.mass,
        "letter_probs": lr.raw,
        "abstained": lr.answer is not None and lr.answer == q.abstain,
        "correct": lr.answer == q.correct,
    }
