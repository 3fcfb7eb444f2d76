"""Reports of every protocol's runs: one self-contained HTML page, Markdown and CSV summaries.

:func:`build_report` writes the report of any run — ``report.html``, ``summary.md`` and
``summary.csv`` — by asking the face of the protocol the run's manifest names
(:func:`clearsight.faces.face_of`, :func:`clearsight.store.run_protocol`); it names no protocol
itself. Each protocol composes its own page from its analysis in its own package (the sweep's:
:mod:`clearsight.sweep.page`; grounding's: :mod:`clearsight.grounding.page`; the probe's:
:mod:`clearsight.probe.page`) with the building blocks every page shares
(:mod:`clearsight.pages`). What this package adds to every page is the :func:`appendix`: the
run's re-asks by ``clearsight verify``, rendered by :mod:`clearsight.report.reproducibility`
(which also renders ``clearsight compare``'s page).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from clearsight.faces import face_of, registered
from clearsight.faces.face import Appendix, Measured, ReportRequest
from clearsight.report.reproducibility import reproducibility_html, reproducibility_markdown
from clearsight.store import run_protocol
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.pages.output import ReportPaths

__all__ = ["appendix", "build_report", "run_protocol"]


def build_report(
    run_dir: Path | str,
    out_dir: Path | str | None = None,
    *,
    others: Sequence[Path | str] = (),
    n_boot: int | None = None,
    seed: int | None = None,
    thumbnails: bool = True,
    measured: Callable[[Measured], None] | None = None,
) -> ReportPaths:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` of the run in ``run_dir``,
    whatever protocol made it, and return where they are.

    ``out_dir`` (default the run directory) is where the files go, where the protocol's report
    may go elsewhere; ``others`` are further runs shown beside it, where its report shows them;
    ``n_boot`` and ``seed`` are the bootstrap's (default: the protocol's own); ``thumbnails``
    draws a report's example images; ``measured`` hears what the report's analysis measured,
    where its protocol's report says it (:class:`~clearsight.faces.face.Measured`). An option
    the run's protocol has no use for, or a run of a protocol without a report page, is an
    :class:`InputError` saying so.
    """
    made_by = run_protocol(run_dir)
    face = face_of(made_by) if made_by in registered() else None
    if face is None or face.report is None:
        known = ", ".join(n for n in registered() if face_of(n).report is not None)
        raise InputError(f"{run_dir} is a {made_by} run: reports are of {known} runs")
    run = Path(run_dir)
    request = ReportRequest(
        run,
        None if out_dir is None else Path(out_dir),
        tuple(Path(o) for o in others),
        n_boot,
        seed,
        thumbnails,
        appendix(run),
        measured,
    )
    return face.report(request)


def appendix(run_dir: Path) -> Appendix:
    """What every report adds to its protocol's page: the run's re-asks by ``clearsight
    verify`` (:mod:`clearsight.report.reproducibility`; empty without re-asks)."""
    return Appendix(reproducibility_html(run_dir), tuple(reproducibility_markdown(run_dir)))
