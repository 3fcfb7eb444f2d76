"""Where a hub dataset's split lies on disk, and whether its schema is the one followed.

A source is one of:

* a **snapshot folder**: what ``clearsight fetch --dataset``, ``huggingface-cli download REPO
  --repo-type dataset --local-dir DIR`` or ``snapshot_download`` leave — the repository's
  files, the split's found by the spec's globs (``data/testmini-*.parquet``);
* a repository folder of the **hub cache** (``datasets--OWNER--NAME`` with ``snapshots/`` and
  ``refs/``): its snapshot at the spec's revision, else at ``refs/main``, else the newest;
* a **datasets cache** folder (``OWNER___NAME/CONFIG/VERSION/HASH`` with ``dataset_info.json``
  and ``NAME-SPLIT.arrow`` or ``NAME-SPLIT-00000-of-00002.arrow``), or a folder written by
  ``Dataset.save_to_disk`` (``SPLIT/data-*.arrow``, or ``data-*.arrow`` beside ``state.json``);
* ``hf:`` or ``hf:OWNER/NAME``: the repository (the spec's by default) looked up in the hub
  cache, then in the datasets cache, where ``huggingface_hub`` and ``datasets`` keep them
  (``HF_HUB_CACHE``, ``HF_DATASETS_CACHE``, ``HF_HOME``); nothing is downloaded;
* one Parquet or Arrow file.

:func:`locate` finds the files and :func:`check_schema` refuses, in one line naming the
dataset, the columns found, the columns expected and the revision followed, a schema the
spec's mapping does not fit — before any row is read or anything written. A spec whose images
are a config of their own (:class:`~clearsight.datasets.hub.ImageTable`, GQA's) finds that
config's files beside the split's in a snapshot folder or the hub cache, where the repository
keeps both; a datasets cache holds one config a folder, and is refused for it, saying so.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypedDict

from clearsight.datasets.hub import HubSpec
from clearsight.validate import InputError

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]

#: Files whose presence marks a folder as written by huggingface_hub or datasets (a hub card,
#: a ``README.md`` opening with YAML front matter, marks a snapshot too).
HUB_MARKERS: Final = (
    "dataset_info.json",
    "dataset_dict.json",
    "state.json",
    ".cache/huggingface",
    "snapshots",
)
_TABLE_SUFFIXES: Final = (".parquet", ".arrow")


@dataclass(frozen=True)
class Located:
    """A split's files: ``root`` is where relative image paths resolve, ``layout`` what kind
    of folder held them (``hub snapshot``, ``hub cache``, ``datasets cache``, ``saved
    dataset`` or ``file``)."""

    spec: HubSpec
    files: tuple[Path, ...]
    root: Path
    layout: str
    image_files: tuple[Path, ...] = ()
    """The image table's files (a spec with an :class:`~clearsight.datasets.hub.ImageTable`)."""

    def describe(self) -> str:
        """One line: where the rows come from."""
        return f"{self.root} ({self.layout} of {self.spec.where()}, {len(self.files)} file(s))"


# --------------------------------------------------------------------------------------------
# The caches of huggingface_hub and datasets
# --------------------------------------------------------------------------------------------


def _hf_home() -> Path:
    """``HF_HOME``, else ``$XDG_CACHE_HOME/huggingface``, else ``~/.cache/huggingface``."""
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface"


def hub_cache_dir() -> Path:
    """Where huggingface_hub keeps repositories: ``HF_HUB_CACHE`` or ``HF_HOME/hub``."""
    env = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    return Path(env).expanduser() if env else _hf_home() / "hub"


def datasets_cache_dir() -> Path:
    """Where datasets keeps prepared Arrow files: ``HF_DATASETS_CACHE`` or ``HF_HOME/datasets``."""
    env = os.environ.get("HF_DATASETS_CACHE")
    return Path(env).expanduser() if env else _hf_home() / "datasets"


