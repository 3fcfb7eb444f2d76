"""The run an export reads: a finished run of a protocol that has a face, checked before
anything is written (:func:`finished_run`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.faces.face import ProtocolFace

__all__ = ["ExportRun", "finished_run"]


@dataclass(frozen=True)
class ExportRun:
    """A finished run (:func:`finished_run`): its directory, manifest and protocol's face."""

    run_dir: Path
    manifest: dict[str, Any]
    face: ProtocolFace

    @property
    def benchmark(self) -> str:
        """The name its results are filed under: ``clearsight-<protocol>``."""
        return f"clearsight-{self.face.name}"

    @property
    def version(self) -> str:
        """The clearsight version that made the run (its manifest's; this one's if it has none)."""
        from clearsight import __version__

        return str((self.manifest.get("packages") or {}).get("clearsight") or __version__)

    @property
    def revision(self) -> str:
        """The git revision of clearsight that made the run ('' where it was no checkout)."""
        return str(self.manifest.get("git_revision") or "")


def finished_run(run: Path) -> ExportRun:
    """The run in ``run``; an InputError where it holds no run, where its protocol has no face
    or where items have no record yet (an unfinished run: finish it first)."""
    from clearsight.faces import face_of
    from clearsight.store import RunStore, run_manifest, run_protocol

    manifest = run_manifest(run)
    face = face_of(run_protocol(run))
    with RunStore.open(run, read_only=True) as store:
        counts = store.counts()
    missing = counts["items"] - counts["ok"] - counts["failed"]
    if missing > 0:
        raise InputError(
            f"{run} is an unfinished run: {missing} of its {counts['items']} items have no record "
            "yet; finish it (its run command resumes it) and export again"
        )
    if counts["ok"] == 0:
        raise InputError(f"{run} has no finished item to export")
    return ExportRun(run, manifest, face)
