"""Trackers as a run uses them: :class:`Session`, one tracker run per tracker asked for.

A tracker is optional (an extra of its own); asking for one whose package is missing is bad
input, said before anything runs (:func:`open_session`). Once a run goes, a tracker that is down
or refuses a call costs one warning line and is dropped for the rest of the run: the run and
its records go on unaffected, and ``clearsight track RUN --to NAME`` sends the finished run
later.

Nothing waits for a tracker while the run works: every call to a tracker is made, in order,
in the trackers' own process (:mod:`clearsight.track.process`), which one sender thread of the
writer's process starts and feeds. During a run the writer tells the session of each unit it
committed (:meth:`Session.committed`): the records counted so far, at most one call per unit
and tracker (units committed while the sender is busy go in its next call, each at its own
step). Each tracker's run begins at the first unit, once the run's manifest is stored, with
the manifest as its parameters. The report's numbers are sent as soon as its analysis says
what it measured (:meth:`Session.hear`: while its pages are drawn) and its files after it
(:meth:`Session.finish`, which waits for the sender to finish). Once every tracker is dropped,
nothing more is drawn or sent.

The table of a stratified sample of items with the image each was shown
(:func:`clearsight.faces.sample.sample_rows`, ``sample`` rows, 0: none) costs the run no
drawing: its items are drawn before each stage runs (:meth:`Session.keep`), the units hand back
the pixels they sent for those items with their records, the session keeps them as they are
committed, and once the units are done (:meth:`Session.ran`) the sender encodes them and sends
the table while the report is written. Only an item the run did not keep (one that failed, an
item of a resumed run's earlier start, every item of ``clearsight track``) is drawn again.
"""

from __future__ import annotations

import importlib.util
import queue
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clearsight.validate import InputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from clearsight.faces.face import Measured, ProtocolFace
    from clearsight.faces.sample import SampledRow
    from clearsight.store import Record, RunStore
    from clearsight.track.content import Content, StepMetric

from clearsight.track.names import SAMPLE_ROWS, SAMPLE_SEED, TRACKERS, tracker_spec
from clearsight.track.process import Sink

__all__ = [
    "SAMPLE_ROWS",
    "SAMPLE_SEED",
    "TRACKERS",
    "Session",
    "Sink",
    "open_session",
    "sampled_rows",
]

#: The files every protocol's report writes into its run directory (the artifacts).
REPORT_FILES = ("report.html", "summary.md", "summary.csv")


def check_trackers(specs: Sequence[str]) -> None:
    """InputError for a tracker asked for wrongly (:func:`~clearsight.track.names.tracker_spec`),
    one whose package is not installed (naming the extra that installs it), or a trackio
    project trackio itself refuses (its reserved names)."""
    for spec in specs:
        try:
            name, project = tracker_spec(spec)
        except ValueError as exc:
            raise InputError(f"tracker {spec!r}: {exc}") from None
        if importlib.util.find_spec(name) is None:
            raise InputError(
                f"the {name} tracker is not installed: pip install 'clearsight[{name}]'"
            )
        if project is not None:
            from trackio.sqlite_storage import SQLiteStorage

            try:
                SQLiteStorage.validate_project_name(project)
            except ValueError as exc:
                raise InputError(f"tracker {spec!r}: {exc}") from None


#: A call on the trackers: a sink's method and its arguments (None: nothing to send).
_Call = tuple[str, tuple[Any, ...]] | None


