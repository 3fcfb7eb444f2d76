"""Where a run's numbers came from, as its manifest records it: the configuration, the protocol,
the versions of the packages that compute them and the git revision of clearsight itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def run_manifest(config: dict[str, Any], protocol: str, **extra: Any) -> dict[str, Any]:
    """The manifest a protocol's run begins with (:meth:`clearsight.store.RunStore.begin_run`):
    ``config`` in its JSON form, ``protocol``, package versions, git revision, then ``extra``
    (prompt hashes and whatever else the protocol's numbers depend on)."""
    return {
        "config": config,
        "protocol": protocol,
        "packages": package_versions(),
        "git_revision": git_revision(),
        **extra,
    }


def package_versions() -> dict[str, str]:
    """Versions of the packages that can change a run's numbers."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in (
        "clearsight",
        "numpy",
        "scipy",
        "numba",
        "pillow",
        "scikit-image",
        "torch",
        "transformers",
        "onnxruntime",
    ):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def git_revision() -> str | None:
    """The git commit of the clearsight source tree, when it is a checkout."""
    import subprocess

    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None
