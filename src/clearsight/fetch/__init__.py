"""What a pip install lacks, fetched and verified: ``clearsight fetch``.

:mod:`~clearsight.fetch.steps` sets up the data and models the package uses itself (the bundled
photos, the detector, the embedded text model; each step idempotent, skipped with a note when a
tool is missing), :mod:`~clearsight.fetch.hub` fetches and verifies model checkpoints in the
Hugging Face cache (``--model``, ``--depth``). Where clearsight keeps what it fetched or
converted (never inside the package) is :func:`clearsight.cache.cache_dir`, a base module that
the packages which read the cache import without reaching up into this command's.
"""

from __future__ import annotations

from clearsight.cache import cache_dir
from clearsight.fetch.hub import cached_snapshot, fetch_model, hub_id_of
from clearsight.fetch.steps import STEPS, StepResult, fetch_all

__all__ = [
    "STEPS",
    "StepResult",
    "cache_dir",
    "cached_snapshot",
    "fetch_all",
    "fetch_model",
    "hub_id_of",
]
