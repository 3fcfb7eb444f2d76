"""Read-outs: what a raw model response says, computed from the stored raw output alone.

Kept apart from the backends (lm-evaluation-harness style) so a run can be re-scored without
calling a model again. METHODS.md §3 and §5:

* **Letter probabilities** (:func:`letter_readout`). The next-token distribution at the answer
  position restricted to the offered letters: the raw probabilities and their total mass are
  kept; renormalised over every offered letter (abstain included) the argmax is the answer; the
  *internal confidence* is the largest probability renormalised over the content options only
  (the model's belief in its best answer, kept separate from the abstention signal).
* **Candidates from top-k log-probabilities** (:func:`candidate_probs_from_top_logprobs`). What
  an API backend can see of that distribution: the top-k tokens. Candidates are matched on the
  token text with whitespace stripped (``"A"`` and ``" A"`` both count for ``A``); a candidate
  outside the top-k gets 0 and the mass the top-k does not cover is *recorded* as
  ``uncovered_mass``, never spread over the candidates.
* **Verbalized confidence** (:func:`parse_verbalized`, :func:`parse_confidence`). ``Answer:
  <letter>`` and ``Confidence: <number>`` parsed from the reply; a reply without a number is
  stored as unparsed (None), never guessed. Scales: see :func:`parse_confidence`.
* **Abstention from text** (:func:`detect_abstention`): the abstain letter as the answer, or
  the abstain option's own words in a reply that names no letter.
* **Numerals 0..10** (:func:`numeral_distribution`): the 11-way confidence distribution of
  trajectory grounding, with multi-token numerals scored as whole sequences, and its expected
  confidence ``E = sum_k p_k k/10``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

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
    answer (``None``), which the metrics count as not correct.
    """
    offered = [*letters, *([abstain_letter] if abstain_letter else [])]
    raw = {letter: float((candidate_probs or {}).get(letter, 0.0)) for letter in offered}
    if any(v < 0 for v in raw.values()):
        raise InputError(f"negative candidate probability in {raw}")
    mass = sum(raw.values())
    if candidate_probs is None or mass <= 0:
        return LetterReadout(raw, mass, {}, None, None)
    renorm = {k: v / mass for k, v in raw.items()}
    answer = max(offered, key=lambda k: renorm[k])
    content = sum(raw[k] for k in letters)
    confidence = max(raw[k] for k in letters) / content if content > 0 else None
    return LetterReadout(raw, mass, renorm, answer, confidence)


# ---------------------------------------------------------------------------------------------
# Candidate probabilities from a top-k list

#: Word-boundary markers some tokenizers leave in token strings (SentencePiece ``▁``, byte-level
#: BPE ``Ġ``); servers normally decode them to a space, but a raw token list may still hold them.
_TOKEN_MARKERS = "\u2581\u0120"
#: How far above 1 a top-k list may sum before it is rejected as not one distribution's
#: log-probabilities (float32 log-softmax rounding stays far below this).
_MASS_SLACK = 1e-3


def token_text(token: str) -> str:
    """The text a token stands for when matched against a candidate: whitespace and
    word-boundary markers stripped, case kept (``"a"`` the article is not option ``A``)."""
    return token.strip().strip(_TOKEN_MARKERS).strip()


def candidate_probs_from_top_logprobs(
    top: Iterable[tuple[str, float]], candidates: Sequence[str]
) -> tuple[dict[str, float], float]:
    """``(candidate probabilities, uncovered mass)`` from one position's top-k log-probabilities.

    ``top`` holds ``(token text, log-probability)`` for distinct tokens (the top-k, possibly
    plus the sampled token). A candidate's probability is the sum of ``exp(logprob)`` over the
    tokens whose :func:`token_text` equals the candidate's (so ``"A"`` and ``" A"`` add up);
    a candidate among none of them gets 0. The uncovered mass ``1 - sum(exp(logprob))`` is the
    probability of every token the list does not show — some of it may belong to a candidate,
    so it is recorded for the analysis and never spread over the candidates. A candidate is
    matched as one token: a candidate that spans several tokens is not scored here.
    """
    wanted = {c: token_text(c) for c in candidates}
    probs = dict.fromkeys(candidates, 0.0)
    covered = 0.0
    for token, logprob in top:
        lp = float(logprob)
        if math.isnan(lp) or lp > 1e-6:
            raise InputError(f"log-probability of token {token!r} must be <= 0, got {logprob!r}")
        p = math.exp(lp)
        covered += p
        text = token_text(token)
        for cand, cand_text in wanted.items():
            if text == cand_text:
                probs[cand] += p
    if covered > 1 + _MASS_SLACK:
        raise InputError(
            f"top-k probabilities sum to {covered:.6f} > 1: not the log-probabilities of one "
            "next-token distribution"
        )
    return probs, max(0.0, 1.0 - covered)


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
# Numerals 0..10 (METHODS.md §5)

