"""``clearsight verify RUN`` (a sample of a finished run asked again, or ``--readouts``: every
record's read-outs derived again from its raw output) and ``clearsight compare RUN_A RUN_B``
(two sweep or grounding runs of one design matched item by item): :mod:`clearsight.verify`,
their options generated from :class:`~clearsight.verify.config.VerifyOptions` and
:class:`~clearsight.verify.config.CompareOptions`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli.generate import ConfigCommand
from clearsight.validate import InputError

if TYPE_CHECKING:
    import pandas as pd

    from clearsight.verify.config import CompareOptions, VerifyOptions


def _run_dir(run: Path) -> Path:
    """``run`` when it holds a run (InputError otherwise: nothing is created)."""
    from clearsight.store import DB_NAME

    if not (run / DB_NAME).is_file():
        raise InputError(f"{run} holds no run (no {DB_NAME}): give a run directory")
    return run


def verify(
    options: VerifyOptions,
    run: Annotated[
        Path, typer.Argument(help="A finished (or partial) sweep, grounding or probe run.")
    ],
) -> None:
    """Ask a seeded, stratified sample of RUN's finished items again and say how far they moved.

    The re-asks go shuffled, in batches of --batch-size, to each item's own model spec (or
    --against), and are stored in RUN as records of their own kind (a rerun resumes). Prints
    the agreement of the answers and the largest and median |Δ| per read-out; exit 0 when every
    item agrees within --tolerance, 3 when some differ (their count and the worst printed).
    With --readouts no model is asked: every record's read-outs (sweep answers, grounding
    trajectories, elicitations and judgements, probe transcripts) are derived again from its
    stored raw output and compared with the stored ones (exit 3 when some differ)."""
    _run_dir(run)
    if options.readouts:
        _readouts(run)
        return
    from clearsight.verify import VerifyConfig, verify_run

    config = VerifyConfig(
        run,
        sample=options.sample,
        seed=options.seed,
        against=options.against,
        batch_size=options.batch_size,
    )
    result = verify_run(config, options.tolerance, progress=False)
    _print_result(result.table, result.differ, len(result.pairs), options.tolerance)
    if result.unplanned:
        typer.echo(
            f"{len(result.unplanned)} sampled items could not be had again as typed items "
            "(the run's configuration no longer plans them) and were not asked"
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
    options: CompareOptions,
    run_a: Annotated[Path, typer.Argument(help="A sweep or grounding run directory (A).")],
    run_b: Annotated[Path, typer.Argument(help="A run of the same design (B).")],
) -> None:
    """Match two sweep (or two grounding) runs of one design item by item: agreement and
    figures side by side.

    Writes OUT/compare.html and OUT/compare.csv: the agreement of the common items' answers
    and the |Δ| of their read-outs, the items that differ, and the figures of both runs with
    the paired bootstrap interval of their difference: a sweep's accuracy per level, ECE,
    AURC, V*_acc and W over source photos; a grounding run's TGS-self and TGS-pair by the
    two-stage bootstrap over benchmarks and problems."""
    from clearsight.pages.output import csv_text, write_atomic
    from clearsight.report.reproducibility import compare_csv, compare_page
    from clearsight.verify import compare_runs

    found = compare_runs(
        _run_dir(run_a),
        _run_dir(run_b),
        tolerance=options.tolerance,
        n_boot=options.n_boot,
        seed=options.seed,
    )
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    html, csv = out / "compare.html", out / "compare.csv"
    write_atomic(csv, csv_text(compare_csv(found)))
    write_atomic(html, compare_page(found))
    _print_result(found.table, found.differ, len(found.pairs), options.tolerance)
    typer.echo(f"compare: {html}\ncsv: {csv}")


def _verify_options() -> type[VerifyOptions]:
    from clearsight.verify.config import VerifyOptions

    return VerifyOptions


def _compare_options() -> type[CompareOptions]:
    from clearsight.verify.config import CompareOptions

    return CompareOptions


VERIFY = ConfigCommand("verify", _verify_options, verify, what="verify options", files=False)
COMPARE = ConfigCommand("compare", _compare_options, compare, what="compare options", files=False)
