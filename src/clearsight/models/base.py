"""What every model backend speaks: chat requests in, raw responses out, capabilities declared.

A backend has one method, :meth:`Backend.complete`, taking a batch of :class:`Request` and
returning one :class:`Response` each. A request says what it needs — generated texts, ``n``
samples, top-k log-probabilities, the next-token probabilities of candidate strings at the
answer position — and a backend fills what it can; its :class:`Capabilities` say which, so a
protocol that needs one a backend lacks fails before the run starts (:func:`require`).
Responses are raw model output, kept apart from how they are scored (``clearsight.sweep.readouts``),
and serialise to JSON for the run store.

A backend with the ``attention_mask`` capability is also a :class:`MaskedScorer`: its
:meth:`~MaskedScorer.score_hidden` scores candidates at the end of a conversation with parts of
the last message hidden from them, positions kept (trajectory grounding's confidence read-out;
:func:`masked_scorer` checks a backend offers it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Final, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from clearsight.validate import InputError

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class TextPart:
    """A piece of text in a chat message."""

    text: str


@dataclass(frozen=True, eq=False)
class ImagePart:
    """An image in a chat message: uint8 HxWx3 sRGB pixels (never written to the store)."""

    image: npt.NDArray[np.uint8]


@dataclass(frozen=True)
class Message:
    """One chat turn: a role and its parts in order."""

    role: Role
    content: tuple[TextPart | ImagePart, ...]

    @staticmethod
    def user(*parts: str | npt.NDArray[np.uint8]) -> Message:
        """A user turn from strings and images, in order."""
        return Message(
            "user", tuple(TextPart(p) if isinstance(p, str) else ImagePart(p) for p in parts)
        )

    @property
    def text(self) -> str:
        """The message's text parts joined (images dropped)."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def images(self) -> list[npt.NDArray[np.uint8]]:
        return [p.image for p in self.content if isinstance(p, ImagePart)]


