"""Settings of ``clearsight view``: where it listens, or the static bundle it writes instead
(the command's options are generated from :class:`ViewSettings`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_SAMPLE", "ViewSettings"]

#: Items a static bundle holds unless told.
DEFAULT_SAMPLE = 300


class ViewSettings(BaseModel):
    """Where ``clearsight view`` writes a static bundle, whether it only builds the runs' side
    indexes, or else how it listens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bundle: Path | None = Field(
        None,
        description="Write a static site of the run into this new directory instead of "
        "serving: its curve points, a stratified sample of its items and their images, "
        "readable from file:// or any static host (GitHub Pages, a Hugging Face Space).",
    )
    index: bool = Field(
        False,
        description="Build (or bring up to date) each run's side index, printing progress, "
        "and exit: a large run's pages are then ready at once when it is served.",
    )
    sample: int = Field(
        DEFAULT_SAMPLE, ge=1, description="Items a --bundle holds, spread over the curve points."
    )
    host: str = Field(
        "127.0.0.1",
        description="Interface to bind; the loopback default keeps the viewer private to this "
        "machine (anything else exposes the runs' items to the network).",
    )
    port: int = Field(8766, ge=0, le=65535, description="TCP port to listen on (0: any free).")
