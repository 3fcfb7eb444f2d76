"""Human sessions: a person plays the blind reasoner of the probe protocol through the web page.

A session is one :class:`~clearsight.probe.transcript.Transcript` with reasoner
``human:<name>`` and strategy ``human``, stored in the run's store like a model's, under the
key of its item spec (:func:`session_spec`: the transcript's identifying fields plus the run
seed and the judge). Every turn is written as soon as it happens — an unfinished session is a
``failed`` record ("unfinished: N turns so far"), replaced by the ``ok`` record when the person
commits, gives up or runs out of budget — so a closed tab or a killed server loses at most the
turn in flight, and the session carries on from its stored turns.

Each query is asked of the :class:`~clearsight.probe.sensor.Sensor` with a generator seeded from
the session's key and the turn index (no global random state): the same session replayed with
the same queries draws the same replies.

**The signal ablation** (the paper's Fig. 3). Each session has the consistency signal of a model
conversation (``Transcript.signal``: ``true``, ``none`` or ``random``), fixed when it starts
(:meth:`HumanPlay.session_signal`: the server's ``signal``, or with ``balanced`` the person's n-th
session takes entry ``n mod 3`` of an order of the three seeded by the run seed and their name) and
stored, with the u shown in each turn (``Turn.shown_u``), exactly as the probe loop stores a model's
(:func:`~clearsight.probe.reasoner.prompts.shown_consistency`; the random u of turn i drawn from a
generator seeded by the session key and i), so the report's ablation table puts people beside
models. The person's pages show the shown u (none at all under ``none``) and never name the signal:
a random u looks like a true one.

All state lives in the store; this object holds only the settings, the instances and the
(lazily loaded) sensor, and locks that let one turn at a time reach the store and the sensor
(a session can start while the sensor is still loading).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from clearsight.seeding import content_hash, rng_for
from clearsight.store import DB_NAME, RunStore
from clearsight.sweep.references.human import human_model
from clearsight.ui.runs import RecordJSON, read_record
from clearsight.ui.settings import ServeSettings
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.probe.instances import Instance
    from clearsight.probe.sensor import Sensor
    from clearsight.probe.specs import Signal, TranscriptSpec
    from clearsight.probe.transcript import Transcript, Turn

__all__ = [
    "MAX_QUERY_CHARS",
    "STRATEGY",
    "HumanPlay",
    "SessionRow",
    "SessionView",
    "TurnView",
    "load_instance_set",
    "record_conversation",
    "session_spec",
    "transcript_view",
]

#: The strategy name of a person's transcripts (models use direct, react, uot, bp).
STRATEGY: Final = "human"
#: Longest query accepted (the sensor sees it verbatim).
MAX_QUERY_CHARS: Final = 2000


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


def load_instance_set(source: str) -> list[Instance]:
    """The instances ``--instances`` names: ``bundled``, ``<dataset>:<path>`` (a local copy read
    with that dataset's layout) or the path of a JSONL file of instances."""
    from clearsight.probe.instances import bundled_instances
    from clearsight.probe.sources.layouts import LAYOUTS
    from clearsight.probe.sources.load import instances_from_jsonl, load_instances

    if source == "bundled":
        return bundled_instances()
    dataset, sep, path = source.partition(":")
    if sep and dataset in LAYOUTS:
        return load_instances(path, dataset)
    if not Path(source).is_file():
        raise InputError(
            f"instance set {source!r}: use 'bundled', '<dataset>:<path>' (datasets: "
            f"{', '.join(LAYOUTS)}) or a JSONL file of instances"
        )
    return instances_from_jsonl(source)


def session_spec(transcript: Transcript, settings: ServeSettings) -> TranscriptSpec:
    """The item spec of a human session: the transcript's identifying fields (instance,
    reasoner, strategy, sensor, run, K, budget, signal) plus the run seed and the judge, which
    with the person's queries determine every reply."""
    from clearsight.probe.records import transcript_spec

    return transcript_spec(transcript, seed=settings.seed, judge=settings.judge)


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


def record_conversation(record: RecordJSON) -> SessionView | None:
    """The conversation of a stored probe record (a model's or a person's) for the record
    page, or None for another protocol or a record without a transcript (a failed item)."""
    from clearsight.probe.transcript import PROTOCOL, Transcript

    if record["protocol"] != PROTOCOL or not isinstance(record["raw"], dict):
        return None
    try:
        transcript = Transcript.from_json(record["raw"])
    except (InputError, KeyError, TypeError, ValueError):
        return None
    return transcript_view(record["key"], transcript, record["status"] == "ok")


@contextmanager
def serving_lock(run_dir: Path, playable: bool) -> Iterator[str | None]:
    """While a server hosts people on a run where they can play, hold the run's writer lock
    (:func:`clearsight.driver.run_lock`) so no run or second server writes it under them;
    yields why sessions are refused when another process holds it (its pid), else None."""
    from clearsight.driver import RunLocked, run_lock

    held = ExitStack()
    writer = None
    if playable:
        try:
            held.enter_context(run_lock(run_dir))
        except RunLocked as exc:
            writer = str(exc)
    with held:
        yield writer


class HumanPlay:
    """Runs human sessions in ``run_dir`` with the sensor and instances of ``settings``.

    ``instances`` and ``sensor`` may be given (tests); by default they come from the settings,
    the sensor loaded on the first query.
    """

    def __init__(
        self,
        run_dir: Path,
        settings: ServeSettings,
        *,
        instances: Sequence[Instance] | None = None,
        sensor: Sensor | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.settings = settings
        self._instances = None if instances is None else list(instances)
        self._sensor = sensor
        self._lock = threading.Lock()  # one turn at a time reaches the store
        self._sensor_lock = threading.Lock()  # and the sensor (loading it included)
        self._writer: str | None = None  # why another process's run keeps sessions out

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the run directory's writer lock (:func:`clearsight.driver.run_lock`) while
        serving a run where sessions can be played, so no ``probe run`` or second server writes
        it under the sessions. When another process holds it, sessions are refused (browsing
        goes on) with its pid. A run where play is refused anyway (a sweep's, say) is only
        browsed: no lock is taken, and its writer is not kept out."""
        with serving_lock(self.run_dir, self.blocked_reason() is None) as writer:
            self._writer = writer
            yield

    # ------------------------------------------------------------------------------ parts

    @property
    def sensor(self) -> Sensor:
        """The sensor (built on first use; loading a VLM can take a while)."""
        if self._sensor is None:
            from clearsight.probe.sensor import Sensor

            self._sensor = Sensor(
                self.settings.sensor,
                self.settings.sensor_options,
                self.settings.k,
                judge=self.settings.judge,
            )
        return self._sensor

    def warm_up(self) -> None:
        """Load the sensor's backend and judge now (``clearsight serve`` calls this in a
        background thread at start), so the first query does not wait for them; a failure is
        left for the first query to report."""
        try:
            with self._sensor_lock:
                sensor = self.sensor
                _ = sensor.backend
                sensor.judge.equivalent([("a red bicycle", "a red bike")])
        except Exception as exc:  # reported again, in context, by the first query
            print(f"clearsight serve: the sensor did not load yet: {exc}")

    def instances(self) -> list[Instance]:
        """The instances a person can play (loaded once)."""
        if self._instances is None:
            self._instances = load_instance_set(self.settings.instances)
        return self._instances

    def public_id(self, instance_id: str) -> str:
        """The id a player sees for an instance: ``q-`` and 8 hex digits of a hash of the run
        seed and the real id, which says nothing of the question or its answer (a real id such
        as ``bundled/person-horse`` would); the real id stays in the records, for the
        operator."""
        return "q-" + content_hash(["serve instance", self.settings.seed, instance_id])[:8]

    def _instance(self, instance_id: str) -> Instance:
        """The instance with this public (or, for the operator's tools, real) id."""
        for inst in self.instances():
            if instance_id in (inst.id, self.public_id(inst.id)):
                return inst
        raise InputError(f"no instance {instance_id!r} in the set {self.settings.instances!r}")

    def blocked_reason(self) -> str | None:
        """Why sessions cannot be played in this run (it holds another protocol's records, or
        the instance set does not load, or another process writes it), or None. A probe run's
        analyses and build samples (kinds ``probe.*``) are the probe's own."""
        if self._writer is not None:
            return self._writer
        if (self.run_dir / DB_NAME).is_file():
            from clearsight.probe.transcript import PROTOCOL

            with RunStore.open(self.run_dir, read_only=True) as store:
                kinds = store.item_kinds()
            others = [k for k in kinds if k != PROTOCOL and not k.startswith(f"{PROTOCOL}.")]
            if others:
                return (
                    f"this run holds {', '.join(sorted(others))} items; human sessions are "
                    "stored only in probe runs: serve a probe run directory or a new one to play"
                )
        try:
            if not self.instances():
                return f"the instance set {self.settings.instances!r} is empty"
        except InputError as exc:
            return str(exc)
        return None

    # ------------------------------------------------------------------------------ reading

    def _load(self, key: str) -> tuple[Transcript, dict[str, Any], bool] | None:
        """The stored human session ``key``: transcript, stored spec, finished; None if not
        one."""
        from clearsight.probe.transcript import PROTOCOL, Transcript

        record = read_record(self.run_dir, key)
        if record is None or record["protocol"] != PROTOCOL or not record["raw"]:
            return None
        transcript = Transcript.from_json(record["raw"])
        if not transcript.reasoner.startswith("human:"):
            return None
        return transcript, record["spec"], record["status"] == "ok"

    def view(self, key: str) -> SessionView | None:
        """The page of session ``key`` as its player sees it (never the gold or the verdict),
        or None if there is no such human session."""
        loaded = self._load(key)
        if loaded is None:
            return None
        transcript, _, finished = loaded
        view = transcript_view(key, transcript, finished, scored=False)
        return dataclasses.replace(view, instance_id=self.public_id(view.instance_id))

    def sessions(self) -> list[SessionRow]:
        """Every human session of the run, in the order they were started; the state says
        whether it goes on or how it ended, never the letter or the verdict."""
        if not (self.run_dir / DB_NAME).is_file():
            return []
        from clearsight.probe.transcript import PROTOCOL

        with RunStore.open(self.run_dir, read_only=True) as store:
            records = list(store.iter_records(kind=PROTOCOL, raw=False))
        out = []
        for record in records:
            readouts = record.readouts
            if not str(readouts.get("reasoner", "")).startswith("human:"):
                continue  # a model's conversation
            state = "in progress" if record.status != "ok" else f"ended: {readouts.get('stop')}"
            out.append(
                SessionRow(
                    key=record.key,
                    human=str(readouts.get("reasoner", "")),
                    instance_id=str(readouts.get("instance_id", "")),
                    turns=int(readouts.get("rounds", 0)),
                    state=state,
                )
            )
        return out

    # ------------------------------------------------------------------------------ writing

    def prepare(self) -> None:
        """Create the run's store with its manifest where sessions can be played and there is
        none yet. The app calls it once, before the server accepts a request
        (:func:`~clearsight.ui.app.create_app`): a store created by the first session was read
        half-made by the pages other players asked for at the same time."""
        if (self.run_dir / DB_NAME).is_file() or self.blocked_reason() is not None:
            return
        from clearsight.provenance import run_manifest

        with RunStore.open(self.run_dir) as store:
            store.begin_run(run_manifest(self._config(), "probe", source="clearsight serve"))

    def _store(self, transcript: Transcript, spec: TranscriptSpec, finished: bool) -> str:
        """Write the session's record (and item) into the run's store."""
        from clearsight.probe.records import store_transcript

        with RunStore.open(self.run_dir) as store:
            return store_transcript(store, transcript, spec, finished=finished)

    def _config(self) -> dict[str, Any]:
        """The manifest config of a run that human sessions start: the session settings."""
        fields = ("sensor", "sensor_options", "k", "budget", "instances", "seed", "judge", "signal")
        return {
            "protocol": "probe",
            "reasoner": "human",
            **self.settings.model_dump(include=set(fields)),
        }

    def session_signal(self, reasoner: str, started: int) -> Signal:
        """The signal of the session ``reasoner`` (``human:<name>``) starts after ``started``
        sessions of theirs in the run: the server's, or with ``balanced`` entry
        ``started mod 3`` of an order of true, none and random drawn from the run seed and the
        name (so any three sessions in a row cover all three, in an order of their own)."""
        from clearsight.probe.specs import SIGNALS

        if self.settings.signal != "balanced":
            return self.settings.signal
        order = rng_for("serve", "signal order", self.settings.seed, reasoner).permutation(3)
        chosen: Signal = SIGNALS[int(order[started % 3])]  # type: ignore[assignment]
        return chosen

    def start(self, name: str, instance_id: str) -> str:
        """Start (or resume) ``name``'s session on the instance; return its key.

        The person's unfinished session on the same instance is resumed (with the signal it
        started with); otherwise a new one starts with the next run index (the number of their
        sessions on that instance) and its signal (:meth:`session_signal`).
        """
        from clearsight.probe.transcript import Transcript

        reasoner = human_model(name.strip())
        if (reason := self.blocked_reason()) is not None:
            raise InputError(reason)
        instance = self._instance(instance_id)
        with self._lock:
            self.prepare()  # a session started without an app (the app made the store first)
            theirs = [row for row in self.sessions() if row.human == reasoner]
            mine = [row for row in theirs if row.instance_id == instance.id]
            for row in mine:
                if row.state == "in progress":
                    return row.key
            transcript = Transcript.start(
                instance,
                reasoner=reasoner,
                strategy=STRATEGY,
                sensor=self.settings.sensor,
                run=len(mine),
                k=self.settings.k,
                budget=self.settings.budget,
                signal=self.session_signal(reasoner, len(theirs)),
                meta={"source": "clearsight serve"},
            )
            spec = session_spec(transcript, self.settings)
            return self._store(transcript, spec, finished=False)

    def _open(self, key: str) -> tuple[Transcript, TranscriptSpec, Instance]:
        """The unfinished session ``key`` this server can continue (KeyError if none), with the
        spec its turns are stored under."""
        from clearsight.probe.specs import TranscriptSpec

        loaded = self._load(key)
        if loaded is None:
            raise KeyError(key)
        transcript, stored, finished = loaded
        if finished:
            raise InputError("this session has ended; start a new one from the play page")
        spec = TranscriptSpec.from_json(stored)
        mismatch = {
            field: (have, want)
            for field, have, want in (
                ("sensor", spec.sensor, self.settings.sensor),
                ("k", spec.k, self.settings.k),
                ("budget", spec.budget, self.settings.budget),
                ("seed", spec.seed, self.settings.seed),
            )
            if have != want
        }
        if mismatch:
            detail = ", ".join(
                f"{f} {old!r} (server: {new!r})" for f, (old, new) in mismatch.items()
            )
            raise InputError(
                f"this session was started with {detail}; restart clearsight serve with those "
                "options to continue it"
            )
        return transcript, spec, self._instance(transcript.instance_id)

    def ask(self, key: str, query: str) -> None:
        """Send the person's query to the sensor and store the turn with the u the person is
        shown under the session's signal (the session ends with stop reason ``budget`` when
        this was the last turn)."""
        from clearsight.probe.reasoner.prompts import shown_consistency
        from clearsight.probe.transcript import Turn

        query = query.strip()
        if not query:
            raise InputError("the query is empty: type a question for the sensor")
        if len(query) > MAX_QUERY_CHARS:
            raise InputError(f"the query is longer than {MAX_QUERY_CHARS} characters")
        with self._lock:
            transcript, spec, instance = self._open(key)
            index = transcript.rounds + 1
            with self._sensor_lock:
                reply = self.sensor.ask(instance, query, rng_for("serve", key, index))
            signal_rng = rng_for("serve", "signal", key, index)
            shown = shown_consistency(reply, transcript.signal, signal_rng)
            turn = Turn(index=index, raw=query, query=query, reply=reply, shown_u=shown)
            transcript = transcript.with_turn(turn)
            finished = transcript.rounds >= transcript.budget
            if finished:
                transcript = transcript.finish(None, "budget")
            self._store(transcript, spec, finished)

    def commit(self, key: str, letter: str) -> None:
        """Commit the person's answer ``letter``; the session ends and is scored."""
        from clearsight.probe.transcript import Turn

        with self._lock:
            transcript, spec, instance = self._open(key)
            letter = letter.strip().strip("()").upper()
            if letter not in instance.letters:
                raise InputError(
                    f"commit one of the options {', '.join(instance.letters)}; got {letter!r}"
                )
            index = transcript.rounds + 1
            turn = Turn(index=index, raw=commit_text(letter), commit=letter)
            self._store(transcript.with_turn(turn), spec, True)

    def abandon(self, key: str) -> None:
        """The person gives up: the session ends without an answer (stop reason
        ``abandoned``)."""
        with self._lock:
            transcript, spec, _ = self._open(key)
            self._store(transcript.finish(None, "abandoned"), spec, True)
