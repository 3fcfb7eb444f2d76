"""``clearsight build``: the probe benchmark's two-stage filter, run from a
:class:`~clearsight.probe.build.BuildConfig` (YAML and flags)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli._options import (
    DATASET_HELP,
    INSTANCES_HELP,
    _csv,
    _fail,
    _finished,
    _interrupted,
)
from clearsight.execute import Interrupted

if TYPE_CHECKING:
    from clearsight.driver import RunSummary
    from clearsight.probe.build import BuildConfig
    from clearsight.probe.instances import Instance


def build(
    out: Annotated[Path, typer.Option(help="JSONL of the kept instances.")],
    config: Annotated[Path | None, typer.Option(help="YAML file of BuildConfig fields.")] = None,
    stage: Annotated[
        int | None, typer.Option(help="1: sensor consistency filter; 2: human-solved.")
    ] = None,
    instances: Annotated[str | None, typer.Option(help=INSTANCES_HELP)] = None,
    dataset: Annotated[str | None, typer.Option(help=DATASET_HELP)] = None,
    ids: Annotated[str | None, typer.Option(help="Comma-separated instance ids.")] = None,
    sensor: Annotated[str | None, typer.Option(help="Sensor model (stage 1).")] = None,
    samples: Annotated[
        int | None, typer.Option(help="Direct samples per question (stage 1).")
    ] = None,
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
    from clearsight.config import load_config
    from clearsight.probe.build import BuildConfig, build_stage2, write_instances
    from clearsight.probe.config import ProbeConfig
    from clearsight.probe.plan import select_instances
    from clearsight.validate import InputError

    flags: dict[str, object] = {
        "stage": stage,
        "instances": instances,
        "dataset": dataset,
        "instance_ids": _csv(ids),
        "sensor": sensor,
        "samples": samples,
        "sessions": tuple(sessions) if sessions else None,
    }
    summary = None
    try:
        cfg = load_config(config, BuildConfig, flags)
        selection = ProbeConfig(
            instances=cfg.instances, dataset=cfg.dataset, instance_ids=cfg.instance_ids
        )
        items = select_instances(selection)
        if cfg.stage == 1:
            kept, summary = _stage1(cfg, store)
        elif not cfg.sessions:
            raise InputError("stage 2 needs --sessions RUN (human sessions)")
        else:
            kept = build_stage2(items, cfg.sessions)
        if summary is not None and summary.failed and not summary.ok:
            reason = summary.reasons[0][0] if summary.reasons else "see the run's records"
            raise InputError(f"failed build stage 1 in {store or 'a temporary run'}: {reason}")
    except InputError as exc:
        raise _fail(str(exc)) from exc
    except Interrupted as exc:
        raise _interrupted(exc) from None
    write_instances(kept, out)
    typer.echo(f"kept {len(kept)} of {len(items)} questions: {out}")
    if summary is not None and summary.failed:
        _finished(summary)  # the failed questions' count and reasons, and the exit code


def _stage1(cfg: BuildConfig, store: Path | None) -> tuple[list[Instance], RunSummary]:
    """Stage 1, each question's count printed; its samples kept in the run directory ``store``
    when given (a new one begins a build run, a probe run or an earlier build is added to),
    else in a temporary one."""
    import tempfile

    from clearsight.driver import Execution
    from clearsight.probe.build import build_stage1

    with tempfile.TemporaryDirectory(prefix="clearsight-build-") as tmp:
        summary, results = build_stage1(cfg, store or Path(tmp), Execution())
    for r in results:
        typer.echo(f"{r.instance.id:36s} c={r.c:2d}/{cfg.samples} {'kept' if r.kept else ''}")
    return [r.instance for r in results if r.kept], summary
