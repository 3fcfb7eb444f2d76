"""Where clearsight keeps data it fetched or converted (never inside the package): a base
module, so models, the perceiver, scenes and datasets read the cache without importing the
``fetch`` command's package."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The data cache: ``$CLEARSIGHT_CACHE`` if set, else ``~/.cache/clearsight``."""
    env = os.environ.get("CLEARSIGHT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "clearsight"
