"""``clearsight sweep`` and ``clearsight report``: run the visibility sweep from a
:class:`~clearsight.sweep.config.SweepConfig` (YAML and flags) and write its report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli._options import (
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
    _Run,
    _run_options,
)

if TYPE_CHECKING:
    from clearsight.sweep.config import SweepConfig

#: The blind control: a text-only model asked the same questions without the image.
BLIND_CONTROL = "hf:smollm2-135m"


def _run_and_report(cfg: SweepConfig, out: Path, run: _Run) -> None:
    """Run the sweep ``cfg`` into ``out``, write its report and print its summary table."""
    from clearsight.sweep.protocol import run_sweep

    if BLIND_CONTROL in cfg.models:
        from clearsight.models.embedded import smollm2_dir

        smollm2_dir()  # convert the GGUF once here, not in every worker
    summary = run.start(run_sweep, cfg, out)
    from clearsight.report import build_report, summary_table  # after the checks: it takes a while

    paths = build_report(out)
    with __import__("pandas").option_context("display.width", 160, "display.max_columns", 20):
        typer.echo(summary_table(out).to_string(index=False))
    typer.echo(f"report: {paths.html}")
    _finished(summary)


def sweep(
    config: Annotated[Path | None, typer.Option(help="YAML file of SweepConfig fields.")] = None,
    out: Annotated[Path, typer.Option(help="Run directory.")] = Path("runs/sweep"),
    scenes: Annotated[str | None, typer.Option(help="Scene source: bundled or coco.")] = None,
    scene_ids: Annotated[
        str | None, typer.Option(help="Comma-separated bundled scene ids.")
    ] = None,
    coco_annotations: Annotated[Path | None, typer.Option(help="COCO instances JSON.")] = None,
    coco_images: Annotated[Path | None, typer.Option(help="COCO image folder.")] = None,
    n: Annotated[int | None, typer.Option("--n", help="Number of COCO scenes.")] = None,
    coco_depth: Annotated[
        str | None,
        typer.Option(
            help="Depth of COCO scenes: a Depth Anything V2 metric model (local path or HF "
            "cache) or 'assumed:<metres>'."
        ),
    ] = None,
    arms: Annotated[str | None, typer.Option(help="Comma-separated arms: fog,water.")] = None,
    controls: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated controls: clean,blank,shuffled,imagenet_c; 'none': none."
        ),
    ] = None,
    tasks: Annotated[str | None, typer.Option(help="Comma-separated: identify,verify.")] = None,
    wordings: Annotated[str | None, typer.Option(help="Comma-separated prompt wordings.")] = None,
    model: Annotated[list[str] | None, typer.Option(help="Model by name (repeatable).")] = None,
    seed: Annotated[int | None, typer.Option(help="Run seed.")] = None,
    workers: Workers = 1,
    executor: Executor = "process",
    ray_address: RayAddress = None,
    replicas: Replicas = None,
    gpus_per_replica: GpusPerReplica = 0.0,
    cpus_per_replica: CpusPerReplica = 1.0,
    fresh: Fresh = False,
    allow_mismatch: AllowMismatch = False,
) -> None:
    """Run the visibility sweep (resumes an interrupted run), then write its report.
    `--executor ray` runs it on Ray (docs/scale.md). Definitions of the physics, read-outs and
    metrics: docs/methods.md (`clearsight docs methods`)."""
    from clearsight.config import load_config
    from clearsight.sweep.config import SweepConfig
    from clearsight.validate import InputError

    flags: dict[str, object] = {
        "scenes": scenes,
        "scene_ids": _csv(scene_ids),
        "coco_annotations": coco_annotations,
        "coco_images": coco_images,
        "coco_n": n,
        "coco_depth_model": coco_depth,
        "arms": _csv(arms),
        "controls": () if controls == "none" else _csv(controls),
        "tasks": _csv(tasks),
        "wordings": _csv(wordings),
        "models": tuple(model) if model else None,
        "seed": seed,
    }
    ray = _ray(executor, ray_address, replicas, gpus_per_replica, cpus_per_replica)
    run = _run_options(executor, workers, ray, fresh, allow_mismatch)
    try:
        _run_and_report(_without_lone_shuffle(load_config(config, SweepConfig, flags)), out, run)
    except InputError as exc:
        raise _fail(str(exc)) from exc


def _without_lone_shuffle(cfg: SweepConfig) -> SweepConfig:
    """``cfg`` without its shuffled control when the sweep has one scene (the control shows
    each scene another scene's pixels, so it needs two), said in a note: a one-scene sweep
    runs its other conditions rather than stopping."""
    from clearsight.sweep import scene_refs
    from clearsight.sweep.config import SweepConfig

    if "shuffled" not in cfg.controls or len(scene_refs(cfg)) >= 2:
        return cfg
    typer.secho(
        "note: the shuffled control is skipped: it needs at least 2 scenes, the sweep has 1",
        fg=typer.colors.YELLOW,
        err=True,
    )
    data = cfg.model_dump(mode="json")
    data["controls"] = [c for c in cfg.controls if c != "shuffled"]
    data["model_conditions"] = {
        m: [c for c in conds if c != "shuffled"] for m, conds in cfg.model_conditions.items()
    }
    return SweepConfig.model_validate(data)


def report(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
) -> None:
    """Write report.html, summary.md and summary.csv of a finished (or partial) run (what
    each number means: docs/methods.md §4, `clearsight docs methods`)."""
    from clearsight.report import build_report, summary_table
    from clearsight.validate import InputError

    try:
        paths = build_report(run)
        typer.echo(summary_table(run).to_string(index=False))
    except InputError as exc:
        raise _fail(str(exc)) from exc
    typer.echo(f"report: {paths.html}")
