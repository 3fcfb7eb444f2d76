"""Where a probe run's instances come from: the bundled set, a local copy, or a hub snapshot.

A local copy is a JSONL file, a JSON array, a Parquet or Arrow file, or a directory of them
(:func:`source_format` tells which from the suffix or the first bytes); its rows are read with
the dataset's layout (:mod:`~clearsight.probe.sources.layouts`), or in clearsight's own JSON form
(:func:`instances_from_jsonl`, what ``clearsight build`` writes). A hub snapshot or cache
folder, or ``hf:``, is read with the published schema instead (:mod:`clearsight.probe.sources.hub`).
:func:`resolve_source` settles a configuration's loader before validation and
:func:`source_manifest` is what a run's manifest records of its source.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any, Final, NotRequired, TypedDict

from clearsight.datasets.hub import find_hub_spec
from clearsight.datasets.images import write_images
from clearsight.datasets.snapshot import is_hub_source
from clearsight.paths import inside_source
from clearsight.probe.instances import OWN_FIELDS, Instance, bundled_instances
from clearsight.probe.sources.hub import hub_dataset, hub_instances, hub_record
from clearsight.probe.sources.layouts import LAYOUTS, image_folder, pending_instance
from clearsight.provenance import source_digest
from clearsight.validate import InputError, jsonl_values, refuse_repeated_ids

#: The file formats :func:`source_format` recognises, by suffix; other files by their bytes.
_SUFFIX_FORMATS: Final[Mapping[str, str]] = {
    ".jsonl": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
    ".arrow": "arrow",
}


def source_format(source: Path) -> str:
    """The format of an instance source: ``jsonl``, ``json`` (an array of rows), ``parquet``,
    ``arrow`` or ``directory`` (a ``data.jsonl``, or Parquet / Arrow files under it), read from
    the suffix or else the file's first bytes; an InputError says when it cannot tell."""
    if source.is_dir():
        return "directory"
    if not source.is_file():
        raise InputError(f"no instances in {source}: there is no such file or directory")
    try:
        with source.open("rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise InputError(f"no instances in {source}: cannot read it: {exc.strerror}") from exc
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"ARROW1") or head.startswith(b"\xff\xff\xff\xff"):
        return "arrow"
    if source.suffix.lower() in _SUFFIX_FORMATS:
        return _SUFFIX_FORMATS[source.suffix.lower()]
    if head.lstrip()[:1] in (b"{", b"["):
        return "json" if head.lstrip()[:1] == b"[" else "jsonl"
    raise InputError(
        f"unknown format in {source}: it is not JSONL, a JSON array, Parquet or Arrow "
        "(see docs/probe.md)"
    )


def _json_rows(source: Path, fmt: str) -> Iterator[dict[str, Any]]:
    """The rows of a JSONL file, or of a JSON file holding an array of rows (or JSONL)."""
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"unreadable instances in {source}: {exc}") from exc
    if fmt == "json" and text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InputError(f"invalid JSON in {source}: {exc}") from exc
        lines = [(i, row) for i, row in enumerate(rows, 1)]
    else:
        lines = jsonl_values(text, source)
    for i, row in lines:
        if not isinstance(row, dict):
            raise InputError(
                f"invalid row in {source}:{i}: a row is a JSON object, got {type(row).__name__}"
            )
        yield row