class Session:
    """The tracker runs of one clearsight run in ``run_dir`` (see the module docstring), one
    per tracker ``names`` asks for (``NAME`` or ``trackio:PROJECT``); with no trackers, every
    call does nothing; ``sample``: the rows of the sample's table."""

    def __init__(self, names: Sequence[str], run_dir: Path, sample: int = SAMPLE_ROWS) -> None:
        self.run_dir = run_dir
        self.sample = sample
        #: The trackers whose runs have begun and still take calls, and those dropped.
        self.live: list[str] = []
        self.dropped: list[str] = []
        self._names = list(dict.fromkeys(names))
        self._params: dict[str, str] = {}
        self._sent: Content | None = None
        self._counts = {"records_ok": 0, "records_failed": 0}
        self._units = 0
        self._pending: list[StepMetric] = []
        #: The pixels the run kept of the sample's items (by key), the table drawn from them
        #: (None: not queued yet) and what went wrong drawing it (raised by :meth:`finish`).
        self._kept: dict[str, npt.NDArray[np.uint8]] = {}
        #: Their PNGs, encoded by the sender as they were kept (while the run goes on).
        self._pngs: dict[str, bytes] = {}
        #: The sample's keys drawn before its stage ran (None: not drawn; see :meth:`keep`).
        self._planned: tuple[str, ...] | None = None
        self._sample: tuple[SampledRow, ...] | None = None
        self._failed: Exception | None = None
        self._lock = threading.Lock()
        # what the sender is given: a job (made into the call on the trackers when its turn
        # comes, where one is still live) and whether it begins their runs; None: stop
        self._jobs: queue.Queue[tuple[Callable[[], _Call], bool] | None] = queue.Queue()
        self._sender: threading.Thread | None = None

    def _begin(self) -> None:
        """Begin each tracker's run (once), named after the run directory, the manifest as its
        parameters; start the sender."""
        from clearsight.store import run_manifest
        from clearsight.track.content import params_of

        name, self._params = self.run_dir.resolve().name, params_of(run_manifest(self.run_dir))
        self._sender = threading.Thread(target=self._send, name="clearsight-trackers")
        self._sender.start()
        params = self._params
        self._jobs.put((lambda: ("begin", (name, params)), True))

    def _send(self) -> None:
        """The sender thread: the trackers' process started, then each job's call made there
        on every live tracker, in order, until told to stop (a job is not even made once every
        tracker is dropped); the process closed."""
        from clearsight.track.process import TrackerProcess

        process: TrackerProcess | None = None
        try:
            while (item := self._jobs.get()) is not None:
                job, begins = item
                trackers = tuple(self._names if begins else self.live)
                if not trackers or (call := job()) is None:
                    continue
                try:
                    process = process or TrackerProcess.start()
                except OSError as exc:
                    reason = f"the trackers' process did not start: {exc}"
                    self._drop(dict.fromkeys(trackers, reason))
                    continue
                failed = process.call((*call, trackers))
                self.live += [t for t in trackers if begins and t not in failed]
                self._drop(failed)
        finally:  # the process told to end its runs (as failed, where no end was sent) and exit
            if process is not None:
                process.close()

    def _queue(self, call: _Call) -> None:
        """``call`` on every live tracker, in its turn (the first call begins the runs)."""
        self._queue_job(lambda: call)

    def _queue_job(self, job: Callable[[], _Call]) -> None:
        """The call ``job`` makes in the sender's turn on every live tracker."""
        if self._sender is None:
            self._begin()
        self._jobs.put((job, False))

    def committed(self, records: list[Record]) -> None:
        """A unit's records are stored: queue the counts so far (one call per unit, or fewer
        where the sender is behind)."""
        from clearsight.track.content import StepMetric

        self._units += 1
        kept = []
        for record in records:
            self._counts["records_ok" if record.status == "ok" else "records_failed"] += 1
            if record.shown is not None:
                self._kept[record.key] = record.shown
                kept.append(record.key)
        if self._sender is None:
            self._begin()
        if kept:  # encoded in the sender's turn, while the run goes on
            self._jobs.put((lambda: self._encode(kept), False))
        with self._lock:
            first = not self._pending
            self._pending += [StepMetric(k, float(v), self._units) for k, v in self._counts.items()]
        if first:  # one job takes every unit's counts queued until its turn
            self._jobs.put((self._take, False))

    def _encode(self, keys: Sequence[str]) -> _Call:
        """The kept images of ``keys`` encoded as PNGs (OpenCV's encoder lets the run's thread
        go on meanwhile); nothing to send."""
        from clearsight.faces.sample import png_bytes

        for key in keys:
            self._pngs[key] = png_bytes(self._kept[key])
        return None

    def _take(self) -> _Call:
        """The call that sends the counts not sent yet (taken now, in the sender's turn)."""
        with self._lock:
            batch, self._pending = self._pending, []
        return "steps", (batch,)

    def on_commit(self) -> Callable[[list[Record]], None] | None:
        """:meth:`committed` where a tracker was asked for (None: the run needs no hook)."""
        return self.committed if self._names else None

    def keep(self, store: RunStore, kind: str) -> frozenset[str]:
        """The keys of the sample's items among the stored items of a stage of ``kind``, drawn
        before it runs (:func:`~clearsight.faces.sample.planned_keys`), whose images its units
        hand back; none where no table is sent, the face shows no images or draws its sample
        from another kind."""
        from clearsight.faces.sample import planned_keys

        face = _face(self.run_dir) if self._names and self.sample else None
        if face is None or face.reask is None or face.shown is None or face.reask.kind != kind:
            return frozenset()
        self._planned = planned_keys(store, face.reask, self.sample, SAMPLE_SEED)
        return frozenset(self._planned)

    def on_keep(self) -> Callable[[RunStore, str], frozenset[str]] | None:
        """:meth:`keep` where a tracker was asked for (None: the units keep nothing)."""
        return self.keep if self._names else None

    def ran(self) -> None:
        """The run's units are done: the sample's table queued (once), drawn in the sender's
        turn from what the run kept, so that it is sent while the report is written."""
        if not self._names or self._sample is not None:
            return
        self._sample = ()
        if self.sample:
            self._queue_job(self._table)

    def _table(self) -> _Call:
        """The call that sends the sample's table, drawn now (in the sender's turn)."""
        try:
            kept, pngs, planned = self._kept, self._pngs, self._planned
            self._sample = tuple(sampled_rows(self.run_dir, self.sample, kept, planned, pngs))
        except Exception as exc:  # not the trackers': raised again by finish
            self._failed = exc
        sample, self._kept, self._pngs = self._sample, {}, {}
        return ("table", (sample,)) if sample else None

    def hear(self, measured: Measured) -> None:
        """What the report's analysis measured: its numbers, queued at once."""
        from clearsight.track.content import content_of

        if not self._names:
            return
        content = content_of({}, measured, ())
        self._sent = content
        self._queue(("numbers", (content.steps, content.summary)))

    def finish(self) -> Content:
        """Send the sample's table and the report's files (and, where the report said nothing
        it measured, the card's numbers), end each tracker's run and wait for the sender; what
        was sent."""
        from clearsight.track.content import Content

        if not self._names:
            return Content({})
        self.ran()
        if self._sent is None and (measured := card_measured(self.run_dir)) is not None:
            self.hear(measured)
        files = tuple(self.run_dir / n for n in REPORT_FILES if (self.run_dir / n).is_file())
        self._queue(("files", (files,)))
        self.end(ok=True)
        if self._failed is not None:
            raise self._failed
        sent = self._sent or Content({})
        return Content(self._params, sent.steps, sent.summary, files, self._sample or ())

    def end(self, ok: bool) -> None:
        """End each tracker's run (a run that failed as failed) and wait for the sender."""
        if self._sender is None:
            return
        self._jobs.put((lambda: ("end", (ok,)), False))
        self._jobs.put(None)
        self._sender.join()
        self.live.clear()

    def _drop(self, failed: Mapping[str, str]) -> None:
        """Drop each tracker of ``failed`` with one warning line saying why (its reason): the
        run goes on without it."""
        from tqdm import tqdm

        for tracker, reason in failed.items():
            if tracker in self.live:
                self.live.remove(tracker)
            self.dropped.append(tracker)
            tqdm.write(  # above a progress bar that is drawn, not inside it
                f"warning: tracker {tracker} dropped ({reason}); the run goes on, "
                f"`clearsight track RUN --to {tracker}` sends it later",
                file=sys.stderr,
            )


