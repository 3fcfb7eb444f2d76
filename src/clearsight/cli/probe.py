"""``clearsight probe``: the active-reasoning protocol through a noisy VLM sensor, run from a
:class:`~clearsight.probe.protocol.ProbeConfig` (YAML and flags), with its report, LLM-judge
analyses, judge agreement (with each other or with people), self-distillation and instance
listing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clearsight.cli._options import (
    DATASET_HELP,
    INSTANCES_HELP,
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
    _interrupted,
    _ray,
    _run_options,
)

app = typer.Typer(
    help="Active reasoning through a noisy VLM sensor (definitions: docs/methods.md §6, "
    "`clearsight docs methods`).",
    no_args_is_help=True,
)


@app.command("run")
def probe_run(
    config: Annotated[Path | None, typer.Option(help="YAML file of ProbeConfig fields.")] = None,
    out: Annotated[Path, typer.Option(help="Run directory.")] = Path("runs/probe"),
    instances: Annotated[str | None, typer.Option(help=INSTANCES_HELP)] = None,
    dataset: Annotated[str | None, typer.Option(help=DATASET_HELP)] = None,
    ids: Annotated[str | None, typer.Option(help="Comma-separated instance ids.")] = None,
    categories: Annotated[str | None, typer.Option(help="Comma-separated categories.")] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many instances.")] = None,
    reasoner: Annotated[list[str] | None, typer.Option(help="Reasoner model (repeatable).")] = None,
    strategies: Annotated[
        str | None, typer.Option(help="Comma-separated: direct,react,uot,uot_prompt,bp.")
    ] = None,
    uot_depth: Annotated[
        int | None, typer.Option(help="UoT search: look-ahead depth (question levels).")
    ] = None,
    uot_candidates: Annotated[
        int | None, typer.Option(help="UoT search: candidate questions per node.")
    ] = None,
    uot_replies: Annotated[
        int | None, typer.Option(help="UoT search: simulated replies per candidate.")
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
    from clearsight.config import load_config
    from clearsight.probe.config import ProbeConfig
    from clearsight.probe.protocol import run_probe
    from clearsight.validate import InputError

    flags: dict[str, object] = {
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
        "uot": _uot_flags(uot_depth, uot_candidates, uot_replies),
    }
    ray = _ray(executor, ray_address, replicas, gpus_per_replica, cpus_per_replica)
    run = _run_options(executor, workers, ray, fresh, allow_mismatch)
    try:
        summary = run.start(run_probe, load_config(config, ProbeConfig, flags), out)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    _probe_report(out)
    _finished(summary)


def _uot_flags(depth: int | None, candidates: int | None, replies: int | None) -> object:
    """The UoT search flags given, as a mapping over the file's ``uot`` (None: none given)."""
    given = {"depth": depth, "candidates": candidates, "replies": replies}
    return {k: v for k, v in given.items() if v is not None} or None


