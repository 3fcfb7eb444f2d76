"""Reports of every protocol's runs: one self-contained HTML page, Markdown and CSV summaries.

:func:`build_report` writes the report of any run — ``report.html``, ``summary.md`` and
``summary.csv`` — choosing the protocol's own report from the protocol the run's manifest names
(:func:`run_protocol`): the sweep's (``clearsight.sweep.build_sweep_report``), trajectory
grounding's (``clearsight.grounding.build_grounding_report``, other runs beside it) or the
probe's (``clearsight.probe.build_probe_report``, also for a benchmark build's stage-1 run).
Rendering only: each protocol's numbers come from its own package's analysis. The renderers
are this package's modules: :mod:`clearsight.report.sweep` (the page's sections in
:mod:`clearsight.report.sections`, the qualitative examples in :mod:`clearsight.report.examples`,
the guard's section in :mod:`clearsight.report.guard`), :mod:`clearsight.report.grounding`,
:mod:`clearsight.report.probe`, the page's building blocks in :mod:`clearsight.report.html`, the
figures in :mod:`clearsight.report.plots` (drawing given numbers), the labels in
:mod:`clearsight.report.labels`, and the one layout of the three files in
:mod:`clearsight.report.output`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.report.output import ReportPaths

__all__ = ["BUILD_BENCH", "REPORTED_AS", "build_report", "run_protocol"]

#: The protocol a run's manifest names -> the protocol whose report it gets (a benchmark
#: build's stage 1 stores sensor samples the probe report reads: Fig. 2).
REPORTED_AS: Final = {
    "sweep": "sweep",
    "grounding": "grounding",
    "probe": "probe",
    "probe.build": "probe",
}

#: A TGS-Bench build's run: its result is the bench file, not a report.
BUILD_BENCH: Final = "grounding.build-bench"

#: Bootstrap draws and seed of a sweep report unless told (a grounding report uses its run's).
SWEEP_N_BOOT, SWEEP_SEED = 2000, 0


def run_protocol(run_dir: Path | str) -> str:
    """The protocol that made the run in ``run_dir``, as its manifest names it (``sweep`` for a
    run whose manifest names none: runs stored before manifests named their protocol). A
    directory without a run is an :class:`InputError`."""
    return str(_manifest(run_dir).get("protocol") or "sweep")


def build_report(
    run_dir: Path | str,
    out_dir: Path | str | None = None,
    *,
    others: Sequence[Path | str] = (),
    n_boot: int | None = None,
    seed: int | None = None,
    thumbnails: bool = True,
) -> ReportPaths:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` of the run in ``run_dir``,
    whatever protocol made it, and return where they are.

    ``out_dir`` (a sweep's only; default the run directory) is where the files go; ``others``
    are further runs shown beside it (trajectory grounding: compared by exact Wilcoxon tests and
    drawn in the ECE-vs-TGS figure; the probe: their settings beside the run's in every table).
    ``n_boot`` and ``seed`` are the bootstrap's (default: the sweep's 2000 and 0; a grounding
    run's own configuration's); ``thumbnails`` draws a sweep report's example images. An option
    the run's protocol has no use for, or a run of no reported protocol, is an
    :class:`InputError` saying so.
    """
    made_by = run_protocol(run_dir)
    reported = REPORTED_AS.get(made_by)
    if reported is None:
        known = ", ".join(sorted(REPORTED_AS))
        raise InputError(f"{run_dir} is a {made_by} run: reports are of {known} runs")
    if others and reported == "sweep":
        raise InputError(f"a {reported} report shows one run; {len(others)} others were given")
    if out_dir is not None and reported != "sweep" and Path(out_dir) != Path(run_dir):
        raise InputError(f"a {reported} report is written into its run directory {run_dir}")
    if reported == "sweep":
        from clearsight.sweep import build_sweep_report

        n_boot = SWEEP_N_BOOT if n_boot is None else n_boot
        seed = SWEEP_SEED if seed is None else seed
        return build_sweep_report(run_dir, out_dir, n_boot=n_boot, seed=seed, thumbnails=thumbnails)
    if reported == "grounding":
        return _grounding_report(Path(run_dir), [Path(o) for o in others], n_boot, seed)
    from clearsight.probe import build_probe_report

    return build_probe_report(run_dir, others)


def _grounding_report(
    run: Path, others: list[Path], n_boot: int | None, seed: int | None
) -> ReportPaths:
    """The grounding report of ``run``; the bootstrap's draws and seed default to those of the
    run's configuration (what ``clearsight grounding run`` reported with)."""
    from clearsight.grounding import build_grounding_report

    config = _manifest(run).get("config") or {}
    n_boot = int(config.get("n_boot", 5000)) if n_boot is None else n_boot
    seed = int(config.get("seed", 0)) if seed is None else seed
    paths, _ = build_grounding_report(run, others=others, n_boot=n_boot, seed=seed)
    return paths


def _manifest(run_dir: Path | str) -> dict[str, Any]:
    """The manifest of the run in ``run_dir``, read without writing."""
    from clearsight.store import DB_NAME, RunStore

    run = Path(run_dir)
    if not (run / DB_NAME).is_file() and not run.is_file():
        raise InputError(f"{run} holds no run (no {DB_NAME}): give a run directory")
    with RunStore.open(run, read_only=True) as store:
        return store.manifest()
