"""The repository's method pages (``docs/*.md``) and ready configurations (``examples/*.yaml``)
wherever clearsight runs: in a source checkout they are read where they are; a wheel installs
them under ``<prefix>/share/clearsight/`` (``pyproject.toml``'s data files), read from there.
``clearsight docs`` and ``clearsight examples`` print and copy them."""

from __future__ import annotations

import site
import sys
from pathlib import Path
from typing import Literal

from clearsight.validate import InputError

__all__ = ["Kind", "shipped_dir", "shipped_file", "shipped_files"]

Kind = Literal["docs", "examples"]
_SUFFIX: dict[str, str] = {"docs": ".md", "examples": ".yaml"}
_WHAT: dict[str, str] = {"docs": "docs page", "examples": "example"}


def _candidates(kind: Kind) -> list[Path]:
    """Where ``kind`` may be: the checkout this module runs from, then the install prefixes."""
    repo = Path(__file__).resolve().parents[2]
    checkout = [repo / kind] if (repo / "pyproject.toml").is_file() else []
    prefixes = [Path(sys.prefix), Path(site.getuserbase())]
    return [*checkout, *(p / "share" / "clearsight" / kind for p in prefixes)]


def shipped_dir(kind: Kind) -> Path:
    """The folder holding the ``kind`` files (InputError where the install has none)."""
    for folder in _candidates(kind):
        if folder.is_dir() and any(folder.glob("*" + _SUFFIX[kind])):
            return folder
    tried = ", ".join(str(p) for p in _candidates(kind))
    raise InputError(f"no {kind} found (looked in {tried}): reinstall clearsight from its wheel")


def shipped_files(kind: Kind) -> list[Path]:
    """The ``kind`` files, by name."""
    return sorted(shipped_dir(kind).glob("*" + _SUFFIX[kind]))


def shipped_file(kind: Kind, name: str) -> Path:
    """The ``kind`` file called ``name`` (with or without its suffix); InputError naming the
    ones there are when there is none."""
    files = shipped_files(kind)
    for path in files:
        if name in (path.name, path.stem):
            return path
    names = ", ".join(p.stem for p in files)
    raise InputError(f"no {_WHAT[kind]} {name!r}; there are: {names}")
