"""Embedded image bytes kept as files in the data cache, named by their content hash.

A dataset row's image reaches a model as a file path (an instance's or a problem's image
reference is a path), so bytes embedded in a table are written once to
``$CLEARSIGHT_CACHE/<folder>/<sha256[:24]>.img``; the same bytes always land at the same path
and are never written twice.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from clearsight.cache import cache_dir


def image_path(data: bytes, folder: str) -> Path:
    """Where ``data`` is kept under the cache's ``folder`` (nothing is written)."""
    return cache_dir() / folder / f"{hashlib.sha256(data).hexdigest()[:24]}.img"


def write_image(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` once (atomically; a present file is its content already)."""
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)


def pending_image(image: bytes | str | None, folder: str) -> tuple[str | None, bytes | None]:
    """A row's image reference and the bytes still to write there: embedded bytes get their
    cache path under ``folder`` (written by :func:`write_image` once the row is valid), a
    path stays as it is."""
    if isinstance(image, bytes):
        return str(image_path(image, folder)), image
    return image, None
