"""A stratified sample of a run's items: the keys (:func:`sample_keys`), their stored specs
(:func:`sampled_specs`) and their rows with the image the model was shown (:func:`sample_rows`,
its PNG written by :func:`png_bytes`).

``clearsight verify`` asks the sampled items again; the export's details dataset
(``data/sample.parquet``) and the experiment trackers' tables (:mod:`clearsight.track`) show
the same sample: each item's row (the face's ``rows``) and, where the face shows items' images
(``shown``), the PNG the model was shown.

A run sent to a tracker keeps those images as it runs rather than drawing them again at its
end: the sample is drawn before a stage runs, from its planned items (:func:`planned_keys`: the
same draw as after the run wherever every item ends ok), the stage's units run keeping those
keys (:mod:`clearsight.execute.kept`), and a protocol's unit hands back, on the record of each
kept item, the pixels its request carried (no copy, no encoding in the unit). An item
the run did not keep (one that failed, a resumed run's earlier item) is drawn again by the
face's ``shown``.
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

__all__ = [
    "SampledRow",
    "planned_keys",
    "png_bytes",
    "sample_keys",
    "sample_rows",
    "sampled_specs",
]


@dataclass(frozen=True)
class SampledRow:
    """One sampled item: its row, the PNG its model was shown (None: none, or the face shows
    no images) and, where the run kept them, that image's pixels (a tracker's small copy or
    its own encoding made from them, the PNG not decoded)."""

    row: Row
    image: bytes | None
    pixels: npt.NDArray[np.uint8] | None = None


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


def _drawn(
    specs: Iterable[tuple[str, Mapping[str, Any]]], kind: Reaskable[Any], n: int, seed: int
) -> list[str]:
    """The keys of ``n`` of the items ``specs`` (key, JSON spec; in item order) eligible for
    ``kind``, drawn by its strata with ``seed``, in the sample's order. Only the keys are
    held: a draw over a run of millions of items keeps no spec."""
    strata: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for key, spec in specs:
        if kind.eligible(spec):
            strata[kind.stratum(spec)].append(key)
    return sample_keys(strata, n, seed)


def _specs_of(store: RunStore, kind: Reaskable[Any], keys: Sequence[str]) -> dict[str, Any]:
    """The stored specs of ``keys`` (items of ``kind``), by key in their order."""
    found = dict(store.item_specs(kind.kind, keys=keys))
    return {key: found[key] for key in keys}


def sampled_specs(
    store: RunStore, kind: Reaskable[Any], n: int, seed: int
) -> dict[str, Mapping[str, Any]]:
    """The stored specs of ``n`` finished items of ``kind`` (its eligible ones, drawn by its
    strata with ``seed``), by key, in the sample's order."""
    finished = store.item_specs(kind.kind, ok=True, shared=True)
    return _specs_of(store, kind, _drawn(finished, kind, n, seed))


def planned_keys(store: RunStore, kind: Reaskable[Any], n: int, seed: int) -> tuple[str, ...]:
    """The keys :func:`sampled_specs` draws once every stored item of ``kind`` has finished
    ok, in the sample's order: drawn before its stage runs (its items stored), so that its
    units keep those items' images (:func:`clearsight.execute.kept.keeping`)."""
    return tuple(_drawn(store.item_specs(kind.kind, shared=True), kind, n, seed))


def _sample_specs(
    store: RunStore, kind: Reaskable[Any], n: int, seed: int, planned: Sequence[str] | None
) -> dict[str, Mapping[str, Any]]:
    """:func:`sampled_specs`; without reading every item again where the ``planned`` draw
    (:func:`planned_keys`, None: not drawn) is known and every item of ``kind`` finished ok,
    the case in which the two draws are the same."""
    if planned is not None:
        items, ok = store.items_and_ok_per_kind().get(kind.kind, (0, 0))
        if items == ok:
            return _specs_of(store, kind, planned)
    return sampled_specs(store, kind, n, seed)


def sample_rows(
    run_dir: Path,
    face: ProtocolFace,
    n: int,
    seed: int,
    *,
    rows: Iterable[Row] | None = None,
    kept: Mapping[str, npt.NDArray[np.uint8]] | None = None,
    pngs: Mapping[str, bytes] | None = None,
    planned: Sequence[str] | None = None,
) -> list[SampledRow]:
    """``n`` of the run's rows (keyed by ``key``) drawn stratified with ``seed``, in the
    draw's order, each with its shown image where the face shows images (None for an item
    shown none: a text-only problem): the pixels the run ``kept`` of it encoded (its PNG taken
    from ``pngs`` where it was encoded already), the others drawn again by the face; none
    where the face has no ``reask`` kind to draw by or ``n`` is 0. ``rows``: the run's rows
    where the caller has read them all (None: the face reads the drawn items' rows only).
    ``planned``: the draw made before the run (:func:`planned_keys`), taken as it is where
    every item finished ok."""
    from clearsight.store import RunStore

    if face.reask is None or n == 0:
        return []
    with RunStore.open(run_dir, read_only=True) as store:
        stored = _sample_specs(store, face.reask, n, seed, planned)
    if rows is None:
        rows = face.need(face.rows, "rows")(run_dir, list(stored))
    by_key = {row.get("key"): row for row in rows if row.get("key") in stored}
    images: dict[str, bytes] = {}
    if face.shown is not None:
        made = pngs or {}
        images = {
            key: made[key] if key in made else png_bytes(kept[key])
            for key in stored
            if kept and key in kept
        }
        again = {key: spec for key, spec in stored.items() if key not in images}
        images.update(face.shown(run_dir, again) if again else {})
    held = kept or {}
    return [
        SampledRow(by_key[key], images.get(key), held.get(key) if key in images else None)
        for key in stored
        if key in by_key
    ]


def png_bytes(pixels: npt.NDArray[np.uint8]) -> bytes:
    """``pixels`` (HxWx3 RGB) as PNG bytes with no metadata chunk: an image as a face's
    ``shown`` gives it. OpenCV's encoder at zlib's fastest level, matching runs only (zlib's
    RLE strategy) and each row filtered by its left neighbour (PNG's Sub filter): lossless like
    every PNG; on the bundled photos, clean and noisy, about three times as fast as PIL at
    zlib level 1 for files about the same size (encoding was most of what a sampled image
    cost)."""
    import cv2

    settings = [  # the level first: setting it resets the strategy
        cv2.IMWRITE_PNG_COMPRESSION, 1,
        cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE,
        cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_SUB,
    ]  # fmt: skip
    _, encoded = cv2.imencode(".png", cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR), settings)
    return bytes(encoded)
