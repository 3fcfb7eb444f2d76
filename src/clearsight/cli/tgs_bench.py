"""``clearsight build-bench``: build a TGS-Bench (good/bad trajectory pairs) for any problem set,
run from a :class:`~clearsight.grounding.build.BuildBenchConfig` (YAML and flags), then write
the pool and its manifest and print its retention."""

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
    from clearsight.grounding.bench_file import TgsBench


def build_bench(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="TGS-Bench JSONL to write (manifest beside it).")
    ],
    config: Annotated[
        Path | None, typer.Option(help="YAML file of BuildBenchConfig fields.")
    ] = None,
    run_dir: Annotated[
        Path, typer.Option(help="Run directory keeping every item's outcome (resumable).")
    ] = Path("runs/tgs-bench"),
    generator: Annotated[
        str | None, typer.Option(help="Model writing the good trajectories and the edits.")
    ] = None,
    judge: Annotated[
        str | None, typer.Option(help="Model accepting good trajectories and judging pairs.")
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
            "the named sources are built (bundled ones only when 'bundled' is among them)."
        ),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Problems per benchmark at most.")] = None,
    max_new_tokens: Annotated[
        int | None, typer.Option(help="Good trajectory length limit.")
    ] = None,
    batch_size: Annotated[int | None, typer.Option(help="Sequences per forward pass.")] = None,
    seed: Annotated[int | None, typer.Option(help="Build seed.")] = None,
    workers: Workers = 1,
    executor: Executor = "serial",
    ray_address: RayAddress = None,
    replicas: Replicas = None,
    gpus_per_replica: GpusPerReplica = 0.0,
    cpus_per_replica: CpusPerReplica = 1.0,
    fresh: Fresh = False,
    allow_mismatch: AllowMismatch = False,
) -> None:
    """Build TGS-Bench: the generator's trajectory per problem, kept if its answer matches the
    gold (and the judge accepts it), then one-error pairs per axis, validated. Resumable."""
    from clearsight.config import load_config
    from clearsight.grounding import BuildBenchConfig, read_bench, run_build_bench
    from clearsight.grounding.bench_file import write_bench
    from clearsight.validate import InputError

    files = tuple(i for i in instances or () if i != "bundled")
    if instances and "bundled" not in instances and n is None:
        n = 0  # the named files are what is built: the bundled problems never join them unasked
    flags: dict[str, object] = {
        "generator": generator,
        "generator_options": {"batch_size": batch_size} if batch_size is not None else None,
        "judge": judge,
        "n_problems": n,
        "families": _csv(families) or None,
        "seed": seed,
        "datasets_dir": str(datasets) if datasets else None,
        "benchmarks": _csv(benchmarks),
        "jsonl": files or None,
        "limit": limit,
        "max_new_tokens": max_new_tokens,
    }
    ray = _ray(executor, ray_address, replicas, gpus_per_replica, cpus_per_replica)
    run = _run_options(executor, workers, ray, fresh, allow_mismatch)
    try:
        cfg = load_config(config, BuildBenchConfig, flags)
        summary = run.start(run_build_bench, cfg, run_dir)
        bench = read_bench(cfg, run_dir)
        for stage, s in summary.stages.items():
            typer.echo(f"{stage}: {s.ok} ok, {s.failed} failed")
        _print_bench(bench, write_bench(bench, out))
    except InputError as exc:
        raise _fail(str(exc)) from exc
    _finished(summary)


def _print_bench(bench: TgsBench, written: tuple[Path, Path]) -> None:
    """The retention table, the rejection reasons, the injectors and the files written."""
    from clearsight.grounding.bench_file import retention_table

    m = bench.manifest
    typer.echo("retention (kept / attempted):")
    typer.echo(retention_table(m).to_string(index=False))
    for title, key in (
        ("rejections", "rejections"),
        ("injectors", "injectors"),
        ("model edits refused (the rule stepped in)", "model_edits_refused"),
        ("judge picked the bad side", "judge_picked_bad"),
    ):
        for where, counts in (m.get(key) or {}).items():
            typer.echo(f"{title}: {where}: {counts}")
    n_pairs = sum(len(i.pairs) for i in bench.items)
    typer.echo(f"wrote {written[0]} ({len(bench.items)} items, {n_pairs} pairs) and {written[1]}")
