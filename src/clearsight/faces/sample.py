"""A stratified sample of a run's rows with the image the model was shown: :func:`sample_rows`.

The export's details dataset (``data/sample.parquet``) and the experiment trackers' tables
(:mod:`clearsight.track`) show the same sample: the items drawn as ``clearsight verify`` draws
its own (the strata of the face's ``reask`` kind, seeded), each with its row (the face's
``rows``) and, where the face shows items' images (``shown``), the PNG the model was shown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clearsight.faces.face import ProtocolFace, Row

__all__ = ["SampledRow", "sample_rows"]


@dataclass(frozen=True)
class SampledRow:
    """One sampled item: its row and the PNG its model was shown (None: the face shows none)."""

    row: Row
    image: bytes | None


def sample_rows(
    run_dir: Path, face: ProtocolFace, rows: Iterable[Row], n: int, seed: int
) -> list[SampledRow]:
    """``n`` of ``rows`` (the run's, keyed by ``key``) drawn stratified with ``seed``, in the
    draw's order, each with its shown image where the face shows images; none where the face
    has no ``reask`` kind to draw by or ``n`` is 0. An item the face shows no image of is left
    out where the face shows images."""
    from clearsight.store import RunStore
    from clearsight.verify.reask import _sampled

    if face.reask is None or n == 0:
        return []
    with RunStore.open(run_dir, read_only=True) as store:
        stored = _sampled(store, face.reask, n, seed)
    by_key = {row.get("key"): row for row in rows if row.get("key") in stored}
    if face.shown is None:
        return [SampledRow(by_key[key], None) for key in stored if key in by_key]
    images = face.shown(run_dir, stored)
    return [
        SampledRow(by_key[key], images[key]) for key in stored if key in images and key in by_key
    ]
