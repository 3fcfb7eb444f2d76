"""Human sessions: a person plays the blind reasoner of the probe protocol through the web page.

A session is one :class:`~clearsight.probe.transcript.Transcript` with reasoner
``human:<name>`` and strategy ``human``, stored in the run's store like a model's, under the
key of its item spec (:func:`~clearsight.probe.play.stored.session_spec`: the transcript's
identifying fields plus the run seed and the judge). Every turn is written as soon as it
happens — an unfinished session is a ``failed`` record ("unfinished: N turns so far"),
replaced by the ``ok`` record when the person commits, gives up or runs out of budget — so a
closed tab or a killed server loses at most the turn in flight, and the session carries on
from its stored turns.

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
(a session can start while the sensor is still loading). :class:`HumanPlay` is the probe's
:class:`~clearsight.faces.serving.SessionHost`: ``clearsight serve`` hosts it through the
probe's face, its pages are :mod:`clearsight.probe.play.pages`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final

from clearsight.faces.serving import ServeSettings, Site, SitePages
from clearsight.probe.play.pages import PlayPages
from clearsight.probe.play.stored import (
    begin_play_run,
    foreign_kinds,
    human_sessions,
    load_instance_set,
    load_session,
    session_spec,
    store_session,
)
from clearsight.probe.play.views import SessionRow, SessionView, commit_text, transcript_view
from clearsight.seeding import content_hash, rng_for
from clearsight.store import DB_NAME
from clearsight.sweep.references.human import human_model
from clearsight.ui.serving import serving_lock
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.probe.instances import Instance
    from clearsight.probe.sensor import Sensor
    from clearsight.probe.specs import Signal, TranscriptSpec
    from clearsight.probe.transcript import Transcript

__all__ = ["MAX_QUERY_CHARS", "STRATEGY", "HumanPlay"]

#: The strategy name of a person's transcripts (models use direct, react, uot, bp).
STRATEGY: Final = "human"
#: Longest query accepted (the sensor sees it verbatim).
MAX_QUERY_CHARS: Final = 2000


class HumanPlay:
    """Runs human sessions in ``run_dir`` with the sensor and instances of ``settings``.

    ``instances`` and ``sensor`` may be given (tests); by default they come from the settings,
    the sensor loaded on the first query.
    """

    title = "human sessions"
    exposes = "add sessions to the run"

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
                self.sensor.load()
        except Exception as exc:  # reported again, in context, by the first query
            print(f"clearsight serve: the sensor did not load yet: {exc}")

    def pages(self, site: Site) -> SitePages:
        """The play page, a session's page and its actions (:mod:`clearsight.probe.play.pages`)."""
        return PlayPages(site, self)

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
        if others := foreign_kinds(self.run_dir):
            return (
                f"this run holds {', '.join(others)} items; human sessions are "
                "stored only in probe runs: serve a probe run directory or a new one to play"
            )
        try:
            if not self.instances():
                return f"the instance set {self.settings.instances!r} is empty"
        except InputError as exc:
            return str(exc)
        return None

    # ------------------------------------------------------------------------------ reading

    def view(self, key: str) -> SessionView | None:
        """The page of session ``key`` as its player sees it (never the gold or the verdict),
        or None if there is no such human session."""
        loaded = load_session(self.run_dir, key)
        if loaded is None:
            return None
        view = transcript_view(key, loaded.transcript, loaded.finished, scored=False)
        return dataclasses.replace(view, instance_id=self.public_id(view.instance_id))

    def sessions(self) -> list[SessionRow]:
        """Every human session of the run, in the order they were started
        (:func:`~clearsight.probe.play.stored.human_sessions`)."""
        return human_sessions(self.run_dir)

    # ------------------------------------------------------------------------------ writing

    def prepare(self) -> None:
        """Create the run's store with its manifest where sessions can be played and there is
        none yet. The app calls it once, before the server accepts a request
        (:func:`~clearsight.ui.app.create_app`): a store created by the first session was read
        half-made by the pages other players asked for at the same time."""
        if not (self.run_dir / DB_NAME).is_file() and self.blocked_reason() is None:
            begin_play_run(self.run_dir, self.settings)

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
            return store_session(self.run_dir, transcript, spec, finished=False)

    def _open(self, key: str) -> tuple[Transcript, TranscriptSpec, Instance]:
        """The unfinished session ``key`` this server can continue (KeyError if none), with the
        spec its turns are stored under."""
        from clearsight.probe.specs import TranscriptSpec

        loaded = load_session(self.run_dir, key)
        if loaded is None:
            raise KeyError(key)
        if loaded.finished:
            raise InputError("this session has ended; start a new one from the play page")
        transcript, spec = loaded.transcript, TranscriptSpec.from_json(loaded.spec)
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
            store_session(self.run_dir, transcript, spec, finished)

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
            store_session(self.run_dir, transcript.with_turn(turn), spec, True)

    def abandon(self, key: str) -> None:
        """The person gives up: the session ends without an answer (stop reason
        ``abandoned``)."""
        with self._lock:
            transcript, spec, _ = self._open(key)
            store_session(self.run_dir, transcript.finish(None, "abandoned"), spec, True)