def _table_rows(files: Sequence[Path]) -> Iterator[tuple[dict[str, Any], Path]]:
    """The rows of Parquet / Arrow files, in order."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    for file in files:
        try:
            if source_format(file) == "parquet":
                table = pq.read_table(file)
            else:
                with pa.memory_map(str(file)) as mm:
                    try:
                        table = pa.ipc.open_stream(mm).read_all()
                    except pa.ArrowInvalid:
                        table = pa.ipc.open_file(mm).read_all()
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"unreadable table in {file}: {exc}") from exc
        for batch in table.to_batches(1000):
            for row in batch.to_pylist():
                yield row, file.parent


def _rows(source: Path) -> Iterator[tuple[dict[str, Any], Path]]:
    """Rows of an instance source (:func:`source_format`): a JSONL or JSON file, a Parquet or
    Arrow file, or a directory with ``data.jsonl`` or Parquet / Arrow files (sorted); each
    with the folder relative image paths are read from."""
    fmt = source_format(source)
    if fmt == "directory" and (source / "data.jsonl").is_file():
        yield from _rows(source / "data.jsonl")
    elif fmt in ("jsonl", "json"):
        yield from ((row, source.parent) for row in _json_rows(source, fmt))
    elif fmt == "directory":
        files = sorted([*source.rglob("*.parquet"), *source.rglob("*.arrow")])
        if not files:
            raise InputError(
                f"no instances in {source}: it holds no data.jsonl, .parquet or .arrow files "
                "(see docs/probe.md)"
            )
        yield from _table_rows(files)
    else:
        yield from _table_rows([source])


def infer_dataset(source: Path | str) -> str:
    """The loader that reads ``source``: ``jsonl`` when its first row has clearsight's own
    fields (:data:`OWN_FIELDS`, what ``clearsight build`` writes); else an InputError saying
    the loader cannot be told from the file and naming the ones to choose from."""
    first = next(_rows(Path(source)), None)
    if first is None:
        raise InputError(f"no instances in {source}: the file holds no rows")
    row = first[0]
    if all(name in row for name in OWN_FIELDS):
        return "jsonl"
    fields = ", ".join(sorted(map(str, row))[:8])
    raise InputError(
        f"unknown loader for {source}: its rows ({fields}) are not clearsight's own "
        f"({', '.join(OWN_FIELDS)}); name the dataset they come from with --dataset "
        f"({', '.join(LAYOUTS)})"
    )


def bundled_is_a_name(source: object) -> str:
    """The refusal of the bundled loader for a file: ``bundled`` names the bundled set and
    never stands in for a file the user named."""
    return (
        f"invalid dataset 'bundled' for {source}: 'bundled' is the bundled question set "
        "(instances: bundled), not a loader of files; leave the dataset out to have it "
        f"inferred from the file, or name one ({', '.join(('jsonl', *LAYOUTS))})"
    )


class SourceManifest(TypedDict):
    """What a run's manifest records of its instance source (:func:`source_manifest`); a hub
    source adds the fields of :class:`~clearsight.datasets.snapshot.HubRecord`."""

    source: str
    format: str
    dataset: str
    sha256: str
    count: int
    hub_id: NotRequired[str]
    config: NotRequired[str]
    split: NotRequired[str]
    revision: NotRequired[str]
    files: NotRequired[int]


def source_manifest(source: str, dataset: str, count: int) -> SourceManifest:
    """What a run's manifest records of its instance source: the resolved path (or
    ``bundled``), its format, the loader, its sha256 (of the file, of a directory's data files
    (:func:`~clearsight.provenance.source_digest`), or of the bundled question file) and how
    many instances the run asks about."""
    if source == "bundled":
        data = resources.files("clearsight.probe").joinpath("data/bundled.yaml").read_bytes()
        where, fmt, digest = "bundled", "bundled", hashlib.sha256(data).hexdigest()
    elif find_hub_spec(dataset) is not None and is_hub_source(source):
        return SourceManifest(**hub_record(dataset, source), dataset=dataset, count=count)
    else:
        path = Path(source)
        where, fmt = str(path.resolve()), source_format(path)
        digest = source_digest(path, tuple(_SUFFIX_FORMATS))
    return SourceManifest(source=where, format=fmt, dataset=dataset, sha256=digest, count=count)


def resolve_source(data: Any) -> Any:
    """The ``instances`` / ``dataset`` fields of a configuration (``ProbeConfig``,
    ``BuildConfig``) before validation, with the dataset resolved: ``bundled`` for the bundled
    set, :func:`infer_dataset` of a file when it is left out. A loader named for the bundled
    set, or ``bundled`` named for a file, is an InputError: the bundled set never stands in for
    a file, nor a file for it. Other fields and bad types are left to the field checks."""
    if not isinstance(data, Mapping):
        return data
    source, dataset = data.get("instances", "bundled"), data.get("dataset")
    if not isinstance(source, str) or not (dataset is None or isinstance(dataset, str)):
        return data
    if source == "bundled":
        if dataset not in (None, "bundled"):
            raise InputError(
                f"invalid dataset {dataset!r} for instances 'bundled': a loader reads a local "
                "copy; name its file or directory with --instances PATH"
            )
        return {**data, "dataset": "bundled"}
    if dataset == "bundled":
        raise InputError(bundled_is_a_name(source))
    if dataset is None:
        return {**data, "dataset": hub_dataset(source) or infer_dataset(source)}
    if dataset != "jsonl" and dataset not in LAYOUTS and find_hub_spec(dataset) is None:
        raise InputError(
            f"unknown dataset {dataset!r} for {source}: the loaders are "
            f"{', '.join(('jsonl', *LAYOUTS))} (a hub one as NAME[CONFIG]@SPLIT)"
        )
    return data


def load_instances(
    source: Path | str, dataset: str, limit: int | None = None, write: bool = True
) -> list[Instance]:
    """Instances of ``dataset`` from a local copy at ``source`` (see the module docstring; a
    hub snapshot or cache: :func:`clearsight.probe.sources.hub.hub_instances`), at most ``limit`` of
    them, in file order; rows without options are an InputError. ``write`` False leaves
    embedded images unwritten (a listing that only checks)."""
    if dataset == "bundled":
        if str(source) != "bundled":
            raise InputError(bundled_is_a_name(source))
        return bundled_instances()[:limit]
    if find_hub_spec(dataset) is not None and is_hub_source(source):
        return hub_instances(dataset, source, limit, write)
    root = Path(source) if Path(source).is_dir() else Path(source).parent
    pending = []
    for row, base in _rows(Path(source)):
        pending.append(pending_instance(row, dataset, base, root))
        if limit is not None and len(pending) >= limit:
            break
    out = [inst for inst, _ in pending]
    _refuse_repeats(out, source)
    if write:  # only a valid source leaves its images in the cache
        write_images((data for _, data in pending), image_folder(dataset))
    return out


def _refuse_repeats(instances: Sequence[Instance], source: Path | str) -> None:
    """Two instances under one id would run and be analysed as one: an InputError naming the
    id and its rows (:func:`~clearsight.validate.refuse_repeated_ids`)."""
    where = ((inst.id, f"{source} row {n}") for n, inst in enumerate(instances, 1))
    refuse_repeated_ids(where, "instance")


def instances_from_jsonl(path: Path | str) -> list[Instance]:
    """Instances written one per line in :meth:`Instance.to_json` form (any dataset): a
    relative image path resolves inside the file's folder (:func:`~clearsight.paths.
    inside_source`); an absolute one, as ``probe build`` writes them, is kept."""
    out = []
    for row, base in _rows(Path(path)):
        inst = Instance.from_json(row)
        if not inst.image.startswith("bundled:") and not Path(inst.image).is_absolute():
            image = inside_source(base, inst.image, f"instance {inst.id}")
            inst = replace(inst, image=str(image))
        out.append(inst)
    _refuse_repeats(out, path)
    return out
