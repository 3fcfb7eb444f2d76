"""The blind reasoner's loop: turns until a commit, the budget, the context or a failure.

docs/methods.md §6. The reasoner (any text backend, e.g. the embedded ``hf:smollm2-135m``)
sees the question, the options and the history of (query, reply, u); each turn its strategy
(:mod:`clearsight.probe.strategies`, looked up by the name in :class:`LoopSettings`) takes one
turn: it asks the sensor a query, commits to a letter, or writes something neither (recorded,
answered with a nudge, counted against the budget). The loop knows no strategy by name; Direct
has no reasoner and no loop (:func:`~clearsight.probe.strategies.direct.run_direct`).

**Outcomes:** ``committed``; ``budget`` after T turns without a commit (the last turn carries
an explicit "answer now"); ``context`` when the history no longer fits ``context_chars`` even
after old turns are compacted to their queries, or the backend rejects the prompt as too long;
``error`` when the reasoner itself fails. A sensor failure is part of the history, not an end.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from pydantic import JsonValue

from clearsight.execute import progress
from clearsight.probe.instances import Instance
from clearsight.probe.reasoner.prompts import chat
from clearsight.probe.reasoner.uot_search import SearchSettings
from clearsight.probe.sensor import Sensor
from clearsight.probe.specs import SIGNALS, Signal
from clearsight.probe.strategies import conversing
from clearsight.probe.strategies.base import Conversing, Streams, Talk
from clearsight.probe.transcript import Transcript, Turn
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Backend, Message, Request, Response


@dataclass(frozen=True)
class LoopSettings:
    """How one conversation runs: strategy, budget T, consistency signal shown, decoding of
    the reasoner, the context limit (characters of the whole prompt) and, for a searching
    strategy, its settings (None: the defaults)."""

    strategy: str = "bp"
    budget: int = 100
    signal: Signal = "true"
    temperature: float = 1.0
    max_new_tokens: int = 128
    context_chars: int = 24_000
    search: SearchSettings | None = None

    def __post_init__(self) -> None:
        """Reject settings the loop cannot run."""
        conversing(self.strategy)
        if self.budget < 1:
            raise InputError(f"the budget T must be >= 1, got {self.budget}")
        if self.signal not in SIGNALS:
            raise InputError(f"signal must be one of {SIGNALS}, got {self.signal!r}")
        if self.context_chars < 200:
            raise InputError(f"context_chars must be >= 200, got {self.context_chars}")


def conversation_messages(
    instance: Instance,
    turns: Sequence[Turn],
    settings: LoopSettings,
    k: int,
    *,
    compact: bool = False,
    system: str | None = None,
) -> list[Message]:
    """The chat the reasoner of ``settings`` sees before its next turn (its strategy's system
    prompt unless ``system`` is given; :func:`~clearsight.probe.reasoner.prompts.chat`). ``compact``
    replaces old turns' text by their bare actions."""
    text = conversing(settings.strategy).system() if system is None else system
    return chat(
        instance,
        turns,
        system=text,
        budget=settings.budget,
        signal=settings.signal,
        k=k,
        compact=compact,
    )


_CONTEXT_ERROR = re.compile(r"context|too long|maximum.*length|max_position|sequence length", re.I)


class _ReasonerFailedError(Exception):
    """The reasoner's own call failed: the conversation ends (``error``, or ``context`` when
    the backend rejected the prompt as too long)."""


class _Guarded:
    """The reasoner backend, its failures — and replies that cannot be read
    (:func:`~clearsight.models.replies.complete_checked`) — raised as
    :class:`_ReasonerFailedError` (a sensor failure, by contrast, is part of the history)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.name = backend.name
        self.capabilities = backend.capabilities
        self.repaired = 0  # replies whose lone surrogates were replaced

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        from clearsight.models.replies import REPLACED_SURROGATES, complete_checked

        try:
            replies = complete_checked(self.backend, requests)
        except Exception as exc:
            raise _ReasonerFailedError(f"{type(exc).__name__}: {exc}") from exc
        self.repaired += sum(REPLACED_SURROGATES in r.extra for r in replies)
        return replies


def _reasoner_failed(transcript: Transcript, exc: _ReasonerFailedError) -> Transcript:
    """The conversation ended by its reasoner's failure: ``context`` when the backend rejected
    the prompt as too long, else ``error``, the failure kept in ``meta``."""
    stop = "context" if _CONTEXT_ERROR.search(str(exc)) else "error"
    meta = {**transcript.meta, "reasoner_error": str(exc)}
    return replace(transcript, meta=meta).finish(None, stop)


def run_conversation(
    instance: Instance,
    reasoner: Backend,
    sensor: Sensor,
    settings: LoopSettings,
    *,
    rng: np.random.Generator,
    reasoner_name: str | None = None,
    run: int = 0,
    meta: Mapping[str, JsonValue] | None = None,
    on_turn: Callable[[Transcript], None] | None = None,
) -> Transcript:
    """One whole conversation; ``on_turn`` sees the transcript after every turn (to store it
    turn by turn). Each turn is the strategy's (one reasoner call, or a search). Randomness:
    three generators spawned from ``rng`` (reasoner decoding, sensor, random signal), so the
    sensor's draws do not depend on the reasoner's."""
    strategy = conversing(settings.strategy)
    rngs: Streams = tuple(rng.spawn(3))  # type: ignore[assignment]
    transcript = Transcript.start(
        instance,
        reasoner=reasoner_name or reasoner.name,
        strategy=strategy.name,
        sensor=sensor.name,
        run=run,
        k=sensor.k,
        budget=settings.budget,
        signal=settings.signal,
        meta=meta,
    )
    guarded = _Guarded(reasoner)
    sensed = sensor.repaired
    talk = Talk(
        instance,
        transcript,
        guarded,
        sensor,
        rngs,
        settings.temperature,
        settings.max_new_tokens,
        settings.context_chars,
        settings.search,
    )
    done = _converse(strategy, talk, settings.budget, on_turn)
    return done.with_repaired(guarded.repaired, sensor.repaired - sensed)


def _converse(
    strategy: Conversing,
    talk: Talk,
    budget: int,
    on_turn: Callable[[Transcript], None] | None,
) -> Transcript:
    """The turns of one conversation until the reasoner commits, fails, runs out of context or
    of ``budget``: the finished transcript, before the repairs are counted (the caller knows
    what was repaired before it began). Each turn says "turn t of T" to the run's progress bar
    and covers its T-th of the conversation there (:mod:`clearsight.execute.progress`)."""
    transcript = talk.transcript
    for t in range(budget):
        try:
            with progress.within(t / budget, (t + 1) / budget, f"turn {t + 1} of {budget}"):
                turn = strategy.turn(replace(talk, transcript=transcript))
        except _ReasonerFailedError as exc:  # recorded, the item still ends
            return _reasoner_failed(transcript, exc)
        if turn is None:
            return transcript.finish(None, "context")
        transcript = transcript.with_turn(turn)
        if on_turn is not None:
            on_turn(transcript)
        if transcript.committed is not None:
            return transcript
    return transcript.finish(None, "budget")
