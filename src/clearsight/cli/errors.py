"""How a command ends when something is wrong: one ``error:`` line and its exit code.

Every command group of the command line is a :class:`Group`. Its root turns whatever a command
leaves uncaught into one line on stderr and the exit code the README documents: 2 for a bad
command line or bad input (nothing written), 4 for the disk or the store failing
(:data:`~clearsight.faults.EXIT_FAULT`), 130/143 for an interrupted run (with how to resume it);
``--debug`` prints the traceback first. So commands raise :class:`InputError` and never print
errors themselves. A group given no command prints its help (exit 2); a command that moved says
where to (exit 2). A group also hands out its commands with their help text reflowed
(:func:`reflowed`), so a docstring's line breaks never show in ``--help``.
"""

from __future__ import annotations

import inspect
import re
import sys
import traceback
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, Protocol, cast

import typer
from typer.core import TyperGroup

from clearsight.faults import EXIT_FAULT, RunFault, os_exit_code, os_fault
from clearsight.validate import InputError, invalid_options


class _UsageError(Protocol):
    """What a bad command line raises (click's ``UsageError``): its message and context."""

    ctx: typer.Context | None

    def format_message(self) -> str: ...


#: click's ``UsageError`` (an unknown option, a bad value, a missing argument), which typer
#: exports only as the base class of its public :class:`typer.BadParameter`.
USAGE_ERROR: Final = cast("type[Exception]", typer.BadParameter.__mro__[1])


def error_line(message: str) -> None:
    """``error: MESSAGE`` on one line of stderr, any key variable's value redacted."""
    from clearsight.credentials import redact

    typer.secho(f"error: {redact(' '.join(message.split()))}", fg=typer.colors.RED, err=True)


#: A line that starts an item of its own in help text: a list bullet or a numbered step.
_ITEM: Final = re.compile(r"\s*(?:[-*\u2022]|\d+[.)])\s")


def reflowed(text: str) -> str:
    """``text`` (a docstring) with each paragraph's lines joined into one, so the terminal wraps
    it: paragraphs stay apart (a blank line), a line starting a list item or indented deeper
    than its paragraph's first line (an example) stays on its own line, and a paragraph that
    starts with click's no-rewrap marker ``\\b`` is left as written."""
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip("\n")):
        lines = paragraph.split("\n")
        if lines[0].strip() == "\b":
            out.append(paragraph)
            continue
        indent = len(lines[0]) - len(lines[0].lstrip())
        joined = [lines[0].rstrip()]
        for line in lines[1:]:
            own = _ITEM.match(line) or len(line) - len(line.lstrip()) > indent
            if own:
                joined.append(line.rstrip())
            else:
                joined[-1] = f"{joined[-1]} {line.strip()}"
        out.append("\n".join(joined))
    return "\n\n".join(out)


#: The longest first sentence of a command's help that a group's list shows whole.
_SHORT_HELP: Final = 240


class Group(TyperGroup):
    """A command group of the command line (see the module docstring): the root's
    :meth:`main` ends every error as one line and its exit code; any group given no command
    prints its help; a name in :attr:`moved` is a command that moved, answered with one line
    naming its new spelling."""

    #: Old command name -> its new spelling (``build`` -> ``clearsight probe build``).
    moved: ClassVar[Mapping[str, str]] = {}

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command ``cmd_name``, its help text :func:`reflowed`."""
        command = super().get_command(ctx, cmd_name)
        if command is not None and command.help:
            command.help = reflowed(inspect.cleandoc(command.help))
        return command

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The group's commands, each with the first sentence of its help, wrapped, never cut
        at the line's width (click's plain list cuts it with '...')."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(_SHORT_HELP)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """A group that wants a command and got none prints its help on stderr, exit 2."""
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help(), err=True)
            raise typer.Exit(code=2)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The command ``args`` names; a moved one is an InputError naming its new spelling."""
        if args and args[0] in self.moved:
            raise InputError(
                f"`{ctx.command_path} {args[0]}` is now `{self.moved[args[0]]}` (see its --help)"
            )
        return super().resolve_command(ctx, args)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line (see the module docstring); exit codes as the README says."""
        argv = list(sys.argv[1:] if args is None else args)
        try:
            code = super().main(argv, prog_name, complete_var, False, windows_expand_args, **extra)
        except USAGE_ERROR as exc:
            usage = cast("_UsageError", exc)
            where = usage.ctx.command_path if usage.ctx is not None else prog_name or "clearsight"
            error_line(f"invalid command line in {where}: {usage.format_message()} (see --help)")
            code = 2
        except Exception as exc:
            code = _ending(exc, debug="--debug" in argv)
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def _ending(exc: Exception, *, debug: bool) -> int:
    """Say what went wrong in one line (the traceback first with ``--debug``) and give the exit
    code; an exception that is no user-facing failure propagates."""
    from pydantic import ValidationError  # here: the command line starts without pydantic

    from clearsight.execute import Interrupted

    if isinstance(exc, Interrupted):
        return _interrupted(exc)
    if not isinstance(exc, InputError | ValidationError | RunFault | OSError):
        raise exc
    if debug:  # the traceback quotes values too: redacted as the error line is
        from clearsight.credentials import redact

        sys.stderr.write(redact("".join(traceback.format_exception(exc))))
    if isinstance(exc, ValidationError):  # its own text ends with a URL, over lines
        exc = invalid_options(exc, f"{exc.title} options")
    if isinstance(exc, InputError):
        error_line(str(exc))
        return 2
    error_line(str(exc if isinstance(exc, RunFault) else os_fault(exc)))
    return EXIT_FAULT if isinstance(exc, RunFault) else os_exit_code(exc)


def _interrupted(exc: Any) -> int:
    """Say how far an interrupted run got and how to resume it; exit code 130 after Ctrl-C,
    143 after SIGTERM."""
    from clearsight.driver import EXIT_INTERRUPTED, EXIT_TERMINATED

    how = "terminated" if exc.terminated else "interrupted"
    typer.secho(
        f"{how}: {exc.summary.ok} records committed; rerun the same command to resume",
        fg=typer.colors.YELLOW,
        err=True,
    )
    return EXIT_TERMINATED if exc.terminated else EXIT_INTERRUPTED