#: The confidence numerals of trajectory grounding, in order: index k is the numeral k.
NUMERALS: tuple[str, ...] = tuple(str(k) for k in range(11))


@dataclass(frozen=True)
class NumeralReadout:
    """The 11-way confidence distribution over the numerals 0..10.

    ``raw[k]``: the probability of numeral k as a whole (sequence times end probability),
    before renormalisation; ``mass``: their sum (how much of the model's belief is on a
    numeral at all); ``probs``: ``raw`` renormalised over the 11, and ``expected``
    ``E = sum_k probs[k] k/10`` — both None when ``mass`` is 0.
    """

    raw: tuple[float, ...]
    mass: float
    probs: tuple[float, ...] | None
    expected: float | None


def _probability(value: object, what: str) -> float:
    try:
        p = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} must be a probability, got {value!r}") from exc
    if not 0.0 <= p <= 1.0:  # also rejects NaN
        raise InputError(f"{what} must be a probability in [0, 1], got {value!r}")
    return p


def numeral_distribution(
    sequence_probs: Mapping[str, float],
    end_probs: Mapping[str, float] | None = None,
) -> NumeralReadout:
    """The numerals 0..10 as an 11-way distribution (METHODS.md §5), from what a backend scores.

    ``sequence_probs[s]``: the probability of the tokens of numeral ``s`` as a sequence at the
    confidence slot, ``p(t1) p(t2 | t1) ...`` (``p("10") = p("1") p("0" | "1")`` in a tokenizer
    that splits digits; one token's probability where ``s`` is one token). A numeral missing
    from the mapping has probability 0 (e.g. outside a top-k list). Other keys are ignored, so a
    backend's ``candidate_probs`` can be passed as they are.

    ``end_probs[s]``: ``p(end | s)``, the probability that the numeral is complete after its
    tokens (the next token does not extend it). It is **required** for every numeral that is a
    string prefix of another numeral — ``"1"`` of ``"10"`` — since otherwise ``p("1")`` would
    include the mass of ``"10"``: ``p("1") = p("1") p(end | "1")``. Where given for other
    numerals it is applied too (``"7"`` not followed by a digit).

    Example: ``p("1") = 0.5``, ``p("0" | "1") = 0.4`` so ``sequence_probs["10"] = 0.2`` and
    ``end_probs["1"] = 0.6``; with ``p("9") = 0.2`` and nothing else the raw values are
    ``p_1 = 0.3, p_9 = 0.2, p_10 = 0.2`` (mass 0.7) and ``E = (0.3 .1 + 0.2 .9 + 0.2 1)/0.7``.
    """
    ends = dict(end_probs or {})
    unknown = sorted(set(ends) - set(NUMERALS))
    if unknown:
        raise InputError(f"end_probs has keys that are not numerals 0..10: {unknown}")
    raw: list[float] = []
    for s in NUMERALS:
        p = _probability(sequence_probs.get(s, 0.0), f"sequence probability of {s!r}")
        is_prefix = any(t != s and t.startswith(s) for t in NUMERALS)
        if s in ends:
            p *= _probability(ends[s], f"end probability of {s!r}")
        elif is_prefix and p > 0:
            longer = [t for t in NUMERALS if t != s and t.startswith(s)]
            raise InputError(
                f"numeral {s!r} is a prefix of {longer}: give end_probs[{s!r}] = p(end | {s!r}) "
                "so its probability excludes the longer numerals (METHODS.md §5)"
            )
        raw.append(p)
    mass = sum(raw)
    if mass <= 0:
        return NumeralReadout(tuple(raw), 0.0, None, None)
    probs = tuple(p / mass for p in raw)
    expected = sum(p * k / 10 for k, p in enumerate(probs))
    return NumeralReadout(tuple(raw), mass, probs, expected)
