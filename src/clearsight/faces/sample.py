"""A stratified sample of a run's items: the keys (:func:`sample_keys`), their stored specs
(:func:`sampled_specs`) and their rows with the image the model was shown (:func:`sample_rows`,
its PNG written by :func:`png_bytes`).

``clearsight verify`` asks the sampled items again; the export's details dataset
(``data/sample.parquet``) and the experiment trackers' tables (:mod:`clearsight.track`) show
the same sample: each item's row (the face's ``rows``) and, where the face shows items' images
(``shown``), the PNG the model was shown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    from clearsight.faces.face import ProtocolFace, Row
    from clearsight.faces.verifying import Reaskable
    from clearsight.store import RunStore

__all__ = ["SampledRow", "png_bytes", "sample_keys", "sample_rows", "sampled_specs"]


@dataclass(frozen=True)
class SampledRow:
    """One sampled item: its row and the PNG its model was shown (None: none, or the face
    shows no images)."""

    row: Row
    image: bytes | None


def sample_keys(strata: Mapping[tuple[Any, ...], Sequence[str]], n: int, seed: int) -> list[str]:
    """``n`` keys drawn from ``strata`` (stratum -> its keys): the strata in a seeded order,
    each stratum's keys shuffled, then one key from each stratum in turn until ``n`` are drawn
    (all keys where there are fewer). The same strata, ``n`` and ``seed`` draw the same keys."""
    rng = np.random.default_rng(seed)
    names = sorted(strata, key=repr)
    queues = [list(rng.permutation(np.array(strata[name], dtype=object))) for name in names]
    order = rng.permutation(len(queues)) if queues else np.array([], dtype=int)
    drawn: list[str] = []
    while len(drawn) < n and any(queues):
        for q in order:
            if queues[q] and len(drawn) < n:
                drawn.append(str(queues[q].pop()))
    return drawn


def sampled_specs(
    store: RunStore, kind: Reaskable[Any], n: int, seed: int
) -> dict[str, dict[str, Any]]:
    """The stored specs of ``n`` finished items of ``kind`` (its eligible ones, drawn by its
    strata with ``seed``), by key, in the sample's order."""
    strata: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    specs: dict[str, dict[str, Any]] = {}
    for rec in store.iter_records("ok", kind=kind.kind, raw=False):
        if not kind.eligible(rec.spec):
            continue
        strata[kind.stratum(rec.spec)].append(rec.key)
        specs[rec.key] = rec.spec
    return {key: specs[key] for key in sample_keys(strata, n, seed)}


def sample_rows(
    run_dir: Path, face: ProtocolFace, rows: Iterable[Row], n: int, seed: int
) -> list[SampledRow]:
    """``n`` of ``rows`` (the run's, keyed by ``key``) drawn stratified with ``seed``, in the
    draw's order, each with its shown image where the face shows images (None for an item
    shown none: a text-only problem); none where the face has no ``reask`` kind to draw by or
    ``n`` is 0."""
    from clearsight.store import RunStore

    if face.reask is None or n == 0:
        return []
    with RunStore.open(run_dir, read_only=True) as store:
        stored = sampled_specs(store, face.reask, n, seed)
    by_key = {row.get("key"): row for row in rows if row.get("key") in stored}
    images = {} if face.shown is None else face.shown(run_dir, stored)
    return [SampledRow(by_key[key], images.get(key)) for key in stored if key in by_key]


def png_bytes(pixels: npt.NDArray[np.uint8]) -> bytes:
    """``pixels`` (HxWx3 RGB) as PNG bytes with no metadata chunk: an image as a face's
    ``shown`` gives it."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()
