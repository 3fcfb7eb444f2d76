"""Paths that stay where they are asked: a path read from a source resolves inside it, and a
file written into a folder is never a symbolic link out of it.

:func:`resolves_inside` is the one containment check: every loader resolves the image paths a
dataset's rows name with it (:func:`inside_source`: a hub snapshot, a datasets cache, a local
copy, a benchmark's folder), and the web page the files a URL names
(:func:`clearsight.ui.runs.safe_file`). ``..``
segments and symbolic links are followed before the check, so neither leads out.
:func:`write_target` is the one check of every writer that puts named files into a user's
folder (``clearsight examples --copy``, reports, cards, boards, a TGS-Bench file and its
manifest): a link there, dangling or not, that points outside the folder is refused, never
written through.
"""

from __future__ import annotations

import os
from pathlib import Path

from clearsight.validate import InputError, short_repr

__all__ = ["inside_source", "resolves_inside", "write_target"]


def resolves_inside(root: Path | str, path: Path | str) -> Path | None:
    """The resolved ``path`` (a relative one taken under ``root``) where it lies inside the
    resolved ``root`` and is not ``root`` itself; else None (``..`` or a link out, an absolute
    path elsewhere, an empty or NUL-holding name, a link loop)."""
    text = str(path)
    if not text or "\x00" in text:
        return None
    base = Path(root).resolve()
    try:
        candidate = (base / path).resolve()
    except (OSError, RuntimeError, ValueError):  # symlink loops, names the system refuses
        return None
    if candidate == base or not candidate.is_relative_to(base):
        return None
    return candidate


def inside_source(root: Path | str, path: Path | str, where: str) -> Path:
    """``root / path``, as the source names it, where it resolves inside ``root``; else an
    InputError ``WHERE: its image PATH leaves ROOT`` (a row of a dataset naming a file
    elsewhere would have it read and shown to a model)."""
    if resolves_inside(root, path) is None:
        raise InputError(
            f"{where}: its image {short_repr(str(path))} leaves {root} (a path a source names "
            "must resolve inside it: '..', absolute paths elsewhere and links out are refused)"
        )
    return Path(root) / path


def write_target(path: Path) -> Path:
    """``path``, about to be written: an InputError where it is a symbolic link (dangling or
    not) whose target lies outside ``path``'s folder, which writing would follow out."""
    if path.is_symlink() and resolves_inside(path.parent, path.name) is None:
        raise InputError(
            f"refused to write {path}: it is a symbolic link to {os.readlink(path)}, outside "
            f"{path.parent}; remove the link or choose another folder"
        )
    return path
