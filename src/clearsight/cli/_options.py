"""What every run command shares: the run options (executor, workers, Ray, ``--fresh``,
``--allow-mismatch``), how a run starts with them, and how a command ends (error, interruption,
summary and exit code). Heavy imports happen inside functions, so ``--help`` stays fast."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Protocol, TypeVar, cast

import typer

if TYPE_CHECKING:
    from clearsight.driver import RunSummary
    from clearsight.execute import ExecutorName, Interrupted
    from clearsight.execute.on_ray import RayConfig

C = TypeVar("C")
C_contra = TypeVar("C_contra", contravariant=True)


def _fail(message: str) -> typer.Exit:
    """The exit of bad input: ``error: MESSAGE`` on stderr, exit code 2."""
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=2)


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


def _finished(summary: RunSummary) -> None:
    """Print what a run did; exit with its code when items failed (documented in the README:
    0 all ok, 3 some items failed, 2 bad input, 130/143 interrupted)."""
    typer.echo(summary.describe(), err=summary.failed > 0)
    if summary.exit_code:
        raise typer.Exit(code=summary.exit_code)


def _csv(value: str | None) -> tuple[str, ...] | None:
    """A comma-separated flag as a tuple (None: the flag was not given)."""
    return None if value is None else tuple(v.strip() for v in value.split(",") if v.strip())


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


class _Runner(Protocol[C_contra]):
    """A protocol's run function (``run_sweep``, ``run_grounding``, ``run_probe``)."""

    def __call__(
        self,
        config: C_contra,
        run_dir: Path,
        *,
        fresh: bool,
        allow_mismatch: bool,
        executor: ExecutorName,
        workers: int,
        ray: RayConfig | None,
    ) -> RunSummary: ...


@dataclass(frozen=True)
class _Run:
    """The run options of one command, resolved: how its protocol runs."""

    executor: ExecutorName
    workers: int
    ray: RayConfig | None = None
    fresh: bool = False
    allow_mismatch: bool = False

    def start(self, runner: _Runner[C], config: C, out: Path) -> RunSummary:
        """``runner(config, out)`` with these options; after Ctrl-C or SIGTERM, the resume
        message and its exit code (what finished is committed)."""
        from clearsight.execute import Interrupted

        try:
            return runner(
                config,
                out,
                fresh=self.fresh,
                allow_mismatch=self.allow_mismatch,
                executor=self.executor,
                workers=self.workers,
                ray=self.ray,
            )
        except Interrupted as exc:
            raise _interrupted(exc) from None


def _run_options(
    executor: str, workers: int, ray: RayConfig | None, fresh: bool, allow_mismatch: bool
) -> _Run:
    """The shared run options of a command, as given on its command line."""
    return _Run(
        executor=cast("ExecutorName", executor),  # checked by _executor_name and the executor
        workers=workers,
        ray=ray,
        fresh=fresh,
        allow_mismatch=allow_mismatch,
    )
