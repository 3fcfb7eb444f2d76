"""Confidence elicitation: the 11-way numeral distribution at the confidence slot, one pass.

A request is a conversation whose last (assistant) turn is a trajectory that ends exactly at the
confidence slot ("... Confidence (0-10): "). The read-out (docs/methods.md §5) is the distribution
over the numerals 0..10 as whole sequences at that slot,

    p("k") = p(t1) p(t2 | t1) ... p(tm | t1..tm-1)   [ x p(end | "k") where "k" prefixes another ]

renormalised over the 11 (:func:`clearsight.grounding.confidence.numerals.numeral_distribution`),
and the expected confidence ``E = sum_k p_k k/10``.

The model's side is the backend's masked scoring (:class:`~clearsight.models.base.MaskedScorer`,
the ``attention_mask`` capability): each request goes to it as a
:class:`~clearsight.models.base.HiddenRequest` — the numerals scored in context at the slot, the
request's character ranges of the trajectory hidden (a share of their tokens, drawn from the
request's seed) from every later position with positions kept, one forward pass per request
(:mod:`clearsight.models.hf_hidden` for the ``hf`` backend). This module turns the sequence and
end probabilities it returns into the numeral distribution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clearsight.grounding.confidence.numerals import NUMERALS, numeral_distribution
from clearsight.models.base import (
    HiddenRequest,
    HiddenScores,
    MaskedScorer,
    Message,
    RequestFailedError,
)
from clearsight.validate import InputError

Seq = tuple[int, ...]


@dataclass(frozen=True)
class ElicitRequest:
    """One elicitation.

    ``messages``: the conversation; its last message is the assistant's trajectory ending at the
    confidence slot. ``hide``: character ranges ``[start, end)`` *of that last message's text*
    whose tokens are hidden from every later position. ``share``: the share of those tokens
    hidden (1 = all; the masking curve's r), drawn with a generator seeded from ``seed``.
    """

    messages: tuple[Message, ...]
    hide: tuple[tuple[int, int], ...] = ()
    share: float = 1.0
    seed: int = 0
    candidates: tuple[str, ...] = NUMERALS
    """The strings scored at the slot (a calibration read-out's own: 0-9, True/False, ...)."""
    values: tuple[float, ...] | None = None
    """The confidence each candidate stands for (default k/10 for the numerals 0..10)."""

    def __post_init__(self) -> None:
        if not self.messages or self.messages[-1].role != "assistant":
            raise InputError("an elicitation ends with the assistant's trajectory message")
        if not 0.0 <= self.share <= 1.0:
            raise InputError(f"share of hidden tokens must be in [0, 1], got {self.share}")

    @property
    def hidden(self) -> HiddenRequest:
        """The request as the backend's masked scoring takes it."""
        return HiddenRequest(self.messages, self.candidates, self.hide, self.share, self.seed)


@dataclass(frozen=True)
class Elicited:
    """The read-out of one request: ``raw``/``mass``/``probs``/``expected`` as in
    :class:`clearsight.sweep.readouts.NumeralReadout`, the numerals' in-context token sequences, how
    many tokens were hidden, the prompt length, and the most likely tokens at the slot. ``raw``
    and ``probs`` are over the request's candidates, in its order."""

    raw: tuple[float, ...]
    mass: float
    probs: tuple[float, ...] | None
    expected: float | None
    numeral_tokens: tuple[Seq, ...]
    hidden_tokens: int
    prompt_tokens: int
    top_tokens: tuple[tuple[str, float], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """JSON-able raw output for the store."""
        return {
            "raw": list(self.raw),
            "mass": self.mass,
            "probs": None if self.probs is None else list(self.probs),
            "expected": self.expected,
            "numeral_tokens": [list(s) for s in self.numeral_tokens],
            "hidden_tokens": self.hidden_tokens,
            "prompt_tokens": self.prompt_tokens,
            "top_tokens": [list(t) for t in self.top_tokens],
        }


@dataclass(frozen=True)
class ElicitFailure:
    """A request that cannot be elicited, with the reason (stored as a failed record)."""

    reason: str


def elicit(
    backend: MaskedScorer, requests: Sequence[ElicitRequest], batch_size: int | None = None
) -> list[Elicited | ElicitFailure]:
    """The numeral read-out of each request; a request that cannot be read fails alone.

    Requests are run ``batch_size`` (default: the backend's) to a forward call, each as one row.
    """
    scored = backend.score_hidden([er.hidden for er in requests], batch_size)
    return [
        ElicitFailure(s.reason) if isinstance(s, RequestFailedError) else elicited(er, s)
        for er, s in zip(requests, scored, strict=True)
    ]


def elicited(er: ElicitRequest, scores: HiddenScores) -> Elicited | ElicitFailure:
    """The numeral distribution of ``er`` from the backend's ``scores``, or why the model's
    numbers cannot be read (that item fails alone, with the reason)."""
    try:
        r = numeral_distribution(scores.sequence_probs, scores.end_probs, er.candidates, er.values)
    except InputError as exc:
        return ElicitFailure(f"unreadable output of the model: {exc}")
    return Elicited(
        raw=r.raw,
        mass=r.mass,
        probs=r.probs,
        expected=r.expected,
        numeral_tokens=scores.candidate_tokens,
        hidden_tokens=scores.hidden_tokens,
        prompt_tokens=scores.prompt_tokens,
        top_tokens=scores.top_tokens,
    )
