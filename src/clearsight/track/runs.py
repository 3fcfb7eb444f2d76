"""``clearsight track RUN --to NAME``: a finished run sent to trackers (:func:`track_run`), its
numbers asked of its protocol's face only (:func:`clearsight.faces.face_of`).

The report is written again and tells the trackers what its analysis measured (the listener of
:class:`~clearsight.faces.face.ReportRequest`); a protocol whose report does not say it is sent
its card section's numbers (:func:`~clearsight.track.session.card_measured`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from clearsight.faces import face_of, registered
from clearsight.store import run_protocol
from clearsight.track.content import Content
from clearsight.track.session import SAMPLE_ROWS, check_trackers, open_session

__all__ = ["track_run"]


def track_run(
    run_dir: Path, trackers: Sequence[str], sample: int = SAMPLE_ROWS
) -> tuple[Content, list[str]]:
    """Send the finished run in ``run_dir`` to each of ``trackers``: its report written again
    (where its protocol has one), what it measured and a table of ``sample`` items; returns
    what was sent and the trackers that failed (each said in a warning line). InputError for a
    missing tracker or a directory without a run, before anything is sent or written."""
    from clearsight.report import build_report

    check_trackers(trackers)
    protocol = run_protocol(run_dir)  # InputError: no run here
    session = open_session(trackers, run_dir, sample)
    session.ran()  # the sample's table drawn and sent while the report is written
    try:
        if protocol in registered() and face_of(protocol).report is not None:
            build_report(run_dir, measured=session.hear)
    except BaseException:
        session.end(ok=False)
        raise
    return session.finish(), session.dropped
