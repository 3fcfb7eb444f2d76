"""What a strategy is to the probe: a value with a name, the hash of what its reasoner reads,
and — for a strategy whose reasoner converses with the sensor — the chat it builds and the
turn it takes.

The loop (:func:`clearsight.probe.reasoner.loop.run_conversation`) holds a :class:`Conversing`
strategy and asks it for each turn, handing it a :class:`Talk` (the instance, the conversation so
far, the reasoner, the sensor, the random streams and the reasoner's decoding); the strategy builds
its prompt, calls the reasoner (once, or many times for a search), reads the reply, asks the sensor
and returns the :class:`~clearsight.probe.transcript.Turn` to record, with whatever it wants kept
beside it (a search's tree). The loop knows no strategy by name: it ends a conversation on a commit,
on the budget, on an overflowing context (a turn of ``None``) or on the reasoner's failure, the same
for every strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from clearsight.probe.instances import Instance
from clearsight.probe.reasoner.prompts import chat
from clearsight.probe.reasoner.uot_search import SearchSettings
from clearsight.probe.sensor import Sensor
from clearsight.probe.transcript import Transcript, Turn

if TYPE_CHECKING:
    from clearsight.models.base import Backend, Decoding, Message

#: A conversation's three random streams: the reasoner's decoding, the sensor's draws and the
#: random signal's u (spawned apart, so the sensor's draws do not depend on the reasoner's).
Streams = tuple[np.random.Generator, np.random.Generator, np.random.Generator]


@dataclass(frozen=True)
class Talk:
    """What a strategy's turn works with: the ``instance``, the ``transcript`` so far (its
    budget T, signal and K), the ``reasoner`` (its failures end the conversation), the
    ``sensor``, the three random streams, the reasoner's ``temperature`` and
    ``max_new_tokens``, the most characters of a prompt (``context_chars``) and a searching
    strategy's settings (``search``, None: its defaults)."""

    instance: Instance
    transcript: Transcript
    reasoner: Backend
    sensor: Sensor
    rngs: Streams
    temperature: float
    max_new_tokens: int
    context_chars: int
    search: SearchSettings | None = None

    @property
    def index(self) -> int:
        """The number of the turn to take (1 for the first)."""
        return len(self.transcript.turns) + 1

    def chat(self, system: str, *, compact: bool = False) -> list[Message]:
        """The conversation so far as the reasoner reads it, under ``system``
        (:func:`~clearsight.probe.reasoner.prompts.chat`)."""
        t = self.transcript
        return chat(
            self.instance,
            t.turns,
            system=system,
            budget=t.budget,
            signal=t.signal,
            k=t.k,
            compact=compact,
        )

    def decoding(self) -> Decoding:
        """The reasoner's decoding for one reply, its seed drawn from the reasoner's stream."""
        from clearsight.models.base import Decoding

        return Decoding(
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            seed=int(self.rngs[0].integers(0, 2**31 - 1)),
        )


class Strategy(Protocol):
    """A way to answer a probe instance: its ``name`` (stored in every transcript and item),
    whether a reasoner converses with the sensor (``reasoned``; False: the sensor answers the
    question itself), whether its items carry the search's settings (``searches``) and the
    content hash of everything its model reads (:meth:`prompt_hash`, recorded in each item so
    an edited prompt makes new items)."""

    @property
    def name(self) -> str:
        """The strategy's name."""
        ...

    @property
    def reasoned(self) -> bool:
        """Whether a reasoner model converses with the sensor."""
        ...

    @property
    def searches(self) -> bool:
        """Whether the strategy's items carry the search's settings."""
        ...

    def prompt_hash(self) -> str:
        """Content hash of the texts the strategy's model reads."""
        ...


@runtime_checkable
class Conversing(Strategy, Protocol):
    """A strategy whose reasoner converses with the sensor: the system prompt of the chat it
    reads (:meth:`system`; also what self-distillation trains on) and its next turn."""

    def system(self) -> str:
        """The system prompt of the reasoner's chat."""
        ...

    def turn(self, talk: Talk) -> Turn | None:
        """The next turn of the conversation ``talk`` holds; None when the history no longer
        fits ``talk.context_chars`` (the conversation ends, ``context``)."""
        ...
