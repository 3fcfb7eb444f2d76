"""``clearsight docs`` and ``clearsight examples``: the method pages and the ready
configurations, printed or copied from wherever clearsight is installed
(:mod:`clearsight.shipped`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.shipped import Kind


def _summary(path: Path) -> str:
    """A page's first heading, or a configuration's first comment line."""
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text
    return ""


def _listing(kind: Kind) -> str:
    """One line per file: its name and summary; then the folder they are in."""
    from clearsight.shipped import shipped_dir, shipped_files

    files = shipped_files(kind)
    width = max(len(p.stem) for p in files)
    lines = [f"{p.stem:<{width}}  {_summary(p)}" for p in files]
    return "\n".join([*lines, f"({shipped_dir(kind)})"])


def docs(
    page: Annotated[str | None, typer.Argument(help="A page to print, e.g. methods.")] = None,
) -> None:
    """Print a documentation page (`clearsight docs methods`: the definitions every protocol
    implements), or list the pages."""
    from clearsight.shipped import shipped_file

    typer.echo(_listing("docs") if page is None else shipped_file("docs", page).read_text())


def examples(
    name: Annotated[str | None, typer.Argument(help="An example to print.")] = None,
    copy: Annotated[
        Path | None,
        typer.Option(help="Copy every example into this folder (an existing file is kept)."),
    ] = None,
) -> None:
    """List the ready configurations (the published designs on your own data and models).

    Or print one, or copy them all into a folder to edit: `clearsight examples --copy
    examples` then `clearsight sweep run --config examples/sweep-coco-hf.yaml ...`."""
    from clearsight.shipped import shipped_file

    if copy is not None:
        try:
            _copy_examples(copy)
        except OSError as exc:  # a folder that cannot be written is the user's input
            raise InputError(str(exc)) from exc
        return
    typer.echo(_listing("examples") if name is None else shipped_file("examples", name).read_text())


def _copy_examples(folder: Path) -> None:
    """Copy every example into ``folder``, keeping a file that exists; a symbolic link out of
    the folder is refused, never written through (:func:`~clearsight.paths.write_target`)."""
    from clearsight.paths import write_target
    from clearsight.shipped import shipped_files

    folder.mkdir(parents=True, exist_ok=True)
    for path in shipped_files("examples"):
        target = write_target(folder / path.name)
        if target.exists():
            typer.echo(f"kept {target} (it exists)")
        else:
            target.write_bytes(path.read_bytes())
            typer.echo(f"wrote {target}")
