"""Read-outs: what a raw model response says, computed from the stored raw output alone.

Kept apart from the backends (lm-evaluation-harness style) so a run can be re-scored without
calling a model again. METHODS.md §3:

* **Letter probabilities.** The next-token distribution at the answer position restricted to
  the offered letters: the raw probabilities and their total mass are kept; renormalised over
  every offered letter (abstain included) the argmax is the answer; the *internal confidence* is
  the largest probability renormalised over the content options only (the model's belief in its
  best answer, kept separate from the abstention signal).
* **Verbalized confidence.** ``Answer: <letter>`` and ``Confidence: <number>`` parsed from the
  reply; a reply without a number is stored as unparsed (None), never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clearsight.validate import InputError


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


_ANSWER = re.compile(r"answer\s*[:=\-]?\s*\(?\s*([A-Z])\b", re.IGNORECASE)
_LEADING_LETTER = re.compile(r"^\s*\(?([A-Z])[\).:\s]")
_CONFIDENCE = re.compile(
    r"confidence\s*(?:level|score)?\s*(?:is|of|[:=\-])?\s*(\d+(?:\.\d+)?)\s*(%|/\s*100|/\s*10)?",
    re.IGNORECASE,
)


def parse_verbalized(text: str, letters: Sequence[str]) -> tuple[str | None, float | None]:
    """``(letter, confidence in [0, 1])`` from a verbalized reply; each None when absent.

    The confidence is read on the 0-100 scale the prompt asks for (``/10`` or a value marked
    ``/10`` is read on 0-10); numbers outside the scale stay unparsed.
    """
    letter = None
    m = _ANSWER.search(text) or _LEADING_LETTER.search(text)
    if m and m.group(1).upper() in letters:
        letter = m.group(1).upper()
    confidence = None
    c = _CONFIDENCE.search(text)
    if c:
        value = float(c.group(1))
        scale = 10.0 if (c.group(2) or "").replace(" ", "") == "/10" else 100.0
        if 0 <= value <= scale:
            confidence = value / scale
    return letter, confidence
