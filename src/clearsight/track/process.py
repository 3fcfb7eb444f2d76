"""The trackers' own process: every call on a tracker's client is made there
(:class:`TrackerProcess`, :func:`serve`), never in the process that runs and reports.

A tracker's client is Python: MLflow's, W&B's and trackio's requests, their files, their
tables' images. Made in a thread of the run's process, that work held the interpreter the run
and its report need (one of them at a time runs Python), and a run paid for it nearly second
for second even where a core stood idle. In a process of their own (as W&B's own clients do
with their service process) the calls cost the run only the sending of what they carry.

The session's sender thread starts the process (``python -c``, with the parent's import path:
no module of the parent is imported again) and sends it one call at a time over a socket, each
a :data:`Message` pickled; the process makes the call on each tracker it names and answers
with the trackers that failed, each with its reason: a call that fails is made once more (a
lost request, a race inside the tracker's own client) and a second failure drops the tracker.
The parent prints the warnings, above its progress bar. What the trackers print goes to the
parent's standard error: a run command's output stays its own. An interrupt of the terminal
is the parent's to handle (it ends the trackers' runs as failed); where the parent is gone,
the process ends every run it had begun as failed and exits.
"""

from __future__ import annotations

import contextlib
import importlib
import pickle
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from clearsight.track.names import TRACKERS, tracker_spec

if TYPE_CHECKING:
    from clearsight.faces.sample import SampledRow
    from clearsight.track.content import StepMetric

__all__ = ["Message", "Sink", "TrackerProcess", "serve"]

#: One call: the sink's method, its arguments and the trackers it is made on.
Message = tuple[str, tuple[Any, ...], tuple[str, ...]]
#: What starts the process: the parent's import path first, then :func:`serve` on the socket.
_START = (
    "import sys; sys.path[:0] = sys.argv[2:]; "
    "from clearsight.track.process import serve; serve(int(sys.argv[1]))"
)


class Sink(Protocol):
    """One tracker run: begun with a name and parameters, sent metrics and files, ended."""

    def begin(self, name: str, params: Mapping[str, str]) -> None:
        """Begin the tracker's run named ``name`` with ``params`` (the tracker's own
        configuration decides where: its server, project, mode)."""

    def steps(self, metrics: Sequence[StepMetric]) -> None:
        """Log ``metrics`` (the counts of one or more units, each at its step) in one call."""

    def numbers(self, steps: Sequence[StepMetric], summary: Mapping[str, float]) -> None:
        """Log the report's step metrics and summary metrics."""

    def files(self, paths: Sequence[Path]) -> None:
        """Log the report's files as artifacts."""

    def table(self, sample: Sequence[SampledRow]) -> None:
        """Log the sample of items as the tracker's table (with their images where shown)."""

    def end(self, ok: bool) -> None:
        """End the run, finished or failed."""


class _Channel:
    """Pickled objects, one after another, over a stream socket (pickle knows where each
    ends)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.stream = sock.makefile("rwb")

    def send(self, value: object) -> None:
        pickle.dump(value, self.stream, protocol=pickle.HIGHEST_PROTOCOL)
        self.stream.flush()

    def receive(self) -> Any:
        """The next object (EOFError: the other end closed)."""
        return pickle.load(self.stream)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.stream.close()
        self.sock.close()


class TrackerProcess:
    """The parent's end: the process started (:meth:`start`), a call made in it (:meth:`call`),
    the process closed (:meth:`close`)."""

    def __init__(self, process: subprocess.Popen[bytes], channel: _Channel) -> None:
        self.process = process
        self.channel = channel

    @classmethod
    def start(cls) -> TrackerProcess:
        """The process started with this interpreter and import path (OSError: it could not
        start)."""
        ours, theirs = socket.socketpair()
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _START, str(theirs.fileno()), *sys.path],
                stdin=subprocess.DEVNULL,
                stdout=_stderr_fd(),
                pass_fds=(theirs.fileno(),),
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return cls(process, _Channel(ours))

    def call(self, message: Message) -> dict[str, str]:
        """Make the call ``message`` describes in the process; the trackers it dropped, each
        with its reason (every tracker, where the process has ended)."""
        try:
            self.channel.send(message)
            failed: dict[str, str] = self.channel.receive()
        except (OSError, EOFError, pickle.PickleError) as exc:
            code = self.process.poll()
            ended = "ended" if code is None else f"ended with exit code {code}"
            reason = f"the trackers' process {ended} ({type(exc).__name__}: {exc})"
            return dict.fromkeys(message[2], reason)
        return failed

    def close(self) -> None:
        """Tell the process to exit (every run it began has ended, or is ended as failed) and
        go on: its exit (its interpreter's and the trackers' clients' own ending, a third of a
        second) is waited for by a thread of its own, not by the run."""
        self.channel.close()
        reaper = threading.Thread(target=self.process.wait, name="trackers-exit", daemon=True)
        reaper.start()  # daemon: a tracker's client that never ends holds no exit


def _stderr_fd() -> int:
    """The parent's standard error as a file descriptor (2 where it has none of its own, as
    under a test runner's capture)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return 2


def _sink(spec: str) -> Sink:
    """The sink of the tracker ``spec`` names (made with its project where it names one)."""
    name, project = tracker_spec(spec)
    module, _, attr = TRACKERS[name].partition(":")
    kind = getattr(importlib.import_module(module), attr)
    made: Sink = kind() if project is None else kind(project)
    return made


def _made(sinks: dict[str, Sink], tracker: str, method: str, args: tuple[Any, ...]) -> str | None:
    """``method(*args)`` on the tracker's sink (``begin``: the sink made first, the call made
    once; any other: made once more where it fails: a lost request, or a race inside the
    tracker's own client, as MLflow 3.17's telemetry thread removing an environment variable
    its requests read); None, or why the tracker is dropped."""
    try:
        if method == "begin":
            sinks[tracker] = _sink(tracker)
            sinks[tracker].begin(*args)
            return None
        try:
            getattr(sinks[tracker], method)(*args)
        except Exception:  # once more, then the tracker is dropped
            getattr(sinks[tracker], method)(*args)
    except Exception as exc:  # any failure of a tracker: the run goes on without it
        sinks.pop(tracker, None)
        return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    if method == "end":
        sinks.pop(tracker)
    return None


def serve(fd: int) -> None:
    """The process's loop: each call received on the socket ``fd`` made on the trackers it
    names, answered with those that failed; at the end of the parent's calls, every run still
    open ended as failed (the parent is gone without ending it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal's interrupt is the parent's
    channel = _Channel(socket.socket(fileno=fd))
    sinks: dict[str, Sink] = {}
    while True:
        try:
            method, args, trackers = channel.receive()
        except EOFError:
            break
        failed = {}
        for tracker in trackers:
            if (reason := _made(sinks, tracker, method, args)) is not None:
                failed[tracker] = reason
        try:
            channel.send(failed)
        except OSError:  # the parent is gone
            break
    for tracker in list(sinks):
        _made(sinks, tracker, "end", (False,))
    channel.close()
