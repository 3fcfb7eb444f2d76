"""The numerals 0..10 as trajectory grounding's 11-way confidence distribution (docs/methods.md §5):
multi-token numerals scored as whole sequences, and the expected confidence
``E = sum_k p_k k/10``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clearsight.validate import InputError

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


def _complete_probabilities(
    sequence_probs: Mapping[str, float], ends: Mapping[str, float], candidates: Sequence[str]
) -> list[float]:
    """Per candidate, the probability of its tokens times ``p(end | s)`` where given: the
    probability the answer is exactly that candidate. InputError for a candidate that is a
    prefix of another, has mass and no end probability (its mass would include the longer
    one's)."""
    raw: list[float] = []
    for s in candidates:
        p = _probability(sequence_probs.get(s, 0.0), f"sequence probability of {s!r}")
        is_prefix = any(t != s and t.startswith(s) for t in candidates)
        if s in ends:
            p *= _probability(ends[s], f"end probability of {s!r}")
        elif is_prefix and p > 0:
            longer = [t for t in candidates if t != s and t.startswith(s)]
            raise InputError(
                f"numeral {s!r} is a prefix of {longer}: give end_probs[{s!r}] = p(end | {s!r}) "
                "so its probability excludes the longer numerals (docs/methods.md §5)"
            )
        raw.append(p)
    return raw


def numeral_distribution(
    sequence_probs: Mapping[str, float],
    end_probs: Mapping[str, float] | None = None,
    candidates: Sequence[str] = NUMERALS,
    values: Sequence[float] | None = None,
) -> NumeralReadout:
    """The numerals 0..10 as an 11-way distribution (docs/methods.md §5), from what a backend
    scores.

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

    ``candidates`` / ``values``: another read-out's strings and the confidence each stands for
    (the calibration read-outs of :mod:`clearsight.grounding.confidence.methods`: ConfTuner's 0-9,
    RLCR's decimals, True/False), the same rules applied; ``E = sum_k p_k values[k]``
    (default: the numerals 0..10 at k/10).
    """
    vals = [k / 10 for k in range(len(candidates))] if values is None else list(values)
    if len(vals) != len(candidates):
        raise InputError(f"{len(vals)} values for {len(candidates)} candidates")
    ends = dict(end_probs or {})
    unknown = sorted(set(ends) - set(candidates))
    if unknown:
        what = "numerals 0..10" if tuple(candidates) == NUMERALS else "candidates"
        raise InputError(f"end_probs has keys that are not {what}: {unknown}")
    raw = _complete_probabilities(sequence_probs, ends, candidates)
    mass = sum(raw)
    if mass <= 0:
        return NumeralReadout(tuple(raw), 0.0, None, None)
    probs = tuple(p / mass for p in raw)
    expected = sum(p * v for p, v in zip(probs, vals, strict=True))
    return NumeralReadout(tuple(raw), mass, probs, expected)