def _face(run_dir: Path) -> ProtocolFace | None:
    """The face of the run's protocol (None: a protocol no face is registered for)."""
    from clearsight.faces import face_of, registered
    from clearsight.store import run_protocol

    protocol = run_protocol(run_dir)
    return face_of(protocol) if protocol in registered() else None


def card_measured(run_dir: Path) -> Measured | None:
    """The card section's numbers of a run whose report said nothing of what it measured, with
    the card's default bootstrap (None: its protocol has no card)."""
    from clearsight.faces.card_run import CardConfig
    from clearsight.faces.face import Measured

    face = _face(run_dir)
    if face is None or face.card is None:
        return None
    defaults = CardConfig()
    section = face.card(run_dir, defaults.n_boot, defaults.seed)
    return Measured({"": section.numbers, **section.by_model})


def sampled_rows(
    run_dir: Path,
    n: int,
    kept: Mapping[str, npt.NDArray[np.uint8]] | None = None,
    planned: Sequence[str] | None = None,
    pngs: Mapping[str, bytes] | None = None,
) -> list[SampledRow]:
    """The sample's ``n`` rows (seed :data:`SAMPLE_SEED`), drawn through the run's face (none:
    its protocol has no face, no rows or nothing to draw by), their images those the run
    ``kept`` where it kept them (``pngs``: those already encoded); ``planned``: the draw made
    before the run, if any (:func:`~clearsight.faces.sample.sample_rows`)."""
    from clearsight.faces.sample import sample_rows

    face = _face(run_dir)
    if face is None or face.rows is None or n == 0:
        return []
    return sample_rows(run_dir, face, n, SAMPLE_SEED, kept=kept, pngs=pngs, planned=planned)


def open_session(names: Sequence[str], run_dir: Path, sample: int = SAMPLE_ROWS) -> Session:
    """A :class:`Session` of the trackers ``names`` for the run in ``run_dir``, its table
    ``sample`` rows (InputError, before anything is written, for a missing tracker)."""
    check_trackers(names)
    return Session(names, run_dir, sample)
