"""How a probe conversation looks on a page: a person's own session page (never the gold or
the verdict, only the u they were shown) and the operator's record page (every turn, the
gold and the verdict of a finished one, the signal named).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.probe.transcript import Transcript, Turn

__all__ = [
    "WITHHELD",
    "SessionRow",
    "SessionView",
    "TurnView",
    "commit_text",
    "record_conversation",
    "transcript_view",
    "withheld",
]

#: What the operator's pages show instead of an unfinished person's session.
WITHHELD = "hidden while the session is in progress (it holds the gold answer and all K samples)"


@dataclass(frozen=True)
class TurnView:
    """One turn as a page shows it: a query with the realised reply and u/K (or the sensor's
    error), or a commit. ``thought``: a model reasoner's own text when it differs from its
    query (empty for a person); ``shown``: the consistency the reasoner was shown when it was
    not the true u (``none`` or the random value of the signal ablation), else empty. On a
    person's own page ``u`` is the u they were shown (None: no signal) and ``shown`` empty."""

    index: int
    kind: str
    query: str
    reply: str
    u: int | None
    k: int
    error: str | None
    letter: str
    thought: str
    shown: str = ""


@dataclass(frozen=True)
class SessionView:
    """A conversation as a page shows it (a human session, or any stored probe transcript).

    ``gold`` is empty and ``correct`` None while the conversation is unfinished, and always on
    a person's own session page (:meth:`HumanPlay.view`): the player never learns the gold,
    so no later session on the instance knows it either.
    """

    key: str
    reasoner: str
    instance_id: str
    question: str
    dataset: str
    category: str
    options: list[tuple[str, str]]
    turns: list[TurnView]
    finished: bool
    committed: str | None
    correct: bool | None
    stop_reason: str
    gold: str
    budget: int
    turns_left: int
    sensor: str
    k: int
    signal: str = "true"
    """The conversation's consistency signal (true, none, random); on a person's own page only
    ``none`` or ``shown`` (a random u looks like a true one)."""

    @property
    def human_name(self) -> str:
        """The name after ``human:`` (the reasoner itself for a model)."""
        return self.reasoner.removeprefix("human:")

    @property
    def instance(self) -> dict[str, str]:
        """The instance's identity for the page header (never its image)."""
        return {
            "id": self.instance_id,
            "question": self.question,
            "dataset": self.dataset,
            "category": self.category,
        }


@dataclass(frozen=True)
class SessionRow:
    """One human session in the play page's list."""

    key: str
    human: str
    instance_id: str
    turns: int
    state: str


def commit_text(letter: str) -> str:
    """What a person's commit turn stores as its raw text: the protocol's commit sentence."""
    return f"The answer is: ({letter})"


def _turn_views(turn: Turn, player: bool = False) -> list[TurnView]:
    """The views of one stored turn: its query and reply (if it sent one), then its commit (if
    it made one); a Direct turn does both, a turn that did neither shows its parse note.
    ``player``: the person's own page, which shows the u they were shown and nothing else."""
    out = []
    reply = turn.reply
    said = turn.raw.strip()
    if reply is not None:
        shown = (
            ""
            if player or turn.shown_u == reply.u
            else ("none" if turn.shown_u is None else str(turn.shown_u))
        )
        query = turn.query or reply.query
        out.append(
            TurnView(
                index=turn.index,
                kind="query",
                query=query,
                reply=reply.reply,
                u=turn.shown_u if player else reply.u,
                k=reply.k,
                error=reply.error,
                letter="",
                thought="" if said == query.strip() else turn.raw,
                shown=shown,
            )
        )
    if turn.commit is not None:
        thought = "" if reply is not None or said == commit_text(turn.commit) else turn.raw
        out.append(TurnView(turn.index, "commit", "", "", 0, 0, None, turn.commit, thought))
    if not out:  # neither a query nor a commit could be parsed from the reasoner's text
        note = turn.note or "no query or answer found"
        out.append(TurnView(turn.index, "query", "", "", 0, 0, note, "", turn.raw))
    return out


def transcript_view(
    key: str, transcript: Transcript, finished: bool, *, scored: bool = True
) -> SessionView:
    """The page's view of a stored transcript (a model's or a person's); ``scored``: whether
    a finished one shows its gold and verdict (the operator's record page) or not (the
    player's own session page, which shows only the u the player was shown and never names
    the signal)."""
    reveal = finished and scored
    turns = [view for t in transcript.turns for view in _turn_views(t, player=not scored)]
    from clearsight.probe.instances import LETTERS

    letters = LETTERS[: len(transcript.options)]
    return SessionView(
        key=key,
        reasoner=transcript.reasoner,
        instance_id=transcript.instance_id,
        question=transcript.question,
        dataset=transcript.dataset,
        category=transcript.category,
        options=list(zip(letters, transcript.options, strict=True)),
        turns=turns,
        finished=finished,
        committed=transcript.committed,
        correct=transcript.correct if reveal else None,
        stop_reason=transcript.stop if finished else "",
        gold=transcript.gold if reveal else "",
        budget=transcript.budget,
        turns_left=max(0, transcript.budget - transcript.rounds),
        sensor=transcript.sensor,
        k=transcript.k,
        signal=transcript.signal if scored else _player_signal(transcript.signal),
    )


def _player_signal(signal: str) -> str:
    """What a person's own page may know of the signal: ``none``, or ``shown`` (true or
    random, which look the same)."""
    return "none" if signal == "none" else "shown"


def record_conversation(record: Mapping[str, object]) -> SessionView | None:
    """The conversation of a stored probe record (a model's or a person's; the operator's
    record page, :attr:`ProtocolFace.conversation
    <clearsight.faces.face.ProtocolFace.conversation>`), or None for another item kind or a
    record without a transcript (a failed item)."""
    from clearsight.probe.transcript import PROTOCOL, Transcript

    raw = record["raw"]
    if record["protocol"] != PROTOCOL or not isinstance(raw, dict):
        return None
    try:
        transcript = Transcript.from_json(raw)
    except (InputError, KeyError, TypeError, ValueError):
        return None
    return transcript_view(str(record["key"]), transcript, record["status"] == "ok")


def withheld(record: Mapping[str, object]) -> str | None:
    """:data:`WITHHELD` for an unfinished human probe session (its record holds the gold
    letter and every sensor sample, which the person playing it must not be able to read
    through the browser), else None."""
    from clearsight.probe.transcript import PROTOCOL

    readouts = record["readouts"]
    unfinished = record["protocol"] == PROTOCOL and record["status"] != "ok"
    if unfinished and isinstance(readouts, dict):
        return WITHHELD if str(readouts.get("reasoner", "")).startswith("human:") else None
    return None
