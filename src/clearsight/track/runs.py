"""A run's content for the trackers, asked of its protocol's face only
(:func:`clearsight.faces.face_of`): :func:`run_content`, and :func:`track_run`, what
``clearsight track RUN --to NAME`` does for a finished run.

The numbers are the report's own where the report says what it measured (the listener of
:class:`~clearsight.faces.face.ReportRequest`); a protocol whose report does not say it is asked
for its card section (card numbers, no per-level points) with the card's default bootstrap.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from clearsight.faces import face_of, registered
from clearsight.faces.face import Measured
from clearsight.store import run_manifest, run_protocol
from clearsight.track.content import Content, content_of
from clearsight.track.session import check_trackers, open_session

__all__ = ["REPORT_FILES", "run_content", "track_run"]

#: The files every protocol's report writes into its run directory (the artifacts).
REPORT_FILES = ("report.html", "summary.md", "summary.csv")


def _card_measured(run_dir: Path) -> Measured | None:
    """The card section's numbers of a run whose report said nothing (None: no card)."""
    from clearsight.card.config import CardConfig

    protocol = run_protocol(run_dir)
    face = face_of(protocol) if protocol in registered() else None
    if face is None or face.card is None:
        return None
    defaults = CardConfig()
    section = face.card(run_dir, defaults.n_boot, defaults.seed)
    return Measured({"": section.numbers, **section.by_model})


def run_content(run_dir: Path, heard: Measured | None) -> Content:
    """What the run in ``run_dir`` sends: its manifest, ``heard`` (what its report measured;
    None: its card's numbers) and the report files it holds."""
    measured = heard if heard is not None else _card_measured(run_dir)
    files = [run_dir / name for name in REPORT_FILES if (run_dir / name).is_file()]
    return content_of(run_manifest(run_dir), measured, files)


def track_run(run_dir: Path, trackers: Sequence[str]) -> tuple[Content, list[str]]:
    """Send the finished run in ``run_dir`` to each of ``trackers``: its report written again
    (where its protocol has one) and what it measured; returns what was sent and the trackers
    that failed (each said in a warning line). InputError for a missing tracker or a directory
    without a run, before anything is sent or written."""
    from clearsight.report import build_report

    check_trackers(trackers)
    protocol = run_protocol(run_dir)  # InputError: no run here
    heard: list[Measured] = []
    if protocol in registered() and face_of(protocol).report is not None:
        build_report(run_dir, measured=heard.append)
    content = run_content(run_dir, heard[0] if heard else None)
    session = open_session(trackers, run_dir)
    session.finish(content)
    return content, session.dropped
