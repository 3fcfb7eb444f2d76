"""Model snapshots in the Hugging Face cache: ``clearsight fetch --model HUB_ID`` (and
``--depth``) downloads one with ``huggingface_hub`` and verifies it; offline, a snapshot already
in the cache is verified from its own layout.

The cache, as ``huggingface_hub`` lays it out (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
``~/.cache/huggingface/hub``)::

    models--ORG--NAME/
      refs/main                      the commit hash the branch points at
      blobs/<etag>                   each file's bytes once, named by the hub's hash of them
      snapshots/<commit>/<file>      symbolic links into blobs/

A blob's name is what the hub lists for the file: the SHA-256 of a file kept in Git LFS
(weights), the git blob hash (SHA-1 of ``"blob <size>\\0" + bytes``) of any other file. So a
snapshot is verified against the hub's listing when the hub is reachable (every file present,
its size as listed, its hash as listed) and against its blob names when it is not. Either way
a snapshot needs ``config.json`` and at least one weights file. The run side never downloads:
``hf:`` and the depth estimator read this cache with ``local_files_only``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from clearsight.validate import InputError, short_repr

__all__ = ["Snapshot", "cached_snapshot", "fetch_model", "hub_id_of", "verify_snapshot"]

#: Suffixes of weights files a snapshot must hold one of.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SHA1 = re.compile(r"[0-9a-f]{40}")
_CHUNK = 1 << 20
#: One part of a hub id (``ORG`` or ``NAME``) as the hub accepts it: at most 96 of letters,
#: digits, ``-``, ``_`` and ``.``, no ``--`` or ``..``, starting and ending with a word character.
_HUB_NAME = re.compile(r"(?!.*(?:--|\.\.))[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?")


@dataclass(frozen=True)
class Snapshot:
    """A verified snapshot: where it is, its commit, and what was checked."""

    repo_id: str
    revision: str
    path: Path
    files: int
    size: int
    checked: Literal["hub", "blob names"]

    def describe(self, status: str) -> str:
        """One line: ``status`` (fetched / ready), the model, where and what was checked."""
        units = (("GB", 1e9), ("MB", 1e6), ("kB", 1e3))
        unit, scale = next(((u, s) for u, s in units if self.size >= s), ("B", 1.0))
        return (
            f"{status}: {self.repo_id} at {self.revision[:12]} in {self.path}: {self.files} "
            f"files, {self.size / scale:.1f} {unit}, each file's hash checked against the "
            f"{self.checked}"
        )


def hub_id_of(name: str) -> str:
    """The hub id a ``--model`` names: a hub id itself, or a preset's name (its hub id)."""
    from clearsight.models.presets import find_preset

    preset = find_preset(name)
    if preset is None:
        org, sep, repo = name.partition("/")
        if not (sep and _HUB_NAME.fullmatch(org) and _HUB_NAME.fullmatch(repo)):
            raise InputError(
                f"--model {short_repr(name)} is neither a hub id (ORG/NAME, each at most 96 "
                "letters, digits, '-', '_' or '.', no '--' or '..', neither '-' nor '.' at either "
                "end) nor a preset; `clearsight models` lists the presets"
            )
        return name
    if preset.hub_id is None:
        raise InputError(f"preset {preset.name!r} is not on the Hugging Face hub: {preset.note}")
    return preset.hub_id