@dataclass(frozen=True)
class Decoding:
    """How to decode: greedy by default, because read-outs must be reproducible."""

    max_new_tokens: int = 16
    temperature: float = 0.0
    top_p: float = 1.0
    top_logprobs: int = 0
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.max_new_tokens < 0:
            raise InputError(f"max_new_tokens must be >= 0, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise InputError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise InputError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_logprobs < 0:
            raise InputError(f"top_logprobs must be >= 0, got {self.top_logprobs}")


@dataclass(frozen=True, eq=False)
class Request:
    """One model call.

    ``candidates``: strings whose probability as the continuation right after the prompt (the
    answer position) is wanted, e.g. option letters; backends that can score them fill
    :attr:`Response.candidate_probs`. ``generate=False`` asks only for those probabilities.

    ``reference``: what a protocol lets a *reference* backend know about the item beyond the
    prompt (the sweep's :class:`~clearsight.sweep.references.observer.ObserverReference`: the clean
    image, the box, which option names the object in it). It is opaque here on purpose — this module
    knows no protocol's types: every real backend ignores it, never renders it into a prompt,
    and a backend that reads one (the sweep's reference observer, the visibility guard) checks
    its type with ``isinstance`` and refuses a request without the one it reads.
    """

    messages: tuple[Message, ...]
    decoding: Decoding = field(default_factory=Decoding)
    n: int = 1
    candidates: tuple[str, ...] = ()
    generate: bool = True
    reference: object | None = None

    def __post_init__(self) -> None:
        if not self.messages:
            raise InputError("a request needs at least one message")
        if self.n < 1:
            raise InputError(f"n must be >= 1, got {self.n}")
        if not self.generate and not self.candidates:
            raise InputError(
                "a request that does not generate must ask for candidate probabilities"
            )


@dataclass(frozen=True)
class TokenLogprob:
    """A generated token, its log-probability and the top-k alternatives at its position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Response:
    """Raw output of one request.

    ``texts``: the ``n`` generated samples (empty when nothing was generated).
    ``token_logprobs``: per sample, per generated token, where the backend provides them.
    ``candidate_probs``: raw next-token (or sequence) probability of each requested candidate,
    *not* renormalised; a backend that cannot see some of the mass (top-k only) records it in
    ``uncovered_mass`` instead of inventing it. Protocols read a response only after
    :func:`clearsight.models.replies.checked_reply` has checked it against this contract.
    """

    texts: tuple[str, ...] = ()
    token_logprobs: tuple[tuple[TokenLogprob, ...], ...] | None = None
    candidate_probs: Mapping[str, float] | None = None
    uncovered_mass: float | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    extra: Mapping[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """A JSON-able dict of everything in the response (what the store keeps as raw)."""
        out = asdict(self)
        out["candidate_probs"] = (
            None if self.candidate_probs is None else dict(self.candidate_probs)
        )
        return out


class RequestFailedError(RuntimeError):
    """One request that failed for good; ``reason`` says why, ``attempts`` how often it was
    tried."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(f"{reason} (after {attempts} attempt{'s' if attempts != 1 else ''})")
        self.reason = reason
        self.attempts = attempts


class PartialBatchError(RuntimeError):
    """Some requests of a batch failed. ``results[i]`` is request i's :class:`Response` or its
    :class:`RequestFailedError`, so a caller can keep the successes without redoing them."""

    def __init__(self, results: Sequence[Response | RequestFailedError]) -> None:
        self.results = list(results)
        failed = [(i, r) for i, r in enumerate(self.results) if isinstance(r, RequestFailedError)]
        shown = "; ".join(f"request {i}: {r}" for i, r in failed[:3])
        more = f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
        super().__init__(f"{len(failed)} of {len(self.results)} requests failed: {shown}{more}")


@dataclass(frozen=True)
class Capabilities:
    """What a backend can fill in a :class:`Response`."""

    images: bool = False
    generate: bool = True
    candidate_probs: bool = False
    top_logprobs: bool = False
    n_per_call: bool = False
    attention_mask: bool = False

    def missing(self, needed: Capabilities) -> list[str]:
        """Names of the capabilities ``needed`` asks for that this backend lacks."""
        have, want = asdict(self), asdict(needed)
        return [k for k, v in want.items() if v and not have[k]]


#: What a model behind an inference engine offers (vLLM in this process, or any OpenAI-compatible
#: server): images, generation, candidate probabilities read from top-k log-probabilities and n
#: samples a call; no custom attention mask (masked scoring needs the model's own forward pass).
ENGINE_CAPABILITIES: Final = Capabilities(
    images=True,
    generate=True,
    candidate_probs=True,
    top_logprobs=True,
    n_per_call=True,
    attention_mask=False,
)


@runtime_checkable
class Backend(Protocol):
    """A model: a name, its capabilities, and one batched call.

    A backend that talks to a server may also have ``preflight(needs: Capabilities) -> None``:
    one cheap request that raises InputError when the server cannot serve the run (the driver
    calls it before anything is created, :func:`clearsight.driver.check_models`)."""

    name: str
    capabilities: Capabilities

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        """One response per request, in order. A backend may batch them internally."""
        ...


def require(backend: Backend, needed: Capabilities, purpose: str) -> None:
    """Fail early, before a run starts, if ``backend`` lacks what ``purpose`` needs; a backend
    that says why it lacks a capability (a ``lacking`` dict: capability -> reason) is quoted."""
    missing = backend.capabilities.missing(needed)
    if missing:
        why: dict[str, str] = getattr(backend, "lacking", {})
        named = [f"{m} ({why[m]})" if m in why else m for m in missing]
        raise InputError(
            f"model {backend.name!r} cannot be used for {purpose}: it lacks {', '.join(named)}"
        )


# --------------------------------------------------------------------------------------------
# Masked scoring: candidates scored with parts of the conversation hidden (the attention_mask
# capability)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class HiddenRequest:
    """Candidates scored right after a conversation, with parts of its last message hidden.

    ``messages``: the conversation; its last message (an assistant turn, continued) ends at the
    *slot*, where every candidate is scored. ``candidates`` are scored **in context**: each as
    the tokens that ``prompt + candidate`` adds to the rendered prompt, so whatever a tokenizer
    does with a space before the candidate is respected (unlike
    :attr:`Response.candidate_probs`, which sums a candidate's standalone spellings).
    ``hide``: character ranges ``[start, end)`` of the last message's text; the tokens they
    overlap are removed from the attention of every later position, the slot and the
    candidates' own tokens included, while every position is kept. ``share``: the share of
    those tokens hidden (1 = all; trajectory grounding's masking curve), a subset drawn by a
    generator seeded from ``seed`` and ``share``.
    """

    messages: tuple[Message, ...]
    candidates: tuple[str, ...]
    hide: tuple[tuple[int, int], ...] = ()
    share: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.messages:
            raise InputError("a masked-scoring request needs at least one message")
        if not self.candidates:
            raise InputError("a masked-scoring request needs candidates to score")
        if not 0.0 <= self.share <= 1.0:
            raise InputError(f"share of hidden tokens must be in [0, 1], got {self.share}")


@dataclass(frozen=True)
class HiddenScores:
    """What masked scoring gives for one :class:`HiddenRequest` (raw model output).

    ``sequence_probs[c]``: the probability of candidate ``c``'s tokens at the slot, ``p(t1) p(t2 |
    t1) ...``, not renormalised. ``end_probs[c]``, for each candidate that is a string prefix of
    another (``"1"`` of ``"10"``): ``p(end | c)``, one minus the probability of the next tokens that
    continue ``c``'s tokens into a longer candidate's (1 where no longer candidate's tokens continue
    them) — what :func:`clearsight.grounding.confidence.numerals.numeral_distribution` needs so that
    ``"1"`` does not count the mass of ``"10"``. ``candidate_tokens``: each candidate's tokens in
    context, in the request's order; ``hidden_tokens``: how many tokens were hidden;
    ``prompt_tokens``: the prompt's length in tokens; ``top_tokens``: the most likely tokens at the
    slot with their probabilities.
    """

    sequence_probs: Mapping[str, float]
    end_probs: Mapping[str, float]
    candidate_tokens: tuple[tuple[int, ...], ...] = ()
    hidden_tokens: int = 0
    prompt_tokens: int = 0
    top_tokens: tuple[tuple[str, float], ...] = ()


@runtime_checkable
class MaskedScorer(Backend, Protocol):
    """A backend that scores candidates with parts of the prompt hidden from them: what the
    ``attention_mask`` capability declares (trajectory grounding's confidence read-out)."""

    def score_hidden(
        self, requests: Sequence[HiddenRequest], batch_size: int | None = None
    ) -> list[HiddenScores | RequestFailedError]:
        """One result per request, in order: its scores, or the reason it cannot be scored
        (that request fails alone). ``batch_size``: rows per forward pass (None: the
        backend's own)."""
        ...


def masked_scorer(backend: Backend, purpose: str) -> MaskedScorer:
    """``backend`` as a :class:`MaskedScorer`; InputError when it lacks the ``attention_mask``
    capability (with its reason, as :func:`require` says it) or does not offer masked scoring
    although it declares the capability (a wrapper that hands on its inner capabilities)."""
    require(backend, Capabilities(attention_mask=True), purpose)
    if not isinstance(backend, MaskedScorer):
        raise InputError(
            f"model {backend.name!r} cannot be used for {purpose}: it declares attention_mask "
            "but offers no masked scoring (score_hidden)"
        )
    return backend
