"""``clearsight export``: a finished run's files in one of :data:`FORMATS`, made in memory
from its protocol's face, then written atomically under the export folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clearsight.export._details import details_files
from clearsight.export._eee import eee_files
from clearsight.export._eval_results import eval_results_files
from clearsight.export._files import Files, write_files
from clearsight.export._numbers import run_numbers
from clearsight.export._source import ExportRun, finished_run
from clearsight.validate import InputError

__all__ = ["FORMATS", "ExportOptions", "export_files", "export_run"]

#: The formats of ``clearsight export --format``.
FORMATS = ("parquet", "eval-results", "eee")


@dataclass(frozen=True)
class ExportOptions:
    """How numbers are had and named: the bootstrap's ``n_boot`` draws and ``seed`` (those of
    a card, :class:`~clearsight.card.CardConfig`), the ``model`` exported (None: every model of
    the run; a one-model run whose numbers name none needs it) and ``hub``, the Hub dataset
    ``ORG/NAME`` that holds the run's details (the results' source; None: none yet); ``images``:
    the rows of the details' sample shown with their image (where the protocol shows images)."""

    n_boot: int = 1000
    seed: int = 0
    model: str | None = None
    hub: str | None = None
    images: int = 64


def export_files(run: ExportRun, fmt: str, options: ExportOptions) -> Files:
    """The files of ``run`` in format ``fmt`` (:data:`FORMATS`)."""
    if fmt == "parquet":
        return details_files(run, options.images, options.seed)
    numbers = run_numbers(run, options.n_boot, options.seed, options.model)
    make = eval_results_files if fmt == "eval-results" else eee_files
    return make(run, numbers, options.hub, options.n_boot)


def export_run(run_dir: Path, fmt: str, out: Path | None, options: ExportOptions) -> list[Path]:
    """Export the run in ``run_dir`` as ``fmt`` into ``out`` (None: ``RUN/export``); the files
    written. Bad input (an unknown format, no run, an unfinished run) is an InputError before
    anything is written."""
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}: give one of {', '.join(FORMATS)}")
    run = finished_run(run_dir)
    files = export_files(run, fmt, options)
    return write_files(run_dir / "export" if out is None else out, files)
