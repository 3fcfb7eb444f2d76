"""``clearsight grounding``: the trajectory-grounding protocol, run from a
:class:`~clearsight.grounding.config.GroundingConfig` (YAML and flags), then its report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli._options import (
    DATASETS_HELP,
    AllowMismatch,
    CpusPerReplica,
    Executor,
    Fresh,
    GpusPerReplica,
    RayAddress,
    Replicas,
    Workers,
    _csv,
    _fail,
    _finished,
    _ray,
    _run_options,
)

if TYPE_CHECKING:
    from clearsight.driver import RunSummary
    from clearsight.grounding import GroundingConfig


def grounding(
    config: Annotated[
        Path | None, typer.Option(help="YAML file of GroundingConfig fields.")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory.")] = Path(
        "runs/grounding"
    ),
    model: Annotated[str | None, typer.Option(help="Model whose confidence is measured.")] = None,
    generator: Annotated[
        str | None, typer.Option(help="Model injecting TGS-Bench errors; 'none': rule only.")
    ] = None,
    n: Annotated[int | None, typer.Option("--n", help="Bundled problems.")] = None,
    families: Annotated[
        str | None, typer.Option(help="Comma-separated bundled families (default: text ones).")
    ] = None,
    datasets: Annotated[Path | None, typer.Option(help=DATASETS_HELP)] = None,
    benchmarks: Annotated[
        str | None, typer.Option(help="Comma-separated benchmarks to load from --datasets.")
    ] = None,
    instances: Annotated[
        list[str] | None,
        typer.Option(
            help="Problems: bundled, or a JSONL or JSON file of them (repeatable); given, only "
            "the named sources run (bundled ones only when 'bundled' is among them)."
        ),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Problems per benchmark at most.")] = None,
    bench: Annotated[
        Path | None,
        typer.Option(help="TGS-Bench file (clearsight build-bench) whose pairs are scored."),
    ] = None,
    max_new_tokens: Annotated[int | None, typer.Option(help="Trajectory length limit.")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Sequences per forward pass.")] = None,
    variation: Annotated[bool | None, typer.Option(help="Score content variation.")] = None,
    variation_mode: Annotated[
        str | None,
        typer.Option(
            help="sampled: K alternatives per axis sampled from the own trajectory (default); "
            "handwritten: the canonical solution's one alternative."
        ),
    ] = None,
    variation_samples: Annotated[
        int | None, typer.Option(help="Sampled alternatives per axis (K, default 5).")
    ] = None,
    readout: Annotated[
        str | None,
        typer.Option(
            help="Calibration read-out: verbalize (default), ptrue, steerconf, conftuner, "
            "rlcr, vlcal."
        ),
    ] = None,
    readouts: Annotated[
        str | None,
        typer.Option(help="Comma-separated read-outs scored side by side (the first is main)."),
    ] = None,
    hesitation: Annotated[bool | None, typer.Option(help="Score hesitation events.")] = None,
    judge: Annotated[
        str | None, typer.Option(help="Model judging which pair side holds the error.")
    ] = None,
    n_boot: Annotated[int | None, typer.Option(help="Bootstrap draws.")] = None,
    seed: Annotated[int | None, typer.Option(help="Run seed.")] = None,
    workers: Workers = 1,
    executor: Executor = "serial",
    ray_address: RayAddress = None,
    replicas: Replicas = None,
    gpus_per_replica: GpusPerReplica = 0.0,
    cpus_per_replica: CpusPerReplica = 1.0,
    fresh: Fresh = False,
    allow_mismatch: AllowMismatch = False,
) -> None:
    """Trajectory grounding: TGS-self (masking), TGS-pair, ECE/AUROC, variation, hesitation.
    Resumes an interrupted run; `--executor ray` runs it on Ray (docs/scale.md). Definitions:
    docs/methods.md §5 (`clearsight docs methods`)."""
    from clearsight.config import NULL, load_config
    from clearsight.grounding import GroundingConfig, run_grounding
    from clearsight.validate import InputError

    if readout is not None and readouts is not None:
        raise _fail("give --readout or --readouts, not both")
    if variation_mode not in (None, "sampled", "handwritten"):
        raise _fail(f"--variation-mode must be sampled or handwritten, got {variation_mode!r}")
    files = tuple(i for i in instances or () if i != "bundled")
    if instances and "bundled" not in instances and n is None:
        n = 0  # the named files are what runs: the bundled problems never join them unasked
    if bench is not None and not instances and n is None:
        n = 0  # likewise the bench's problems
    flags: dict[str, object] = {
        "model": model,
        "model_options": {"batch_size": batch_size} if batch_size is not None else None,
        "generator": NULL if generator == "none" else generator,
        "n_problems": n,
        "families": _csv(families) or None,  # an empty list: the default families
        "seed": seed,
        "datasets_dir": str(datasets) if datasets else None,
        "benchmarks": _csv(benchmarks),
        "jsonl": files or None,
        "limit": limit,
        "bench": str(bench) if bench else None,
        "max_new_tokens": max_new_tokens,
        "variation": variation,
        "variation_mode": variation_mode,
        "variation_samples": variation_samples,
        "readouts": (readout,) if readout is not None else _csv(readouts),
        "hesitation": hesitation,
        "judge": judge,
        "n_boot": n_boot,
    }
    ray = _ray(executor, ray_address, replicas, gpus_per_replica, cpus_per_replica)
    run = _run_options(executor, workers, ray, fresh, allow_mismatch)
    try:
        cfg = load_config(config, GroundingConfig, flags)
        summary = run.start(run_grounding, cfg, out)
        _grounding_report(cfg, out, summary)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    _finished(summary)


def _grounding_report(cfg: GroundingConfig, out: Path, summary: RunSummary) -> None:
    """Print each stage's counts, write the run's report and print its score table."""
    from clearsight.report.grounding import build_grounding_report, tables

    for stage, s in summary.stages.items():
        typer.echo(f"{stage}: {s.ok} ok, {s.failed} failed or skipped")
    paths, analysis = build_grounding_report(out, n_boot=cfg.n_boot, seed=cfg.seed)
    typer.echo(tables(analysis).to_string(index=False))
    typer.echo(f"report: {paths.html}")
