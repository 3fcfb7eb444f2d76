"""Probe instances from a hub snapshot of SeedBench, FigureQA, MMStar or CVQA.

:func:`hub_instances` reads the split a dataset's :class:`~clearsight.datasets.hub.HubSpec`
names (:func:`~clearsight.datasets.rows.hub_rows`) and makes each row an
:class:`~clearsight.probe.instances.Instance`: the question without its lettered options, the
options, the gold letter, the image written once to ``$CLEARSIGHT_CACHE/probe-images/NAME/``
when the whole split is valid (:func:`~clearsight.datasets.rows.load_rows`). A row the probe
cannot pose (no options, no image) is refused with its id, two rows under one id by both rows.
"""

from __future__ import annotations

import functools
from pathlib import Path

from clearsight.datasets.hub import HUB_SPECS, HubSpec, hub_spec, spec_for_hub_id
from clearsight.datasets.images import image_reference
from clearsight.datasets.rows import HubRow, image_folder, load_rows
from clearsight.datasets.snapshot import (
    HubRecord,
    is_hub_source,
    locate,
    source_hub_id,
    source_record,
)
from clearsight.probe.instances import Instance
from clearsight.validate import InputError


def hub_instance(row: HubRow, spec: HubSpec) -> Instance:
    """One row as an instance (its embedded image referenced at its cache path, not written)."""
    if row.kind != "choice" or len(row.options) < 2:
        raise InputError(
            f"{spec.name} row {row.id} refused: it lists no options; the probe poses "
            "multiple-choice questions"
        )
    if row.image is None:
        raise InputError(f"{spec.name} row {row.id} refused: it has no image")
    if not row.stem.strip():
        raise InputError(f"{spec.name} row {row.id} refused: its question is empty")
    return Instance(
        id=f"{spec.name}/{row.id}",
        image=str(image_reference(row.image, image_folder(spec))),
        question=row.stem,
        options=row.options,
        gold=row.gold,
        dataset=spec.name,
        category=row.category,
    )


def hub_instances(
    name: str,
    source: str | Path,
    limit: int | None = None,
    write: bool = True,
    refused: list[str] | None = None,
) -> list[Instance]:
    """The instances of dataset ``name`` in the hub source ``source`` (a snapshot folder, a
    cache folder or ``hf:``; :func:`~clearsight.datasets.snapshot.locate`), at most ``limit``;
    ``write`` False leaves embedded images unwritten, ``refused`` collects refused rows'
    messages instead of raising the first (what ``clearsight instances`` shows)."""
    spec = hub_spec(name, "probe")
    located = locate(spec, source)
    convert = functools.partial(hub_instance, spec=spec)
    return load_rows(located, convert, "instance", limit=limit, write=write, refused=refused)


def hub_dataset(source: str | Path) -> str | None:
    """The probe loader a hub source names (``hf:OWNER/NAME``, a hub-cache folder
    ``datasets--OWNER--NAME``, or a folder ``clearsight fetch`` wrote), or None; ``hf:`` that
    names none is an InputError asking for ``--dataset``."""
    spec = spec_for_hub_id(source_hub_id(source) or "", "probe") if is_hub_source(source) else None
    if spec is None and str(source).startswith("hf:"):
        loaders = ", ".join(s.name for s in HUB_SPECS.values() if s.protocol == "probe")
        raise InputError(
            f"unknown loader for {source}: it names none of the hub datasets; name it with "
            f"--dataset ({loaders})"
        )
    return None if spec is None else spec.name


def hub_record(name: str, source: str | Path) -> HubRecord:
    """What a run's manifest records of the probe's hub source ``source`` of dataset ``name``
    (:class:`~clearsight.datasets.snapshot.HubRecord`)."""
    return source_record(locate(hub_spec(name, "probe"), source))