def _cache_root(cache_dir: str | Path | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def cached_snapshot(
    repo_id: str, revision: str | None = None, cache_dir: str | Path | None = None
) -> Path | None:
    """The snapshot folder of ``repo_id`` at ``revision`` (a branch, tag or commit; default
    ``main``) in the cache, or None when the cache does not hold it."""
    folder = _cache_root(cache_dir) / ("models--" + repo_id.replace("/", "--"))
    revision = revision or "main"
    commit = revision
    if not _SHA1.fullmatch(revision):
        ref = folder / "refs" / revision
        if not ref.is_file():
            return None
        commit = ref.read_text(encoding="utf-8").strip()
    path = folder / "snapshots" / commit
    return path if path.is_dir() else None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _git_blob_sha1(path: Path) -> str:
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _hash_matches(path: Path, expected: str) -> bool:
    """Whether ``path``'s bytes have the hub hash ``expected`` (SHA-256 or git blob SHA-1)."""
    if _SHA256.fullmatch(expected):
        return _sha256(path) == expected
    return _git_blob_sha1(path) == expected


def _files(snapshot: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(snapshot.rglob("*")):
        if path.is_file():
            yield path.relative_to(snapshot).as_posix(), path


def _expected_from_blob_names(snapshot: Path) -> dict[str, tuple[int | None, str | None]]:
    """Per file of a cached snapshot: (no size, the hash its blob's name states)."""
    out: dict[str, tuple[int | None, str | None]] = {}
    for name, path in _files(snapshot):
        blob = path.resolve().name if path.is_symlink() else ""
        known = _SHA256.fullmatch(blob) or _SHA1.fullmatch(blob)
        out[name] = (None, blob if known else None)
    return out


def _expected_from_hub(siblings: Iterable[Any]) -> dict[str, tuple[int | None, str | None]]:
    """Per file the hub lists: (its size, its SHA-256 if in LFS, else its git blob hash)."""
    out: dict[str, tuple[int | None, str | None]] = {}
    for s in siblings:
        lfs = getattr(s, "lfs", None)
        out[str(s.rfilename)] = (s.size, lfs.sha256 if lfs is not None else s.blob_id)
    return out


def verify_snapshot(
    repo_id: str, snapshot: Path, siblings: Iterable[Any] | None = None
) -> Snapshot:
    """Check a snapshot folder: ``config.json`` and a weights file present, and every file
    as the hub lists it (``siblings``: the ``RepoSibling`` entries of ``model_info(...,
    files_metadata=True)``: present, its size, its hash) or, without them, as its blob's
    name states. InputError naming the first file that is missing or differs."""
    hub = siblings is not None
    expected = (
        _expected_from_blob_names(snapshot) if siblings is None else _expected_from_hub(siblings)
    )
    names = set(expected)
    if "config.json" not in names:
        raise InputError(f"{repo_id} in {snapshot}: no config.json, so not a model snapshot")
    if not any(n.endswith(WEIGHT_SUFFIXES) for n in names):
        raise InputError(f"{repo_id} in {snapshot}: no weights file ({', '.join(WEIGHT_SUFFIXES)})")
    size = 0
    for name, (want_size, want_hash) in sorted(expected.items()):
        path = snapshot / name
        if not path.is_file():
            raise InputError(f"{repo_id} in {snapshot}: {name} is missing")
        got = path.stat().st_size
        if want_size is not None and got != want_size:
            raise InputError(f"{repo_id}: {name} has {got} bytes, the hub lists {want_size}")
        if want_hash is not None and not _hash_matches(path, want_hash):
            raise InputError(f"{repo_id}: {name} does not hash to {want_hash} (a damaged file)")
        size += got
    revision = snapshot.name
    return Snapshot(
        repo_id, revision, snapshot, len(expected), size, "hub" if hub else "blob names"
    )


@dataclass(frozen=True)
class Fetched:
    """What ``fetch_model`` did: ``fetched`` (from the hub) or ``ready`` (cached, the hub not
    reached, and why)."""

    status: Literal["fetched", "ready"]
    snapshot: Snapshot
    offline_reason: str | None = None

    def describe(self) -> str:
        line = self.snapshot.describe(self.status)
        if self.offline_reason is not None:
            line += f" (the hub was not reached: {self.offline_reason})"
        return line


def _answer(repo_id: str, exc: BaseException) -> InputError:
    from huggingface_hub.errors import (
        GatedRepoError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        why = "is gated: accept its licence on its hub page, then set HF_TOKEN to a token"
    elif isinstance(exc, RepositoryNotFoundError):
        why = "is not on the hub (or is private: set HF_TOKEN to a token that may read it)"
    elif isinstance(exc, RevisionNotFoundError):
        why = "has no such revision"
    else:
        why = f"could not be fetched: {str(exc).splitlines()[0] if str(exc) else type(exc)}"
    return InputError(f"{repo_id} {why}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def fetch_model(
    repo_id: str, revision: str | None = None, cache_dir: str | Path | None = None
) -> Fetched:
    """Download ``repo_id`` into the Hugging Face cache and verify it against the hub's
    listing; when the hub cannot be reached, verify the cached snapshot from its blob names
    instead, or raise InputError saying what to do (one line)."""
    try:
        import huggingface_hub as hub
    except ImportError as exc:
        from clearsight.models import install_hint

        raise InputError(f"fetching models needs huggingface_hub: {install_hint('hf')}") from exc
    from huggingface_hub.errors import HfHubHTTPError

    api = hub.HfApi()
    try:
        info = api.model_info(repo_id, revision=revision, files_metadata=True, timeout=15)
        # by the branch, so the cache's refs/ name the snapshot for hf: and the depth model
        path = Path(hub.snapshot_download(repo_id, revision=revision, cache_dir=cache_dir))
        if path.name != info.sha:  # the branch moved on meanwhile: the listing of what came
            info = api.model_info(repo_id, revision=path.name, files_metadata=True, timeout=15)
    except HfHubHTTPError as exc:  # the hub answered: no such repo, gated, ...
        raise _answer(repo_id, exc) from exc
    except Exception as exc:  # whatever the transport raises: the hub is not reachable
        reason = _first_line(exc)
        cached = cached_snapshot(repo_id, revision, cache_dir)
        if cached is None:
            cache = _cache_root(cache_dir)
            folder = "models--" + repo_id.replace("/", "--")
            raise InputError(
                f"cannot fetch {repo_id}: the Hugging Face hub is not reachable ({reason}) and "
                f"the model is not in the cache {cache}; on a machine that reaches the hub run "
                f"`clearsight fetch --model {repo_id}` and copy its {folder} folder into {cache} "
                "(or point HF_HUB_CACHE at a cache that holds it)"
            ) from None
        return Fetched("ready", verify_snapshot(repo_id, cached), reason)
    return Fetched("fetched", verify_snapshot(repo_id, path, info.siblings or []))
