"""What every run command shares: the run options (executor, workers, Ray, ``--fresh``,
``--allow-mismatch``), how a run starts with them, and how a command ends (error, interruption,
summary and exit code). Heavy imports happen inside functions, so ``--help`` stays fast."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar, cast

import typer
from pydantic import ValidationError
from typer._click.exceptions import NoArgsIsHelpError, UsageError  # typer vendors click
from typer._click.globals import get_current_context
from typer.core import TyperGroup

from clearsight.faults import EXIT_FAULT, RunFault, os_exit_code, os_fault
from clearsight.validate import InputError, invalid_options

if TYPE_CHECKING:
    from clearsight.driver import RunSummary
    from clearsight.execute import ExecutorName, Interrupted
    from clearsight.execute.on_ray import RayConfig

C = TypeVar("C")
C_contra = TypeVar("C_contra", contravariant=True)


#: Where the global ``--debug`` flag is kept (a context's ``meta`` is shared by a command's
#: contexts).
DEBUG_KEY = "clearsight.debug"


def _debugging() -> bool:
    """Whether the command line asked for ``--debug`` (tracebacks of errors)."""
    ctx = get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(DEBUG_KEY))


def _error_line(message: str) -> None:
    """``error: MESSAGE`` on one line of stderr, any key variable's value redacted."""
    from clearsight.credentials import redact

    typer.secho(f"error: {redact(' '.join(message.split()))}", fg=typer.colors.RED, err=True)


def _fail(message: str) -> typer.Exit:
    """The exit of bad input: one line ``error: MESSAGE`` on stderr (with ``--debug``, the
    traceback of the exception being handled first), exit code 2."""
    if _debugging() and sys.exc_info()[0] is not None:
        traceback.print_exc()
    _error_line(message)
    return typer.Exit(code=2)


class Group(TyperGroup):
    """The root command group: every bad command line (an unknown option, a bad value) and
    every bad input a command leaves uncaught ends as one ``error:`` line and exit code 2, in
    place of click's usage box and a traceback; an I/O or database failure (the disk full, a
    read-only or removed run directory, a corrupted store) as one ``error:`` line and
    :data:`~clearsight.faults.EXIT_FAULT` (``--debug`` shows the traceback)."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line (see the class docstring); exit codes as the README says."""
        argv = list(sys.argv[1:] if args is None else args)
        try:
            code = super().main(argv, prog_name, complete_var, False, windows_expand_args, **extra)
        except NoArgsIsHelpError as exc:
            exc.show()
            code = 2
        except UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else prog_name or "clearsight"
            _error_line(f"invalid command line in {where}: {exc.format_message()} (see --help)")
            code = 2
        except (InputError, ValidationError) as exc:
            if "--debug" in argv:
                traceback.print_exc()
            if isinstance(exc, ValidationError):  # its own text ends with a URL, over lines
                exc = invalid_options(exc, f"{exc.title} options")
            _error_line(str(exc))
            code = 2
        except (RunFault, OSError) as exc:  # the run store's SQLite failures are RunFaults
            if "--debug" in argv:
                traceback.print_exc()
            _error_line(str(exc if isinstance(exc, RunFault) else os_fault(exc)))
            code = EXIT_FAULT if isinstance(exc, RunFault) else os_exit_code(exc)
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


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
    0 all ok, 3 some items failed, 2 bad input, 4 the disk or the store failed, 130/143
    interrupted)."""
    from clearsight.credentials import redact

    typer.echo(redact(summary.describe()), err=summary.failed > 0)
    if summary.exit_code:
        raise typer.Exit(code=summary.exit_code)


def _csv(value: str | None) -> tuple[str, ...] | None:
    """A comma-separated flag as a tuple (None: the flag was not given)."""
    return None if value is None else tuple(v.strip() for v in value.split(",") if v.strip())


# Where a run's questions come from: the same two options on every command that takes them.
INSTANCES_HELP = (
    "bundled (the bundled questions), a JSONL, JSON, Parquet or Arrow file or a directory "
    "of them (the format read from the file), a hub snapshot or cache folder, or "
    "hf:[OWNER/NAME] (the Hugging Face caches; docs/probe.md)."
)
DATASETS_HELP = (
    "Folder of benchmark copies, <datasets>/<Name>/ each holding its JSONL file or a hub "
    "snapshot ($CLEARSIGHT_CACHE/datasets after clearsight fetch --dataset), or hf: (the "
    "Hugging Face caches; docs/grounding.md)."
)
DATASET_HELP = (
    "Loader of the file: jsonl (clearsight's own rows), seedbench, figureqa, mmstar, cvqa, "
    "reasonvqa (default: inferred from the file's rows, or an error saying it cannot)."
)


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
