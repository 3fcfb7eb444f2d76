"""``clearsight grounding run`` and ``clearsight grounding build-bench``: trajectory grounding
and its TGS-Bench builder, their options generated from
:class:`~clearsight.grounding.protocol.GroundingConfig` and
:class:`~clearsight.grounding.bench.protocol.BuildBenchConfig`; ``clearsight grounding report RUN
[RUN ...]`` compares runs (checkpoints, methods) in one report."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight import grounding as protocol
from clearsight.cli.generate import Alias, ConfigCommand, RunDir, command_group
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.cli.execution import ExecutionOptions
    from clearsight.driver import RunSummary
    from clearsight.grounding import BuildBenchConfig, GroundingConfig

BenchFile = Annotated[
    Path, typer.Option("--out", "-o", help="TGS-Bench JSONL to write (its manifest beside it).")
]
BenchRun = Annotated[
    Path, typer.Option(help="Run directory keeping every item's outcome (resumable).")
]


def run(
    config: GroundingConfig, execution: ExecutionOptions, out: RunDir = Path("runs/grounding")
) -> RunSummary:
    """Trajectory grounding: TGS-self (masking), TGS-pair, ECE/AUROC, variation, hesitation.

    Resumes an interrupted run; `--executor ray` runs it on Ray (docs/scale.md); then writes
    its report. Definitions: docs/methods.md §5 (`clearsight docs methods`)."""
    summary = execution.start(protocol.run_grounding, config, out, report=True)
    for stage, s in summary.stages.items():
        typer.echo(f"{stage}: {s.ok} ok, {s.failed} failed or skipped")
    return summary


def build_bench(
    config: BuildBenchConfig,
    execution: ExecutionOptions,
    out: BenchFile,
    run_dir: BenchRun = Path("runs/tgs-bench"),
) -> RunSummary:
    """Build TGS-Bench: good/bad trajectory pairs for any problem set.

    The generator's trajectory per problem, kept if its answer matches the gold (and the judge
    accepts it), then one-error pairs per axis, validated. Resumable; writes the pool and its
    manifest and prints its retention (docs/grounding.md)."""
    from clearsight.cli.report import print_bench

    summary = execution.start(protocol.run_build_bench, config, run_dir)
    bench = protocol.read_bench(config, run_dir)
    for stage, s in summary.stages.items():
        typer.echo(f"{stage}: {s.ok} ok, {s.failed} failed")
    print_bench(bench, protocol.write_bench(bench, out))
    return summary


def _problem_files(named: list[str] | None) -> tuple[str, ...] | None:
    """``--instances``: the problem files named (``bundled`` names the bundled problems)."""
    files = tuple(name for name in named or () if name != "bundled")
    return files or None


def _only_named_problems(given: Mapping[str, object]) -> dict[str, object]:
    """Problems named on the command line (``--instances``, or a bench's with ``--bench``) are
    what runs: the bundled problems join them only when ``bundled`` is among ``--instances``
    (or ``--n`` asks for them)."""
    instances = given.get("--instances")
    named = instances is not None or given.get("--bench") is not None
    listed = instances if isinstance(instances, tuple | list) else ()
    return {"n_problems": 0} if named and "bundled" not in listed else {}


#: The aliases both commands share: where problems come from.
_SOURCES = (
    Alias("--n", "n_problems"),
    Alias("--datasets", "datasets_dir"),
    Alias(
        "--instances",
        "jsonl",
        _problem_files,
        "Problems: bundled, or a JSONL or JSON file of them; given, only the named sources run "
        "(the bundled problems only when 'bundled' is among them).",
    ),
)

RUN = ConfigCommand(
    "run",
    lambda: protocol.GroundingConfig,
    run,
    aliases=(
        *_SOURCES,
        Alias("--readout", "readouts"),
        Alias("--batch-size", "model_options.batch_size"),
    ),
    execution={},
    implied=_only_named_problems,
)

BUILD_BENCH = ConfigCommand(
    "build-bench",
    lambda: protocol.BuildBenchConfig,
    build_bench,
    aliases=(*_SOURCES, Alias("--batch-size", "generator_options.batch_size")),
    execution={},
    implied=_only_named_problems,
)

app = typer.Typer(
    cls=command_group(RUN, BUILD_BENCH, default="run"),
    help="Trajectory grounding of verbalized confidence (docs/methods.md §5). Options without "
    "a command run `run`.",
    no_args_is_help=True,
)


@app.command("report")
def report(
    runs: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN",
            help="Grounding run directories: the report is written into the first, the "
            "others shown beside it (other checkpoints or calibration methods).",
        ),
    ],
) -> None:
    """Compare grounding runs: Table 2, Figs. 6, 7, 15, 16, overlaid masking and JSD figures.

    The runs' read-outs side by side (ECE, AUROC, TGS-self, TGS-pair), TGS-pair per axis, ECE
    against each TGS, the masking curves and JSD histograms overlaid, and exact Wilcoxon tests
    of the first run against each other; written as the first run's report.html, summary.md
    and summary.csv (what `clearsight report RUN [OTHERS]` writes for a grounding run)."""
    from clearsight.cli.report import write_report
    from clearsight.store import run_protocol

    run, *others = runs
    made_by = run_protocol(run)
    if made_by != protocol.GROUNDING.name:
        raise InputError(
            f"{run} is a {made_by} run, not a grounding run: `clearsight report {run}` reports it"
        )
    write_report(run, others)
