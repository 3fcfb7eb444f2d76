"""``clearsight fetch --dataset NAME``: a hub dataset's snapshot, or COCO val2017, downloaded
and verified.

* A **hub dataset** (:data:`~clearsight.datasets.hub.HUB_SPECS`) is downloaded with
  huggingface_hub's ``snapshot_download(repo_type="dataset")`` — only its split's files and
  its card, at the spec's revision when that is a full commit hash, else ``main`` — into
  ``$CLEARSIGHT_CACHE/datasets/NAME`` (the folder ``--instances`` / ``--datasets`` take), then
  verified: the split's files are there, their schema is the one the mapping follows
  (:func:`~clearsight.datasets.snapshot.check_schema`) and they hold rows. What was verified
  (files, sizes, sha256, rows, the commit downloaded) is written to ``clearsight-fetch.json``;
  a rerun whose files still match it does nothing.
* **COCO** (``--dataset coco``): ``val2017.zip`` and ``annotations_trainval2017.zip`` from
  cocodataset.org, each checked against its published MD5, unpacked into
  ``$CLEARSIGHT_CACHE/coco/val2017/`` (the 5,000 images) and
  ``$CLEARSIGHT_CACHE/coco/annotations/instances_val2017.json`` — the paths the sweep's COCO
  scenes read (``--coco-images``, ``--coco-annotations``) — and verified: every image the
  annotations list is present.

A dataset named to be fetched that cannot be (no network, no huggingface_hub) is an
:class:`~clearsight.validate.InputError`: one line saying what to do, exit code 2 (as ``clearsight
fetch --help`` says), never a "skipped" exit 0.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from clearsight.cache import cache_dir
from clearsight.datasets.hub import HUB_SPECS, HubSpec, find_hub_spec
from clearsight.datasets.snapshot import FETCH_RECORD, check_schema, locate
from clearsight.fetch.steps import StepResult
from clearsight.paths import resolves_inside, write_target
from clearsight.validate import InputError

#: The download function's signature: huggingface_hub's ``snapshot_download``.
Download = Callable[..., Any]
#: An opener of URLs (``urllib.request.urlopen``), for the COCO archives.
Opener = Callable[..., Any]


def dataset_dir(name: str) -> Path:
    """Where ``clearsight fetch --dataset NAME`` keeps a hub dataset's snapshot (another split
    or config apart: ``NAME[CONFIG]@SPLIT``, :func:`~clearsight.datasets.hub.parse_dataset_ref`)."""
    return cache_dir() / "datasets" / name


def coco_dir() -> Path:
    """Where ``clearsight fetch --dataset coco`` keeps COCO val2017 (``val2017/`` and
    ``annotations/instances_val2017.json``)."""
    return cache_dir() / "coco"


def fetchable() -> tuple[str, ...]:
    """The names ``--dataset`` takes: every hub dataset and ``coco``."""
    return (*HUB_SPECS, "coco")


def fetch_dataset(
    name: str, download: Download | None = None, opener: Opener | None = None
) -> StepResult:
    """Fetch and verify dataset ``name`` (module docstring); ``download`` / ``opener`` stand
    in for huggingface_hub and urllib in tests. InputError for an unknown name, or for files
    that arrive with a schema other than the one followed, or that cannot be fetched here."""
    if name == "coco":
        return fetch_coco(coco_dir(), opener=opener)
    spec = find_hub_spec(name)
    if spec is None:
        raise InputError(f"unknown dataset {name!r}; fetchable: {', '.join(fetchable())}")
    dest = dataset_dir(name)
    step = f"dataset {name}"
    if _record_matches(dest):
        return StepResult(step, "ready", f"{spec.where()} verified in {dest}")
    if download is None:
        try:
            from huggingface_hub import snapshot_download
        except ImportError:
            raise InputError(
                f"cannot fetch dataset {name}: it needs huggingface_hub: "
                "pip install 'clearsight[data]'"
            ) from None
        download = snapshot_download
    try:
        download(
            repo_id=spec.hub_id,
            repo_type="dataset",
            revision=spec.revision if spec.pinned else None,
            allow_patterns=[*spec.downloads, "README.md"],
            local_dir=str(dest),
        )
    except OSError as exc:  # huggingface_hub's errors (offline, not found, gated) are OSErrors
        raise InputError(f"cannot fetch dataset {name}: {_offline_line(spec, dest, exc)}") from None
    rows = _verify_snapshot(spec, dest)
    return StepResult(step, "fetched", f"{rows} rows of {spec.where()} verified in {dest}")


def _offline_line(spec: HubSpec, dest: Path, exc: BaseException) -> str:
    reason = " ".join(str(exc).split())[:160]
    include = " ".join(f"--include '{p}'" for p in (*spec.downloads, "README.md"))
    return (
        f"the hub is not reachable ({type(exc).__name__}: {reason}); where it is, run "
        f"`huggingface-cli download {spec.hub_id} --repo-type dataset {include} --local-dir "
        f"{dest}` (or `clearsight fetch --dataset {shlex.quote(dest.name)}`) and copy {dest} here"
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _downloaded_commit(dest: Path) -> str | None:
    """The commit huggingface_hub downloaded into ``dest`` (its metadata's first line)."""
    meta = dest / ".cache" / "huggingface" / "download" / "README.md.metadata"
    try:
        first = meta.read_text(encoding="utf-8").splitlines()[0].strip()
    except (OSError, IndexError):
        return None
    return first or None


def _verify_snapshot(spec: HubSpec, dest: Path) -> int:
    """Check the snapshot's schema and rows, write its record; the number of rows."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    located = locate(spec, dest)
    check_schema(located)
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in located.files if f.suffix == ".parquet")
    if rows == 0:
        raise InputError(f"dataset {spec.name}: the fetched files of {spec.where()} hold no rows")
    record = {
        "dataset": spec.name,
        "hub_id": spec.hub_id,
        "config": spec.config,
        "split": spec.split,
        "revision": spec.revision,
        "commit": _downloaded_commit(dest),
        "rows": rows,
        "files": {
            str(f.relative_to(dest)): {"bytes": f.stat().st_size, "sha256": _sha256(f)}
            for f in (*located.files, *located.image_files)
        },
    }
    write_target(dest / FETCH_RECORD).write_text(json.dumps(record, indent=2) + "\n", "utf-8")
    return rows


def _record_matches(dest: Path) -> bool:
    """Whether ``dest`` holds a fetch record whose every file is present with its sha256."""
    try:
        record = json.loads((dest / FETCH_RECORD).read_text(encoding="utf-8"))
        files = record["files"]
        return bool(files) and all(
            (dest / rel).is_file()
            and (dest / rel).stat().st_size == want["bytes"]
            and _sha256(dest / rel) == want["sha256"]
            for rel, want in files.items()
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


# --------------------------------------------------------------------------------------------
# COCO val2017
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Archive:
    """One COCO archive: its URL, its published MD5 and the members kept (a prefix)."""

    url: str
    md5: str
    keep: str


#: The two archives of COCO 2017 the sweep needs, with the MD5s cocodataset.org's archives
#: have been published with (the annotation archive's other files are not unpacked).
COCO_ARCHIVES: Final[tuple[Archive, ...]] = (
    Archive(
        "http://images.cocodataset.org/annotations/annotations_trainval2017.zip",
        "f4bbac642086de4f52a3fdda2de5fa2c",
        "annotations/instances_val2017.json",
    ),
    Archive(
        "http://images.cocodataset.org/zips/val2017.zip",
        "442b8da7639aecaf257c1dceb8ba8c80",
        "val2017/",
    ),
)


def coco_problems(dest: Path) -> list[str]:
    """What is missing from a COCO val2017 folder: the annotations, or images they list."""
    annotations = dest / "annotations" / "instances_val2017.json"
    try:
        listed = [im["file_name"] for im in json.loads(annotations.read_text())["images"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"{annotations} is missing or unreadable ({type(exc).__name__})"]
    if not listed:
        return [f"{annotations} lists no images"]
    missing = [n for n in listed if not (dest / "val2017" / n).is_file()]
    if missing:
        return [f"{len(missing)} of {len(listed)} listed images are missing from {dest}/val2017"]
    return []


def fetch_coco(
    dest: Path, opener: Opener | None = None, archives: Sequence[Archive] = COCO_ARCHIVES
) -> StepResult:
    """Download, check and unpack COCO val2017 into ``dest`` (module docstring)."""
    if not coco_problems(dest):
        return StepResult("dataset coco", "ready", f"COCO val2017 verified in {dest}")
    if opener is None:
        from urllib.request import urlopen

        opener = urlopen
    dest.parent.mkdir(parents=True, exist_ok=True)  # the archives wait beside dest, not in it
    with tempfile.TemporaryDirectory(prefix=".clearsight-coco-", dir=dest.parent) as tmp:
        for archive in archives:
            path = Path(tmp) / archive.url.rsplit("/", 1)[1]
            try:
                digest = _download(archive.url, path, opener)
            except OSError as exc:
                raise InputError(
                    f"cannot fetch dataset coco: {_coco_offline_line(dest, exc)}"
                ) from None
            if digest != archive.md5:
                raise InputError(
                    f"{archive.url} arrived with MD5 {digest}, not the published {archive.md5}; "
                    "nothing was unpacked"
                )
            _unpack(path, archive.keep, dest)
    problems = coco_problems(dest)
    if problems:
        raise InputError(f"COCO val2017 in {dest} does not verify: {problems[0]}")
    return StepResult("dataset coco", "fetched", f"COCO val2017 verified in {dest}")


def _download(url: str, path: Path, opener: Opener) -> str:
    """Stream ``url`` to ``path``; its MD5."""
    digest = hashlib.md5(usedforsecurity=False)
    with opener(url, timeout=60) as response, path.open("wb") as out:
        for chunk in iter(lambda: response.read(1 << 20), b""):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _unpack(archive: Path, keep: str, dest: Path) -> None:
    """Extract the members of ``archive`` under ``keep`` into ``dest`` (a member naming a path
    outside ``dest`` is refused)."""
    with zipfile.ZipFile(archive) as zf:
        for member in zf.infolist():
            if not member.filename.startswith(keep) or member.is_dir():
                continue
            target = resolves_inside(dest, member.filename)
            if target is None:
                raise InputError(
                    f"{archive.name} holds a member outside its folder: {member.filename}"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(member) as src, target.open("wb") as out:
                shutil.copyfileobj(src, out)


def _coco_offline_line(dest: Path, exc: BaseException) -> str:
    reason = " ".join(str(exc).split())[:160]
    return (
        f"images.cocodataset.org is not reachable ({type(exc).__name__}: {reason}); where it "
        f"is, run `clearsight fetch --dataset coco` and copy {dest} here, or unzip val2017.zip "
        f"and annotations_trainval2017.zip (cocodataset.org) into {dest}"
    )
