"""Trackers as a run uses them: :class:`Session`, one tracker run per tracker asked for.

A tracker is optional (an extra of its own); asking for one whose package is missing is bad
input, said before anything runs (:func:`open_session`). Once a run goes, a tracker that is down
or refuses a call costs one warning line and is dropped for the rest of the run: the run and
its records go on unaffected, and ``clearsight track RUN --to NAME`` sends the finished run
later. During a run the writer's process tells the session of each unit it committed
(:meth:`Session.committed`): the records counted so far are sent as one call per unit and
tracker. Each tracker's run begins at the first unit, once the run's manifest is stored, with
the manifest as its parameters; after the run (:meth:`Session.finish`) go the report's numbers
and its files (:mod:`clearsight.track.content`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.store import Record
    from clearsight.track.content import Content, StepMetric

__all__ = ["TRACKERS", "Session", "Sink", "open_session"]

#: Tracker name -> the class that sends to it (``module:attribute``, imported when asked); the
#: name is also its package's and its extra's (``pip install 'clearsight[mlflow]'``).
TRACKERS: dict[str, str] = {
    "mlflow": "clearsight.track.to_mlflow:MlflowSink",
    "trackio": "clearsight.track.to_trackio:TrackioSink",
    "wandb": "clearsight.track.to_wandb:WandbSink",
}


class Sink(Protocol):
    """One tracker run: begun with a name, sent metrics, parameters and files, ended."""

    def begin(self, name: str, params: Mapping[str, str]) -> None:
        """Begin the tracker's run named ``name`` with ``params`` (the tracker's own
        configuration decides where: its server, project, mode)."""

    def steps(self, metrics: Sequence[StepMetric]) -> None:
        """Log ``metrics`` in one call (each at its step)."""

    def finish(self, content: Content) -> None:
        """Log the finished run's step and summary metrics and artifacts."""

    def end(self, ok: bool) -> None:
        """End the run, finished or failed."""


def check_trackers(names: Sequence[str]) -> None:
    """InputError for a name that is no tracker, or whose package is not installed (naming
    the extra that installs it)."""
    for name in names:
        if name not in TRACKERS:
            raise InputError(f"no tracker {name!r}: known are {', '.join(TRACKERS)}")
        if importlib.util.find_spec(name) is None:
            raise InputError(
                f"the {name} tracker is not installed: pip install 'clearsight[{name}]'"
            )


def _sink(name: str) -> Sink:
    module, _, attr = TRACKERS[name].partition(":")
    made: Sink = getattr(importlib.import_module(module), attr)()
    return made


class Session:
    """The tracker runs of one clearsight run in ``run_dir`` (see the module docstring); with
    no trackers, every call does nothing."""

    def __init__(self, names: Sequence[str], run_dir: Path) -> None:
        self.run_dir = run_dir
        self.live: dict[str, Sink] = {}
        self.dropped: list[str] = []
        self._names = list(dict.fromkeys(names))
        self._begun = False
        self._counts = {"records_ok": 0, "records_failed": 0}
        self._units = 0

    def _begin(self) -> None:
        """Begin each tracker's run (once), named after the run directory, the manifest as its
        parameters."""
        from clearsight.store import run_manifest
        from clearsight.track.content import params_of

        self._begun = True
        name, params = self.run_dir.resolve().name, params_of(run_manifest(self.run_dir))
        for tracker in self._names:
            self._guard(tracker, lambda sink: sink.begin(name, params), make=True)

    def committed(self, records: list[Record]) -> None:
        """A unit's records are stored: send the counts so far, one call per tracker."""
        from clearsight.track.content import StepMetric

        if not self._begun:
            self._begin()
        self._units += 1
        for record in records:
            self._counts["records_ok" if record.status == "ok" else "records_failed"] += 1
        metrics = [StepMetric(k, float(v), self._units) for k, v in self._counts.items()]
        for tracker in list(self.live):
            self._guard(tracker, lambda sink: sink.steps(metrics))

    def on_commit(self) -> Callable[[list[Record]], None] | None:
        """:meth:`committed` where a tracker was asked for (None: the run needs no hook)."""
        return self.committed if self._names else None

    def finish(self, content: Content) -> None:
        """Send the finished run's numbers and files and end each tracker's run."""
        if not self._begun:
            self._begin()
        for tracker in list(self.live):
            self._guard(tracker, lambda sink: sink.finish(content))
        self.end(ok=True)

    def end(self, ok: bool) -> None:
        """End each tracker's run (a run that failed as failed)."""
        for tracker in list(self.live):
            self._guard(tracker, lambda sink: sink.end(ok))
        self.live.clear()

    def _guard(self, tracker: str, call: Callable[[Sink], None], make: bool = False) -> None:
        """``call`` on the tracker's sink; an error drops the tracker with one warning line."""
        from tqdm import tqdm

        try:
            if make:
                self.live[tracker] = _sink(tracker)
            call(self.live[tracker])
        except Exception as exc:  # any failure of a tracker: the run goes on without it
            self.live.pop(tracker, None)
            self.dropped.append(tracker)
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            tqdm.write(  # above a progress bar that is drawn, not inside it
                f"warning: tracker {tracker} dropped ({reason}); the run goes on, "
                f"`clearsight track RUN --to {tracker}` sends it later",
                file=sys.stderr,
            )


def open_session(names: Sequence[str], run_dir: Path) -> Session:
    """A :class:`Session` of the trackers ``names`` for the run in ``run_dir`` (InputError,
    before anything is written, for a missing tracker)."""
    check_trackers(names)
    return Session(names, run_dir)
