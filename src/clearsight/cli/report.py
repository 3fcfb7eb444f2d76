"""``clearsight report RUN``: the report of a run of any protocol, chosen by the protocol its
manifest names (:func:`clearsight.report.build_report`); what every run command prints after
its run (:func:`write_report`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from clearsight.faces.face import Measured
    from clearsight.grounding import TgsBench


def report(
    run: Annotated[Path, typer.Argument(help="A run directory (of any protocol).")],
    others: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Further grounding or probe runs shown beside it (other models or methods; "
            "for the probe, runs with another sensor or K: Tables 4 and 6)."
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Print the whole summary.md, not its headline.")
    ] = False,
) -> None:
    """Write report.html, summary.md and summary.csv of a run and print its headline.

    A finished or partial run of the sweep, trajectory grounding or the probe (a benchmark
    build's stage 1 included) — any run whose protocol has a report; for a TGS-Bench build, the
    pool's retention. What each number
    means: docs/methods.md (`clearsight docs methods`)."""
    from clearsight.faces import face_of, registered
    from clearsight.store import run_protocol

    made_by = run_protocol(run)
    face = face_of(made_by) if made_by in registered() else None
    if face is not None and face.report is None and face.describe is not None:
        typer.echo(face.describe(run))
        return
    write_report(run, others or (), verbose=verbose)


def write_report(
    run: Path,
    others: tuple[Path, ...] | list[Path] = (),
    *,
    verbose: bool = False,
    measured: Callable[[Measured], None] | None = None,
) -> None:
    """Write the report of ``run`` (with ``others`` beside it), print its headline (the whole
    summary.md with ``verbose``, or where it has no headline) and where the files are;
    ``measured`` hears what the report's analysis measured (an experiment tracker)."""
    from clearsight.pages.output import markdown_section
    from clearsight.report import build_report

    paths = build_report(run, others=others, measured=measured)
    summary = paths.summary_md.read_text(encoding="utf-8").rstrip()
    headline = "" if verbose else markdown_section(summary, "Headline")
    typer.echo(headline or summary)
    if headline:
        typer.echo(f"summary: {paths.summary_md} (--verbose prints it)")
    typer.echo(f"report: {paths.html}")


def print_bench(bench: TgsBench, written: tuple[Path, Path] | None = None) -> None:
    """A TGS-Bench pool's retention, rejection reasons, injectors and (``written``) the files it
    was written to (:func:`clearsight.grounding.face.bench_summary`)."""
    from clearsight.grounding.face import bench_summary

    typer.echo(bench_summary(bench, written))
