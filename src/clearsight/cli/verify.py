"""``clearsight verify RUN`` (a sample of a finished sweep asked again, or ``--readouts``: every
record's read-outs derived again from its raw output) and ``clearsight compare RUN_A RUN_B``
(two runs of one design matched item by item): :mod:`clearsight.verify`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.validate import InputError
from clearsight.verify import DEFAULT_TOLERANCE

if TYPE_CHECKING:
    import pandas as pd


def _run_dir(run: Path) -> Path:
    """``run`` when it holds a run (InputError otherwise: nothing is created)."""
    if not (run / "run.sqlite").is_file():
        raise InputError(f"{run} holds no run (no run.sqlite): give a run directory")
    return run


def verify(
    run: Annotated[Path, typer.Argument(help="A finished (or partial) sweep run directory.")],
    sample: Annotated[int, typer.Option(help="Finished items to ask again.")] = 50,
    seed: Annotated[int, typer.Option(help="Seed of the sample and of its shuffled order.")] = 0,
    against: Annotated[
        str | None,
        typer.Option(help="Ask this model spec instead of each item's own (same weights)."),
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Requests per call to the model.")] = 5,
    tolerance: Annotated[
        float, typer.Option(help="|Δ| of a probability or confidence that counts as a change.")
    ] = DEFAULT_TOLERANCE,
    readouts: Annotated[
        bool,
        typer.Option(
            "--readouts",
            help="Derive every record's read-outs again from its raw output (no model).",
        ),
    ] = False,
) -> None:
    """Ask a seeded, stratified sample of RUN's finished items again and say how far they moved.

    The re-asks go shuffled, in batches of --batch-size, to the run's own model spec (or
    --against), and are stored in RUN as their own records (a rerun resumes). Prints the
    agreement of the answers and the largest and median |Δ| per read-out; exit 0 when every
    item agrees within --tolerance, 3 when some differ (their count and the worst printed).
    With --readouts, no model: every record's read-outs derived from its stored raw output
    and compared with the stored ones (exit 3 when some differ)."""
    _run_dir(run)
    if readouts:
        _readouts(run)
        return
    if sample < 1:
        raise InputError(f"--sample must be at least 1, got {sample}")
    if batch_size < 1:
        raise InputError(f"--batch-size must be at least 1, got {batch_size}")
    if not (tolerance >= 0 and math.isfinite(tolerance)):
        raise InputError(f"--tolerance must be a finite number >= 0, got {tolerance}")
    from clearsight.verify import VerifyConfig, verify_run

    config = VerifyConfig(run, sample=sample, seed=seed, against=against, batch_size=batch_size)
    result = verify_run(config, tolerance, progress=False)
    _print_result(result.table, result.differ, len(result.pairs), tolerance)
    if result.unplanned:
        typer.echo(
            f"{len(result.unplanned)} sampled items are no longer planned by the run's "
            "configuration and were not asked"
        )
    if result.exit_code:
        raise typer.Exit(code=result.exit_code)


def _print_result(table: pd.DataFrame, differ: pd.DataFrame, n: int, tolerance: float) -> None:
    """The agreement table, then how many items differ and the worst of them."""
    from clearsight.report.reproducibility import table_display, worst_display

    typer.echo(table_display(table).to_string(index=False))
    if len(differ):
        typer.echo(f"{len(differ)} of {n} items differ beyond {tolerance:g}; the worst:")
        typer.echo(worst_display(differ, 5).to_string(index=False))
    else:
        typer.echo(f"all {n} items agree within {tolerance:g}")


def _readouts(run: Path) -> None:
    """``verify --readouts``: print what :func:`clearsight.verify.rederive` found."""
    from clearsight.verify import rederive

    found = rederive(run)
    checked = ", ".join(f"{n} {kind}" for kind, n in sorted(found.checked.items())) or "none"
    typer.echo(f"read-outs derived again from raw outputs: {checked}")
    if found.skipped:
        skipped = ", ".join(f"{n} {kind}" for kind, n in sorted(found.skipped.items()))
        typer.echo(f"not derived here (no re-derivation for their kind): {skipped}")
    for key, kind, names in found.differ:
        typer.echo(f"differs: {key} ({kind}): {', '.join(names)}")
    typer.echo(f"{len(found.differ)} records' stored read-outs differ from their raw outputs'")
    if found.exit_code:
        raise typer.Exit(code=found.exit_code)


def compare(
    run_a: Annotated[Path, typer.Argument(help="A sweep run directory (A).")],
    run_b: Annotated[Path, typer.Argument(help="A sweep run of the same design (B).")],
    out: Annotated[Path, typer.Option(help="Directory of compare.html and compare.csv.")] = Path(
        "compare"
    ),
    tolerance: Annotated[
        float, typer.Option(help="|Δ| of a probability or confidence that counts as a change.")
    ] = DEFAULT_TOLERANCE,
    n_boot: Annotated[int, typer.Option(help="Paired bootstrap replicates.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
) -> None:
    """Match two sweep runs of one design item by item: agreement and figures side by side.

    Writes OUT/compare.html and OUT/compare.csv: the agreement of the common items' answers
    and |Δ| of their read-outs, the items that differ, and accuracy per level, ECE and AURC
    of both runs with the paired bootstrap interval of their difference over source photos."""
    from clearsight.report.output import csv_text, write_atomic
    from clearsight.report.reproducibility import compare_csv, compare_page
    from clearsight.verify import compare_runs

    if n_boot < 1:
        raise InputError(f"--n-boot must be at least 1, got {n_boot}")
    found = compare_runs(
        _run_dir(run_a), _run_dir(run_b), tolerance=tolerance, n_boot=n_boot, seed=seed
    )
    out.mkdir(parents=True, exist_ok=True)
    html, csv = out / "compare.html", out / "compare.csv"
    write_atomic(csv, csv_text(compare_csv(found)))
    write_atomic(html, compare_page(found))
    _print_result(found.table, found.differ, len(found.pairs), tolerance)
    typer.echo(f"compare: {html}\ncsv: {csv}")
