"""Embedded image bytes kept as files in the data cache, named by their content hash.

A dataset row's image reaches a model as a file path (an instance's or a problem's image
reference is a path), so bytes embedded in a table are written once to
``$CLEARSIGHT_CACHE/<folder>/<sha256[:24]>.img``; the same bytes always land at the same path
and are never written twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from clearsight.fetch.cache import cache_dir


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


def image_reference(image: bytes | str | None, folder: str) -> str | None:
    """A row's image reference: embedded bytes their cache path under ``folder`` (written by
    :func:`write_images` once the whole source is valid), a path as it is."""
    return str(image_path(image, folder)) if isinstance(image, bytes) else image


def write_images(images: Iterable[bytes | str | None], folder: str) -> None:
    """Write the embedded bytes among ``images`` into the cache's ``folder``: called once every
    row of a source is valid and its ids unique, so a refused source leaves no image behind."""
    for image in images:
        if isinstance(image, bytes):
            write_image(image_path(image, folder), image)
