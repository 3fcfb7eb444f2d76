"""``clearsight probe build``: the probe benchmark's two-stage filter, its options generated from
:class:`~clearsight.probe.bench.protocol.BuildConfig`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight import probe as protocol
from clearsight.cli.generate import Alias, ConfigCommand
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.driver import RunSummary
    from clearsight.probe import BuildConfig, Instance

KeptFile = Annotated[Path, typer.Option("--out", "-o", help="JSONL of the kept instances.")]
StoreDir = Annotated[
    Path | None,
    typer.Option(help="Run directory keeping stage 1's samples (a probe run's: Fig. 2)."),
]


def build(config: BuildConfig, out: KeptFile, store: StoreDir = None) -> RunSummary | None:
    """Build a benchmark: stage 1 keeps questions whose sensor is right in 1..5 of 11 direct
    answers; stage 2 keeps those a blind person solved (sessions of `clearsight serve`)."""
    selection = protocol.ProbeConfig(
        instances=config.instances, dataset=config.dataset, instance_ids=config.instance_ids
    )
    items = protocol.select_instances(selection)
    summary = None
    if config.stage == 1:
        kept, summary = _stage1(config, store)
    elif not config.sessions:
        raise InputError("stage 2 needs --sessions RUN (human sessions)")
    else:
        kept = protocol.build_stage2(items, config.sessions)
    if summary is not None and summary.failed and not summary.ok:
        reason = summary.reasons[0][0] if summary.reasons else "see the run's records"
        raise InputError(f"failed build stage 1 in {store or 'a temporary run'}: {reason}")
    protocol.write_instances(kept, out)
    typer.echo(f"kept {len(kept)} of {len(items)} questions: {out}")
    return summary if summary is not None and summary.failed else None


def _stage1(config: BuildConfig, store: Path | None) -> tuple[list[Instance], RunSummary]:
    """Stage 1, each question's count printed; its samples kept in the run directory ``store``
    when given (a new one begins a build run, a probe run or an earlier build is added to),
    else in a temporary one."""
    import tempfile

    from clearsight.driver import Execution

    with tempfile.TemporaryDirectory(prefix="clearsight-build-") as tmp:
        summary, results = protocol.build_stage1(config, store or Path(tmp), Execution())
    for r in results:
        typer.echo(f"{r.instance.id:36s} c={r.c:2d}/{config.samples} {'kept' if r.kept else ''}")
    return [r.instance for r in results if r.kept], summary


BUILD = ConfigCommand(
    "build", lambda: protocol.BuildConfig, build, aliases=(Alias("--ids", "instance_ids"),)
)