def snake_case(name: str) -> str:
    """A repository name as datasets names its cache folder and files: ``MathVista`` ->
    ``math_vista``, ``MMStar`` -> ``mm_star`` (a capital run before a capitalised word, and a
    lower case letter or digit before a capital, are split by ``_``)."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z\d])([A-Z])", r"\1_\2", name).lower()


def _newest(paths: Sequence[Path]) -> Path:
    return max(paths, key=lambda p: (p.stat().st_mtime, str(p)))


def _hub_cache_snapshot(repo: Path, spec: HubSpec) -> Path | None:
    """The snapshot of a hub-cache repository folder: at the spec's revision, else the one
    ``refs/main`` names, else the newest; None without snapshots."""
    snapshots = repo / "snapshots"
    found = sorted(p for p in snapshots.glob("*") if p.is_dir()) if snapshots.is_dir() else []
    if not found:
        return None
    if (snapshots / spec.revision).is_dir():
        return snapshots / spec.revision
    main = repo / "refs" / "main"
    if main.is_file() and (snapshots / main.read_text().strip()).is_dir():
        return snapshots / main.read_text().strip()
    return _newest(found)


def _datasets_cache_folder(spec: HubSpec, hub_id: str) -> Path | None:
    """The newest prepared folder of ``hub_id``'s config in the datasets cache holding the
    split's Arrow files, or None."""
    owner, _, name = hub_id.rpartition("/")
    base = datasets_cache_dir() / "___".join(p for p in (owner, snake_case(name)) if p)
    folders = [p for p in base.glob(f"{glob_escape(spec.config)}/*/*") if p.is_dir()]
    with_split = [p for p in folders if _cache_files(p, spec.split)]
    return _newest(with_split) if with_split else None


def glob_escape(text: str) -> str:
    """``text`` with glob's special characters quoted (MMMU-Pro's config has parentheses)."""
    return re.sub(r"([*?\[])", r"[\1]", text)


# --------------------------------------------------------------------------------------------
# Finding a split's files
# --------------------------------------------------------------------------------------------


def _hub_card(path: Path) -> bool:
    """Whether ``path`` is a dataset card: YAML front matter with configs or dataset_info."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            head = f.read(65536)
    except OSError:
        return False
    front, sep, _ = head.removeprefix("---\n").partition("\n---")
    return (
        head.startswith("---\n")
        and bool(sep)
        and bool(re.search(r"^(configs|dataset_info):", front, re.M))
    )


def is_hub_source(source: str | Path) -> bool:
    """Whether ``source`` is read as a hub snapshot or cache (``hf:``, or a folder holding one
    of :data:`HUB_MARKERS` or a hub card) rather than as a user's own file or folder of rows
    (a folder with ``data.jsonl`` is always the latter)."""
    if str(source).startswith("hf:"):
        return True
    path = Path(source)
    if not path.is_dir() or (path / "data.jsonl").is_file():
        return False
    return any((path / m).exists() for m in HUB_MARKERS) or _hub_card(path / "README.md")


def _cache_files(folder: Path, split: str) -> list[Path]:
    """A split's Arrow files in a datasets cache folder (``NAME-SPLIT.arrow``, sharded
    ``NAME-SPLIT-00000-of-00002.arrow``) or a saved dataset (``SPLIT/data-*.arrow``)."""
    s = glob_escape(split)
    found = [
        *folder.glob(f"*-{s}.arrow"),
        *folder.glob(f"*-{s}-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].arrow"),
    ]
    found += folder.glob(f"{s}/data-*.arrow")
    return sorted(set(found))


def _spec_files(root: Path, spec: HubSpec) -> list[Path]:
    return sorted({p for pattern in spec.files for p in root.glob(pattern) if p.is_file()})


def locate(spec: HubSpec, source: str | Path) -> Located:
    """The files of ``spec``'s split in ``source`` (module docstring), and of its image table
    where it has one (:func:`_with_image_table`); an InputError in one line saying what was
    looked for, and where, when there are none."""
    return _with_image_table(_locate_split(spec, source))


def _with_image_table(located: Located) -> Located:
    """``located`` with its spec's image table's files, found under its root where the
    repository's configs lie side by side (a snapshot or the hub cache); InputError where
    there are none, or where the layout holds one config only."""
    table = located.spec.image_table
    if table is None:
        return located
    spec = located.spec
    fetch = f"`clearsight fetch --dataset {spec.name}` downloads both"
    if located.layout not in ("hub snapshot", "hub cache"):
        raise InputError(
            f"{spec.name}: its images are a config of their own ({', '.join(table.files)}) "
            f"that a {located.layout} does not hold beside the questions; read a snapshot "
            f"folder of {spec.hub_id} ({fetch})"
        )
    files = sorted({p for glob in table.files for p in located.root.glob(glob) if p.is_file()})
    if not files:
        raise InputError(
            f"no {spec.name} images in {located.root}: no {', '.join(table.files)} beside the "
            f"questions; {fetch}"
        )
    return dataclasses.replace(located, image_files=tuple(files))


def _locate_split(spec: HubSpec, source: str | Path) -> Located:
    """The files of ``spec``'s split in ``source`` (:func:`locate`)."""
    text = str(source)
    if text.startswith("hf:"):
        return _locate_hf(spec, text[3:] or spec.hub_id)
    path = Path(source)
    if path.is_file():
        if path.suffix not in _TABLE_SUFFIXES:
            raise InputError(
                f"{spec.name}: {path} is not a Parquet or Arrow file; name the snapshot folder "
                f"of {spec.where()}"
            )
        return Located(spec, (path,), path.parent, "file")
    if not path.is_dir():
        raise InputError(
            f"no {spec.name} data in {path}: it does not exist; `clearsight fetch --dataset "
            f"{spec.name}` downloads {spec.where()}"
        )
    return _locate_folder(spec, path)


