"""What an export makes: files by their path inside the export (:data:`Files`), made whole in
memory first, so a bad input writes nothing; then each written atomically (:func:`write_files`)
or sent as one commit (:mod:`clearsight.export._hub`)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from clearsight.paths import write_target

__all__ = ["Files", "slug", "write_files"]

#: An export's files: POSIX path inside the export -> content.
Files = Mapping[str, bytes]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(text: str) -> str:
    """``text`` as one path component: runs of anything but letters, digits, ``.``, ``_`` and
    ``-`` become one ``-``, with no ``-`` or ``.`` at either end (``hf:org/m`` -> ``hf-org-m``)."""
    return _UNSAFE.sub("-", text).strip("-.") or "unnamed"


def write_files(out: Path, files: Files) -> list[Path]:
    """Write ``files`` under ``out`` (created as needed), each through a temporary file renamed
    into place, so a reader never sees half a file; returns their paths in order."""
    written = []
    for name, content in files.items():
        path = out.joinpath(*name.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = write_target(path.with_name(f".{path.name}.tmp"))
        tmp.write_bytes(content)
        os.replace(tmp, write_target(path))
        written.append(path)
    return written
