"""Content hashes and the seeds derived from them: no global random state anywhere.

Every random choice in clearsight (an option order, a plasma fractal, a bootstrap draw) comes
from a generator seeded by hashing the parts that identify it, so it is reproducible, independent
of execution order and the same on every machine.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np


def canonical_json(obj: Any) -> str:
    """The canonical JSON text of ``obj``: sorted keys, no spaces, non-ASCII kept, anything
    else by ``str`` (what :func:`content_hash` hashes)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(obj: Any) -> str:
    """SHA-256 hex digest of the canonical JSON form of ``obj`` (:func:`canonical_json`)."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


def derive_seed(*parts: Any) -> int:
    """A 32-bit seed from the content hash of ``parts`` (fits ``RandomState`` and ``Generator``)."""
    return int(content_hash(list(parts))[:8], 16)


def rng_for(*parts: Any) -> np.random.Generator:
    """A ``numpy.random.Generator`` seeded from ``parts``."""
    return np.random.default_rng(int(content_hash(list(parts))[:32], 16))