def _locate_folder(spec: HubSpec, path: Path) -> Located:
    snapshot = _hub_cache_snapshot(path, spec)
    if snapshot is not None:
        return dataclasses.replace(_locate_folder(spec, snapshot), layout="hub cache")
    files = _spec_files(path, spec)
    if files:
        return Located(spec, tuple(files), path, "hub snapshot")
    files = _cache_files(path, spec.split)
    if files:
        layout = "datasets cache" if (path / "dataset_info.json").is_file() else "saved dataset"
        return Located(spec, tuple(files), path, layout)
    if (path / "state.json").is_file():  # one Dataset saved: its files are the split
        return Located(spec, tuple(sorted(path.glob("data-*.arrow"))), path, "saved dataset")
    tables = sorted(p for p in path.rglob("*") if p.suffix in _TABLE_SUFFIXES and p.is_file())
    if tables and any(c not in file_columns(tables[0]) for c in spec.columns):
        raise schema_error(spec, tables[0], file_columns(tables[0]))
    if tables:
        raise InputError(
            f"no {spec.name} data in {path}: its tables ({tables[0].relative_to(path)}, ...) "
            f"have the columns, but not the file names of split {spec.split} "
            f"({', '.join(spec.files)}) that {spec.hub_id} at revision {spec.revision[:12]} has"
        )
    raise InputError(
        f"no {spec.name} data in {path}: no {', '.join(spec.files)} (the layout of "
        f"{spec.where()}), no datasets cache files *-{spec.split}.arrow, and no other Parquet "
        f"or Arrow file; `clearsight fetch --dataset {spec.name}` downloads it"
    )


def _locate_hf(spec: HubSpec, hub_id: str) -> Located:
    repo = hub_cache_dir() / f"datasets--{hub_id.replace('/', '--')}"
    snapshot = _hub_cache_snapshot(repo, spec) if repo.is_dir() else None
    if snapshot is not None and _spec_files(snapshot, spec):
        return Located(spec, tuple(_spec_files(snapshot, spec)), snapshot, "hub cache")
    folder = _datasets_cache_folder(spec, hub_id)
    if folder is not None:
        return Located(spec, tuple(_cache_files(folder, spec.split)), folder, "datasets cache")
    raise InputError(
        f"no {spec.name} data for hf:{hub_id}: its split {spec.split} is neither in the hub "
        f"cache ({repo}) nor in the datasets cache ({datasets_cache_dir()}); `clearsight fetch "
        f"--dataset {spec.name}` downloads it"
    )


# --------------------------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------------------------


