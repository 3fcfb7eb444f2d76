"""The texts a blind reasoner reads, and the chat it reads them in.

The strategies' system prompts and the turn texts they share (the question, a sensor reply with
or without its consistency, the nudge after an unparsed turn, the last-turn warning, the direct
question) are data, kept in ``prompts/strategies.yaml``; the Uncertainty-of-Thoughts search's
own prompts (proposals, simulated replies, partitions, the last answer) in ``prompts/uot.yaml``.
:func:`chat` lays a conversation out as the reasoner sees it before its next turn, whatever the
strategy: its system text, the question with the options, then each turn and the sensor's
reply with the u it was shown (:func:`shown_consistency`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml

from clearsight.probe.instances import Instance
from clearsight.probe.sensor import SensorReply
from clearsight.probe.transcript import Turn

if TYPE_CHECKING:
    from clearsight.models.base import Message


def _yaml(name: str) -> dict[str, Any]:
    """The parsed ``prompts/<name>``."""
    text = resources.files("clearsight.probe").joinpath(f"prompts/{name}").read_text()
    doc: dict[str, Any] = yaml.safe_load(text)
    return doc


@functools.cache
def prompts() -> dict[str, Any]:
    """The parsed ``prompts/strategies.yaml``: ``common`` (the shared turn texts) and
    ``strategies`` (each strategy's and each post-hoc analysis's prompts)."""
    return _yaml("strategies.yaml")


@functools.cache
def uot_prompts() -> dict[str, Any]:
    """The parsed ``prompts/uot.yaml`` (the UoT search's prompts)."""
    return _yaml("uot.yaml")


def fill_prompt(text: str, instance: Instance, k: int, budget: int, **more: Any) -> str:
    """``text`` with the instance's question, options and letters, K and the budget T (and
    ``more``) filled in."""
    values = {
        "question": instance.question,
        "options": instance.options_text(),
        "letters": ", ".join(instance.letters),
        "k": k,
        "budget": budget,
        **more,
    }
    return text.format(**values)


def render_reply(reply: SensorReply, signal: str, shown_u: int | None) -> str:
    """The sensor reply as the reasoner reads it (with the shown u unless the signal is off)."""
    common = prompts()["common"]
    if reply.error is not None:
        return str(common["reply_error"])
    if signal == "none" or shown_u is None:
        return str(common["reply_no_signal"]).format(reply=reply.reply)
    return str(common["reply"]).format(reply=reply.reply, u=shown_u, k=reply.k)


def shown_consistency(reply: SensorReply, signal: str, rng: np.random.Generator) -> int | None:
    """The u a reasoner is shown: the true u, none, or uniform on 1..K (the ablation)."""
    if reply.error is not None or signal == "none":
        return None
    if signal == "random":
        return int(rng.integers(1, reply.k + 1))
    return reply.u


def _said(turn: Turn, compact: bool) -> str:
    """What the reasoner's turn shows in the chat: its text, or with ``compact`` its bare
    action (the first step of context-overflow handling)."""
    if not compact:
        return turn.raw
    if turn.query is not None:
        return f'My question is: "{turn.query}"'
    if turn.commit is not None:
        return f"The answer is: ({turn.commit})"
    return turn.raw[:80]


def chat(
    instance: Instance,
    turns: Sequence[Turn],
    *,
    system: str,
    budget: int,
    signal: str,
    k: int,
    compact: bool = False,
) -> list[Message]:
    """The chat the reasoner sees before its next turn: ``system`` (filled in), the question,
    each turn with the sensor's reply as shown under ``signal`` (a turn with neither a reply
    nor a commit answered with the nudge), and on turn T the last-turn warning. ``compact``
    replaces old turns' text by their bare actions."""
    from clearsight.models.base import Message, TextPart

    common = prompts()["common"]
    messages = [
        Message("system", (TextPart(fill_prompt(system, instance, k, budget)),)),
        Message.user(fill_prompt(common["first"], instance, k, budget)),
    ]
    for turn in turns:
        messages.append(Message("assistant", (TextPart(_said(turn, compact)),)))
        if turn.reply is not None:
            messages.append(Message.user(render_reply(turn.reply, signal, turn.shown_u)))
        elif turn.commit is None:
            messages.append(Message.user(str(common["unparsed"])))
    if len(turns) == budget - 1:
        last = fill_prompt(common["last_turn"], instance, k, budget)
        if messages[-1].role == "user":
            messages[-1] = Message.user(messages[-1].text + "\n" + last)
        else:
            messages.append(Message.user(last))
    return messages
