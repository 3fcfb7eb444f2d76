"""Conversations of a blind reasoner with the sensor: turns and transcripts, and their stored
forms.

A :class:`Transcript` is the whole of one probe item (a record holds the whole conversation:
queries, K samples, u, commit, outcome): who reasoned (a model spec, or
``human:<name>`` for a person at ``clearsight serve``), with which strategy and sensor, which
run, every :class:`Turn` with the reasoner's raw text, its query and the
:class:`~clearsight.probe.sensor.SensorReply`, the committed letter and why the conversation
stopped (:data:`STOP_REASONS`). Models and humans are stored the same way, in the same
:class:`~clearsight.store.RunStore`, so one report covers both.

A transcript's record holds :meth:`Transcript.to_json` as its raw output (so everything is
recomputable from it) and the summary :meth:`Transcript.readouts` as its read-outs; storing
and reading them is :mod:`clearsight.probe.records`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from pydantic import JsonValue

from clearsight.probe.instances import DOMAIN, Instance
from clearsight.probe.readouts import ConversationReadouts, TranscriptJson, TurnJson
from clearsight.probe.reasoner.search_record import SearchRecord
from clearsight.probe.sensor import SensorReply
from clearsight.probe.specs import PROTOCOL as PROTOCOL
from clearsight.validate import InputError

#: Why a conversation ended.
STOP_REASONS: Final[tuple[str, ...]] = (
    "committed",  # the reasoner committed a parsable answer
    "budget",  # T turns passed without a commit
    "context",  # the conversation no longer fit the reasoner's context window
    "no_options",  # the instance had no options to commit to
    "error",  # the reasoner itself failed
    "unparsed",  # a direct (VLM) answer named no option
    "abandoned",  # a person left the session
)


@dataclass(frozen=True)
class Turn:
    """One round: what the reasoner wrote, the query it sent or the answer it committed, and
    the sensor's reply. ``shown_u`` is the consistency the reasoner was shown (None when the
    signal was withheld); ``note`` records a parsing repair such as "no query found"; ``search``
    is the tree a searching strategy considered before the turn (UoT's candidates, simulated
    replies, partitions and scores, :mod:`clearsight.probe.reasoner.uot_search`), None for the
    others."""

    index: int
    raw: str
    query: str | None = None
    reply: SensorReply | None = None
    commit: str | None = None
    shown_u: int | None = None
    thought: str = ""
    note: str = ""
    search: SearchRecord | None = None

    def to_json(self) -> TurnJson:
        """JSON-able dict (``search`` only where there is one)."""
        out: TurnJson = {
            "index": self.index,
            "raw": self.raw,
            "thought": self.thought,
            "query": self.query,
            "reply": None if self.reply is None else self.reply.to_json(),
            "shown_u": self.shown_u,
            "commit": self.commit,
            "note": self.note,
        }
        if self.search is not None:
            out["search"] = self.search
        return out

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Turn:
        """The turn :meth:`to_json` wrote."""
        reply = data.get("reply")
        return Turn(
            index=int(data["index"]),
            raw=str(data.get("raw", "")),
            query=data.get("query"),
            reply=None if reply is None else SensorReply.from_json(reply),
            commit=data.get("commit"),
            shown_u=data.get("shown_u"),
            thought=str(data.get("thought", "")),
            note=str(data.get("note", "")),
            search=data.get("search"),
        )


@dataclass(frozen=True)
class Transcript:
    """One conversation about one instance (see the module docstring).

    ``signal``: what consistency the reasoner saw: ``true`` u, ``none`` or ``random`` (the
    ablation of the paper's Fig. 3). ``budget``: T, the most turns allowed.
    """

    instance_id: str
    reasoner: str
    strategy: str
    sensor: str
    run: int
    turns: tuple[Turn, ...]
    committed: str | None
    correct: bool
    stop: str
    gold: str = ""
    question: str = ""
    options: tuple[str, ...] = ()
    dataset: str = ""
    category: str = ""
    k: int = 5
    budget: int = 100
    signal: str = "true"
    meta: Mapping[str, JsonValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Reject an impossible outcome (unknown stop reason, a commit outside the letters)."""
        if self.stop not in STOP_REASONS:
            raise InputError(f"unknown stop reason {self.stop!r}; one of {STOP_REASONS}")
        if self.committed is not None and self.options:
            letters = "ABCDEFGHIJ"[: len(self.options)]
            if self.committed not in letters:
                raise InputError(f"committed {self.committed!r} is not one of {list(letters)}")
        if self.correct and self.committed != self.gold:
            raise InputError("a transcript is correct only when its commit equals the gold")

    # ------------------------------------------------------------------ derived numbers

    @property
    def rounds(self) -> int:
        """Turns taken, the committing one included."""
        return len(self.turns)

    @property
    def queries(self) -> int:
        """Turns that sent a query to the sensor."""
        return sum(t.query is not None for t in self.turns)

    @property
    def vlm_calls(self) -> int:
        """VLM samples the reasoner received, as the paper counts them: K per answered query
        (K x (rounds - 1) for a committed conversation whose every earlier turn asked and was
        answered; a turn that asked nothing, or whose call failed, adds none: see
        :attr:`failed_calls`)."""
        return sum(t.reply.k for t in self.turns if t.reply is not None and t.reply.error is None)

    @property
    def failed_calls(self) -> int:
        """VLM samples asked for by queries whose sensor call failed (reported apart)."""
        return sum(
            t.reply.k for t in self.turns if t.reply is not None and t.reply.error is not None
        )

    @property
    def sensor_errors(self) -> int:
        """Queries whose sensor call failed."""
        return sum(t.reply is not None and t.reply.error is not None for t in self.turns)

    def readouts(self) -> ConversationReadouts:
        """The flat summary stored beside the raw transcript."""
        us = [t.reply.u for t in self.turns if t.reply is not None and t.reply.error is None]
        return {
            "instance_id": self.instance_id,
            "reasoner": self.reasoner,
            "strategy": self.strategy,
            "sensor": self.sensor,
            "run": self.run,
            "signal": self.signal,
            "dataset": self.dataset,
            "category": self.category,
            "domain": DOMAIN.get(self.dataset, "other"),
            "committed": self.committed,
            "gold": self.gold,
            "correct": self.correct,
            "stop": self.stop,
            "rounds": self.rounds,
            "queries": self.queries,
            "vlm_calls": self.vlm_calls,
            "failed_calls": self.failed_calls,
            "sensor_errors": self.sensor_errors,
            "mean_u": sum(us) / len(us) if us else None,
            "k": self.k,
        }

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> TranscriptJson:
        """JSON-able dict of everything."""
        return {
            "instance_id": self.instance_id,
            "reasoner": self.reasoner,
            "strategy": self.strategy,
            "sensor": self.sensor,
            "run": self.run,
            "turns": [t.to_json() for t in self.turns],
            "committed": self.committed,
            "correct": self.correct,
            "stop": self.stop,
            "gold": self.gold,
            "question": self.question,
            "options": list(self.options),
            "dataset": self.dataset,
            "category": self.category,
            "k": self.k,
            "budget": self.budget,
            "signal": self.signal,
            "meta": dict(self.meta),
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Transcript:
        """The transcript :meth:`to_json` wrote."""
        try:
            return Transcript(
                instance_id=str(data["instance_id"]),
                reasoner=str(data["reasoner"]),
                strategy=str(data["strategy"]),
                sensor=str(data["sensor"]),
                run=int(data["run"]),
                turns=tuple(Turn.from_json(t) for t in data.get("turns", ())),
                committed=data.get("committed"),
                correct=bool(data["correct"]),
                stop=str(data["stop"]),
                gold=str(data.get("gold", "")),
                question=str(data.get("question", "")),
                options=tuple(str(o) for o in data.get("options", ())),
                dataset=str(data.get("dataset", "")),
                category=str(data.get("category", "")),
                k=int(data.get("k", 5)),
                budget=int(data.get("budget", 100)),
                signal=str(data.get("signal", "true")),
                meta=dict(data.get("meta", {})),
            )
        except KeyError as exc:
            raise InputError(f"a transcript needs the field {exc.args[0]!r}") from exc

    @staticmethod
    def start(
        instance: Instance,
        *,
        reasoner: str,
        strategy: str,
        sensor: str,
        run: int = 0,
        k: int = 5,
        budget: int = 100,
        signal: str = "true",
        meta: Mapping[str, JsonValue] | None = None,
    ) -> Transcript:
        """An empty, not yet committed conversation about ``instance`` (a UI session starts
        here and adds turns with :meth:`with_turn`)."""
        return Transcript(
            instance_id=instance.id,
            reasoner=reasoner,
            strategy=strategy,
            sensor=sensor,
            run=run,
            turns=(),
            committed=None,
            correct=False,
            stop="budget",
            gold=instance.gold,
            question=instance.question,
            options=instance.options,
            dataset=instance.dataset,
            category=instance.category,
            k=k,
            budget=budget,
            signal=signal,
            meta=dict(meta or {}),
        )

    def with_turn(self, turn: Turn) -> Transcript:
        """This transcript with ``turn`` appended (a commit in it ends the conversation)."""
        out = replace(self, turns=(*self.turns, turn))
        if turn.commit is not None:
            out = out.finish(turn.commit, "committed")
        return out

    def with_repaired(self, reasoner: int, sensor: int) -> Transcript:
        """This transcript with the number of its reasoner's and sensor's replies whose lone
        surrogates were replaced with U+FFFD in its ``meta`` (``replaced_surrogates``), where
        there were any."""
        if not reasoner and not sensor:
            return self
        said: dict[str, JsonValue] = {"reasoner": reasoner, "sensor": sensor}
        return replace(self, meta={**self.meta, "replaced_surrogates": said})

    def finish(self, committed: str | None, stop: str) -> Transcript:
        """The transcript ended with ``committed`` (None: no answer) for reason ``stop``."""
        return replace(
            self,
            committed=committed,
            stop=stop,
            correct=committed is not None and committed == self.gold,
        )