def file_schema(path: Path) -> pa.Schema:
    """The schema of a Parquet file or an Arrow IPC file or stream (no rows read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    try:
        if path.suffix == ".parquet":
            return pq.read_schema(path)
        with pa.memory_map(str(path)) as mm:
            try:
                return pa.ipc.open_stream(mm).schema
            except pa.ArrowInvalid:
                return pa.ipc.open_file(mm).schema
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"unreadable table in {path}: {exc}") from exc


def file_columns(path: Path) -> tuple[str, ...]:
    """The top-level column names of a Parquet or Arrow file."""
    return tuple(file_schema(path).names)


def schema_error(spec: HubSpec, path: Path, found: Sequence[str]) -> InputError:
    """The one line of a schema the mapping does not fit (module docstring)."""
    missing = [c for c in spec.columns if c not in found]
    return InputError(
        f"{spec.name}: {path} is not the schema of {spec.hub_id} ({spec.config}, split "
        f"{spec.split}, revision {spec.revision[:12]}): found columns "
        f"{', '.join(found) or 'none'}; expected {', '.join(spec.columns)} (missing "
        f"{', '.join(missing) or 'none'})"
    )


def _type_problem(spec: HubSpec, schema: pa.Schema) -> str | None:
    """Why a present column cannot hold what the mapping reads from it, or None."""
    import pyarrow as pa

    def is_image(t: pa.DataType) -> bool:
        return pa.types.is_struct(t) and {"bytes", "path"} <= {f.name for f in t}

    if spec.image is not None:
        t = schema.field(spec.image).type
        inner = t.value_type if pa.types.is_list(t) or pa.types.is_large_list(t) else t
        if not (is_image(inner) or pa.types.is_string(inner) or pa.types.is_large_string(inner)):
            return f"column {spec.image} is {t}, not an Image (a struct of bytes and path)"
    if spec.explode is not None:
        t = schema.field(spec.explode).type
        fields = {f.name for f in t.value_type} if pa.types.is_list(t) else set()
        wanted = {n for n in (spec.question, spec.answer) if n}
        if not (pa.types.is_list(t) and pa.types.is_struct(t.value_type) and wanted <= fields):
            return f"column {spec.explode} is {t}, not a list of {{{', '.join(sorted(wanted))}}}"
    return None


def check_schema(located: Located) -> None:
    """Refuse, before anything is read or written, a file of ``located`` that lacks a column
    the mapping reads or holds one of the wrong kind (:func:`schema_error`)."""
    spec = located.spec
    for path in located.files:
        schema = file_schema(path)
        if any(c not in schema.names for c in spec.columns):
            raise schema_error(spec, path, schema.names)
        problem = _type_problem(spec, schema)
        if problem is not None:
            raise InputError(
                f"{spec.name}: {path} is not the schema of {spec.hub_id} (revision "
                f"{spec.revision[:12]}): {problem}"
            )
    table = spec.image_table
    for path in located.image_files if table is not None else ():
        found = file_schema(path).names
        if table is not None and not {table.key, table.image} <= set(found):
            raise InputError(
                f"{spec.name}: {path} is not the image table of {spec.hub_id} (revision "
                f"{spec.revision[:12]}): found columns {', '.join(found) or 'none'}; expected "
                f"{table.key}, {table.image}"
            )


def _arrow_batches(mm: Any) -> Iterator[Any]:
    """The record batches of a memory-mapped Arrow IPC stream (what datasets writes) or file."""
    import pyarrow as pa

    try:
        reader = pa.ipc.open_stream(mm)
    except pa.ArrowInvalid:
        whole = pa.ipc.open_file(mm)
        yield from (whole.get_batch(i) for i in range(whole.num_record_batches))
        return
    yield from reader


def table_rows(files: Sequence[Path], columns: Sequence[str]) -> Iterator[dict[str, object]]:
    """The rows of Parquet / Arrow files, only ``columns`` read, a batch at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in files:
        try:
            if path.suffix == ".parquet":
                for batch in pq.ParquetFile(path).iter_batches(256, columns=list(columns)):
                    yield from batch.to_pylist()
                continue
            with pa.memory_map(str(path)) as mm:
                for batch in _arrow_batches(mm):
                    yield from batch.select(list(columns)).to_pylist()
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"unreadable table in {path}: {exc}") from exc


def files_digest(root: Path, files: Sequence[Path]) -> str:
    """The sha256 of ``files`` (their paths relative to ``root`` and their bytes, in order,
    read in chunks): what a run's manifest records of a hub split it read."""
    import hashlib

    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root) if path.is_relative_to(root) else path).encode())
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


class HubRecord(TypedDict):
    """What a run's manifest records of a hub source (:func:`source_record`): where it was
    read, its layout, the repository, config, split and revision followed, and the split's
    files and their sha256."""

    source: str
    format: str
    hub_id: str
    config: str
    split: str
    revision: str
    files: int
    sha256: str


def source_record(located: Located) -> HubRecord:
    """What a run's manifest records of a hub source (:class:`HubRecord`)."""
    spec = located.spec
    return {
        "source": str(located.root.resolve()),
        "format": located.layout,
        "hub_id": spec.hub_id,
        "config": spec.config,
        "split": spec.split,
        "revision": spec.revision,
        "files": len(located.files) + len(located.image_files),
        "sha256": files_digest(located.root, (*located.files, *located.image_files)),
    }


#: What ``clearsight fetch --dataset`` writes beside a snapshot it verified.
FETCH_RECORD: Final = "clearsight-fetch.json"


def source_hub_id(source: str | Path) -> str | None:
    """The repository a source names, where it names one: ``hf:OWNER/NAME``, a hub-cache
    folder ``datasets--OWNER--NAME``, or a folder whose :data:`FETCH_RECORD` says it."""
    import json

    text = str(source)
    if text.startswith("hf:"):
        return text[3:] or None
    path = Path(source)
    if path.name.startswith("datasets--") and path.name.count("--") >= 2:
        return path.name.removeprefix("datasets--").replace("--", "/", 1)
    try:
        record = json.loads((path / FETCH_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    hub_id = record.get("hub_id") if isinstance(record, dict) else None
    return hub_id if isinstance(hub_id, str) else None