def _probe_report(run: Path) -> None:
    """Write the probe report of ``run`` and print its tables (those with rows)."""
    import pandas as pd

    from clearsight.probe import analyse_probe, probe_tables, render_probe_report

    analysis = analyse_probe(run)
    paths = render_probe_report(analysis, run)
    for title, frame in probe_tables(analysis).items():
        if not frame.empty:
            typer.echo(f"\n{title}")
            with pd.option_context("display.width", 200, "display.max_columns", 30):
                typer.echo(frame.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    typer.echo(f"\nreport: {paths.html}")


@app.command("report")
def probe_report(run: Annotated[Path, typer.Argument(help="A probe run directory.")]) -> None:
    """Write report.html, summary.md and summary.csv of a probe run and print its tables."""
    from clearsight.validate import InputError

    try:
        _probe_report(run)
    except InputError as exc:
        raise _fail(str(exc)) from exc


@app.command("analyse")
def probe_analyse(
    run: Annotated[Path, typer.Argument(help="A probe run directory.")],
    judge_model: Annotated[
        str, typer.Option(help="The LLM judge (any text backend).")
    ] = "hf:smollm2-135m",
    belief: Annotated[bool, typer.Option(help="Run the belief probe (BP, humans).")] = True,
    belief_readout: Annotated[
        str,
        typer.Option(
            help="stated: each conversation replayed by its own reasoner, its next reasoning "
            "step in context, the distribution it writes parsed (the paper's); letters: "
            "--judge-model's letter probabilities (cheap, for scoring backends)."
        ),
    ] = "stated",
    query_types: Annotated[bool, typer.Option(help="Classify the queries.")] = True,
    query_type_readout: Annotated[
        str,
        typer.Option(
            help="judge: a rationale and a JSON label with a confidence (the paper's); "
            "scores: the type names' probabilities (cheap)."
        ),
    ] = "judge",
) -> None:
    """Belief probe and query-type classification with an LLM judge, stored in the run."""
    from clearsight.execute import Interrupted
    from clearsight.probe.posthoc import AnalysisConfig, run_probe_analysis
    from clearsight.validate import InputError

    try:
        config = AnalysisConfig(
            judge_model=judge_model,
            belief=belief,
            belief_readout=belief_readout,  # type: ignore[arg-type]
            query_types=query_types,
            query_type_readout=query_type_readout,  # type: ignore[arg-type]
        )
        summary = run_probe_analysis(run, config)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    except Interrupted as exc:
        raise _interrupted(exc) from None
    _finished(summary)


@app.command("judges")
def probe_judges(
    run: Annotated[Path, typer.Argument(help="A probe run directory with sensor replies.")],
    a: Annotated[str, typer.Option(help="First judge.")] = "embedding",
    b: Annotated[str, typer.Option(help="Second judge.")] = "llm:hf:smollm2-135m",
    limit: Annotated[int | None, typer.Option(help="At most this many replies.")] = None,
    human_labels: Annotated[
        Path | None,
        typer.Option(
            help="JSONL of sensor replies with people's u (docs/probe.md): validate both "
            "judges against the people instead, stored in RUN for the report's Table 5."
        ),
    ] = None,
) -> None:
    """Agreement of two semantic-equivalence judges on the run's stored sensor replies, or
    (--human-labels) of each judge with people's labels of u: exact and within-1 agreement of
    u, MAE, Cohen's kappa (plain and quadratic-weighted), Pearson."""
    from clearsight.probe.agreement import judge_agreement
    from clearsight.probe.judges import make_judge
    from clearsight.probe.transcript import load_transcripts
    from clearsight.validate import InputError

    if human_labels is not None:
        _validate_judges(run, human_labels, (a, b), limit)
        return
    try:
        replies = [
            turn.reply for t in load_transcripts(run) for turn in t.turns if turn.reply is not None
        ]
        result, seconds = judge_agreement(replies, make_judge(a), make_judge(b), limit=limit)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    typer.echo(f"judges: {a} vs {b}")
    _echo_agreement(result.to_json())
    typer.echo(f"seconds: {a} {seconds[0]:.2f}, {b} {seconds[1]:.2f}")


def _echo_agreement(values: dict[str, float]) -> None:
    """``name: value`` lines of an agreement (n as an integer)."""
    for name, value in values.items():
        typer.echo(f"{name}: {value:.3f}" if name != "n" else f"n: {int(value)}")


def _validate_judges(
    run: Path, labels_file: Path, judges: tuple[str, ...], limit: int | None
) -> None:
    """Each judge against the people's labels of ``labels_file``, printed and stored in
    ``run`` (Table 5)."""
    from clearsight.probe.agreement import human_agreement, read_human_labels, store_validation
    from clearsight.probe.judges import make_judge
    from clearsight.store import DB_NAME
    from clearsight.validate import InputError

    try:
        if not (run / DB_NAME).is_file():
            raise InputError(f"{run} is not a probe run directory (no {DB_NAME})")
        labels = read_human_labels(labels_file)[:limit]
        results = human_agreement(labels, [make_judge(j) for j in dict.fromkeys(judges)])
        store_validation(run, labels, results)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    for name, (result, seconds) in results.items():
        typer.echo(f"judge: {name} vs people ({labels_file})")
        _echo_agreement(result.to_json())
        typer.echo(f"seconds: {seconds:.2f}")


@app.command("distill")
def probe_distill(
    run: Annotated[Path, typer.Argument(help="A probe run with successful BP conversations.")],
    out: Annotated[Path, typer.Option(help="Directory for the LoRA adapter and its manifest.")],
    config: Annotated[Path | None, typer.Option(help="YAML file of DistillConfig fields.")] = None,
    reasoner: Annotated[
        str | None, typer.Option(help="The hf reasoner to distil (default: the run's only one).")
    ] = None,
    rank: Annotated[int | None, typer.Option(help="LoRA rank (16).")] = None,
    alpha: Annotated[int | None, typer.Option(help="LoRA alpha (32).")] = None,
    epochs: Annotated[int | None, typer.Option(help="Epochs (7).")] = None,
    learning_rate: Annotated[float | None, typer.Option(help="AdamW learning rate.")] = None,
    validation: Annotated[
        float | None, typer.Option(help="Share held out to choose the epoch (0.1).")
    ] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Longest conversation (tokens).")] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many trajectories.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of split, order and init.")] = None,
) -> None:
    """Self-distillation (Table 2): LoRA-fine-tune an hf reasoner on its own successful BP
    conversations of RUN (its turns in the loss, the rest masked), keeping the epoch with the
    lowest validation loss; then `probe run --reasoner hf:<base> --reasoner hf:<OUT>` on
    held-out instances compares before and after."""
    from clearsight.config import load_config
    from clearsight.probe.distill import DistillConfig, distill
    from clearsight.validate import InputError

    flags: dict[str, object] = {
        "reasoner": reasoner,
        "rank": rank,
        "alpha": alpha,
        "epochs": epochs,
        "learning_rate": learning_rate,
        "validation": validation,
        "max_tokens": max_tokens,
        "limit": limit,
        "seed": seed,
    }
    try:
        result = distill(run, out, load_config(config, DistillConfig, flags))
    except InputError as exc:
        raise _fail(str(exc)) from exc
    manifest = result.manifest
    typer.echo(f"base: {manifest['base']}")
    typer.echo(
        f"trajectories: {manifest['trajectories']} (train {len(manifest['train'])}, "
        f"validation {len(manifest['validation'])}), labelled tokens "
        f"{manifest['labelled_tokens']}"
    )
    before = manifest["before"]
    typer.echo(
        f"epoch 0: train_loss {_loss_text(before['train_loss'])}, "
        f"val_loss {_loss_text(before['val_loss'])}"
    )
    for row in manifest["history"]:
        typer.echo(
            f"epoch {row['epoch']}: train_loss {_loss_text(row['train_loss'])}, "
            f"val_loss {_loss_text(row['val_loss'])} ({row['seconds']:.1f} s)"
        )
    typer.echo(f"chosen epoch: {manifest['chosen_epoch']} ({manifest['chosen_by']})")
    typer.echo(f"adapter: {result.out} (use as --reasoner hf:{result.out})")


def _loss_text(value: float | None) -> str:
    """A loss for the terminal (``-`` for none)."""
    return "-" if value is None else f"{value:.4f}"


@app.command("instances")
def probe_instances(
    instances: Annotated[str, typer.Option(help=INSTANCES_HELP)] = "bundled",
    dataset: Annotated[str | None, typer.Option(help=DATASET_HELP)] = None,
) -> None:
    """List instances: id, category, gold, question."""
    from clearsight.config import load_config
    from clearsight.probe.config import ProbeConfig
    from clearsight.probe.plan import select_instances
    from clearsight.validate import InputError

    flags: dict[str, object] = {"instances": instances, "dataset": dataset}
    try:
        items = select_instances(load_config(None, ProbeConfig, flags))
    except InputError as exc:
        raise _fail(str(exc)) from exc
    for inst in items:
        typer.echo(f"{inst.id:36s} {inst.category:10s} {inst.gold}  {inst.question}")
