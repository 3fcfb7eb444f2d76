"""How a run command executes its protocol: the execution options every run command shares
(executor, workers, threads, Ray, ``--fresh``, ``--allow-mismatch``, ``--tracker``), declared
once as :class:`ExecutionOptions` and generated onto each command like its configuration's
fields, and how a run's summary ends the command (docs/scale.md, docs/track.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, Unpack, cast

import typer
from pydantic import BaseModel, ConfigDict, Field, field_validator

from clearsight.track.names import SAMPLE_ROWS

if TYPE_CHECKING:
    from clearsight.driver import RunOptions, RunSummary
    from clearsight.execute import ExecutorName
    from clearsight.execute.on_ray import RayConfig

C_contra = TypeVar("C_contra", contravariant=True)


class Runner(Protocol[C_contra]):
    """A protocol's run function (``run_sweep``, ``run_grounding``, ``run_probe``, ...)."""

    def __call__(
        self, config: C_contra, run_dir: Path, **options: Unpack[RunOptions]
    ) -> RunSummary: ...


class ExecutionOptions(BaseModel):
    """How a run executes: the same options on every command that runs a protocol."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    executor: str = Field("serial", description="serial, process or ray.")
    workers: int = Field(
        1, ge=1, description="Worker processes (ray: CPUs of a local Ray, default replicas)."
    )
    ray_address: str | None = Field(
        None, description="Ray cluster to run on (default: RAY_ADDRESS, else a local Ray)."
    )
    replicas: int | None = Field(
        None, ge=1, description="Ray actors per model (default: --workers)."
    )
    gpus_per_replica: float = Field(
        0.0, ge=0, description="GPUs per Ray replica (0.5: two share a GPU)."
    )
    cpus_per_replica: float = Field(1.0, ge=0.1, description="CPUs per Ray replica.")
    threads: int | None = Field(
        None,
        ge=1,
        description="CPU threads of each process (torch, BLAS, numba; default 1, or "
        "OMP_NUM_THREADS: more threads than idle cores run many times slower).",
    )
    fresh: bool = Field(False, description="Delete the run's records first.")
    allow_mismatch: bool = Field(
        False, description="Add records of a changed configuration to the run."
    )
    verbose: bool = Field(
        False, description="After the run, print the report's whole summary, not its headline."
    )
    tracker: tuple[str, ...] = Field(
        (),
        description="Experiment trackers the run is sent to as it runs: mlflow, trackio, wandb "
        "(each an extra: pip install 'clearsight[mlflow]'; docs/track.md); trackio:PROJECT "
        "names trackio's project (default clearsight).",
    )
    tracker_sample: int = Field(
        SAMPLE_ROWS,
        ge=0,
        description="Items in each tracker's table of a stratified sample, with the image "
        "each was shown (0: no table).",
    )

    @field_validator("executor")
    @classmethod
    def _known_executor(cls, value: str) -> str:
        from clearsight.execute import EXECUTORS

        if value not in EXECUTORS:
            raise ValueError(f"{value!r} is not one of {', '.join(EXECUTORS)}")
        return value

    @field_validator("tracker")
    @classmethod
    def _known_trackers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from clearsight.track.names import tracker_spec

        for spec in value:
            tracker_spec(spec)  # ValueError saying why
        return value

    def ray(self) -> RayConfig | None:
        """The Ray settings of ``--executor ray`` (None for the other executors)."""
        if self.executor != "ray":
            return None
        from clearsight.execute.on_ray import RayConfig

        return RayConfig(
            address=self.ray_address,
            replicas=self.replicas,
            num_gpus=self.gpus_per_replica,
            num_cpus=self.cpus_per_replica,
        )

    def start(
        self, runner: Runner[C_contra], config: C_contra, out: Path, *, report: bool = False
    ) -> RunSummary:
        """``runner(config, out)`` executed with these options, then (``report``) its report
        written and its headline printed; the run sent to each ``--tracker`` as it runs and,
        with the report's numbers, after it (a missing tracker: InputError before anything)."""
        from clearsight.track import open_session

        session = open_session(self.tracker, out, self.tracker_sample)
        try:
            summary = runner(
                config,
                out,
                fresh=self.fresh,
                allow_mismatch=self.allow_mismatch,
                executor=cast("ExecutorName", self.executor),  # checked by _known_executor
                workers=self.workers,
                ray=self.ray(),
                threads=self.threads,
                on_commit=session.on_commit(),
                keep=session.on_keep(),
            )
            session.ran()  # the sample's table sent while the report is written
            if report:
                from clearsight.cli.report import write_report

                heard = session.hear if self.tracker else None
                write_report(out, verbose=self.verbose, measured=heard)
        except BaseException:
            session.end(ok=False)
            raise
        session.finish()
        return summary


def finished(summary: RunSummary) -> None:
    """Print what a run did; exit with its code when items failed (documented in the README:
    0 all ok, 3 some items failed, 2 bad input, 4 the disk or the store failed, 130/143
    interrupted)."""
    from clearsight.credentials import redact

    typer.echo(redact(summary.describe()), err=summary.failed > 0)
    if summary.exit_code:
        raise typer.Exit(code=summary.exit_code)
