"""Strategies that differ only in their system prompt: one reasoner call per turn.

ReAct (:mod:`~clearsight.probe.strategies.react`), belief-state prompting
(:mod:`~clearsight.probe.strategies.bp`) and Uncertainty of Thoughts as a system prompt only
(:mod:`~clearsight.probe.strategies.uot`; a lighter variant, not the paper's, which adapts
UoT's prompts and keeps its search) each read their own entry of
``prompts/strategies.yaml`` and take the same turn (:meth:`Prompted.turn`): the chat so far
(compacted to the bare actions when it no longer fits the context, and the conversation ended
when even that does not fit), one reasoner call, its action parsed
(:func:`~clearsight.probe.reasoner.parsing.parse_action`), a query sent to the sensor with the u the
reasoner is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clearsight.probe.reasoner.parsing import parse_action
from clearsight.probe.reasoner.prompts import prompts, shown_consistency
from clearsight.probe.strategies.base import Talk
from clearsight.probe.transcript import Turn
from clearsight.seeding import content_hash

if TYPE_CHECKING:
    from clearsight.models.base import Message


def _chars(messages: Sequence[Message]) -> int:
    return sum(len(m.text) for m in messages)


@dataclass(frozen=True)
class Prompted:
    """A strategy whose reasoner reads the system prompt of entry ``entry`` (by default its
    ``name``) of ``prompts/strategies.yaml`` and takes one call per turn."""

    name: str
    entry: str = ""
    reasoned: bool = True
    searches: bool = False

    @property
    def _entry(self) -> str:
        return self.entry or self.name

    def prompt_hash(self) -> str:
        """Content hash of the shared turn texts and the strategy's entry."""
        doc = prompts()
        return content_hash([doc["common"], doc["strategies"][self._entry]])

    def system(self) -> str:
        """The entry's system prompt."""
        return str(prompts()["strategies"][self._entry]["system"])

    def turn(self, talk: Talk) -> Turn | None:
        """One reasoner call, its action parsed, a query sent to the sensor; None when the
        history no longer fits ``talk.context_chars`` even compacted."""
        from clearsight.models.base import Request

        _, s_rng, u_rng = talk.rngs
        messages = talk.chat(self.system())
        if _chars(messages) > talk.context_chars:
            messages = talk.chat(self.system(), compact=True)
            if _chars(messages) > talk.context_chars:
                return None
        response = talk.reasoner.complete([Request(tuple(messages), talk.decoding())])[0]
        raw = response.texts[0] if response.texts else ""
        instance, index = talk.instance, talk.index
        action = parse_action(raw, instance.letters, instance.options)
        if action.kind == "commit":
            return Turn(index, raw, commit=action.letter, thought=action.thought, note=action.note)
        if action.kind == "query" and action.query is not None:
            reply = talk.sensor.ask(instance, action.query, s_rng)
            return Turn(
                index,
                raw,
                query=action.query,
                reply=reply,
                shown_u=shown_consistency(reply, talk.transcript.signal, u_rng),
                thought=action.thought,
                note=action.note,
            )
        return Turn(index, raw, thought=action.thought, note=action.note)
