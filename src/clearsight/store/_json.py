"""The JSON text of the store's columns: written compact with key variables redacted, read back
with corrupted text named by its run, table and key.

Values are written by one :class:`json.JSONEncoder` with NaN and infinities kept as the
``NaN``/``Infinity`` tokens (Python reads them back exactly; SQLite's JSON functions accept them
from 3.42 on), key order and non-ASCII text kept. Nothing the store writes holds the value of a
key variable (:func:`clearsight.credentials.redact`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

from clearsight.credentials import redact_value, secret_values, url_secrets
from clearsight.validate import InputError

__all__ = ["compact_json", "dumps", "loads", "secrets_in"]


def _json_default(obj: Any) -> Any:
    """Encode the non-JSON values a backend or config plausibly holds (numpy, paths, dates)."""
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return obj.tolist()
    if isinstance(obj, datetime | date):
        return obj.isoformat()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


# One encoder for every write: json.dumps with options would build a new encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_json_default)


def compact_json(value: Any) -> str:
    """``value`` as JSON text the way the store writes its columns: compact, key order and
    non-ASCII kept, NaN and infinities as tokens. A stored column decoded and encoded again
    reads as it is stored, so a listing can preview the decoded values of a record."""
    return _ENCODER.encode(value)


def dumps(obj: Any, what: str, secrets: Sequence[str] | None = None) -> str:
    """Compact JSON of ``obj`` (key order kept), with the value of every key variable
    redacted (:func:`~clearsight.credentials.redact`: nothing the store writes holds a key);
    ``what`` names it in the error if it fails. ``secrets``: the values to redact, when the
    caller read them once for a whole batch (reading the environment costs ~40 µs, more than
    encoding a record)."""
    try:
        text = compact_json(obj)
        found = secrets_in(text, secret_values() if secrets is None else secrets)
        return compact_json(redact_value(obj, found)) if found else text
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} is not JSON-able: {exc}") from exc


def secrets_in(text: str, secrets: Sequence[str]) -> list[str]:
    """The ``secrets`` that JSON ``text`` holds, as they are or as JSON escapes them, and the
    credentials its URLs hold (:func:`~clearsight.credentials.url_secrets`)."""
    found = [s for s in secrets if s in text or _ENCODER.encode(s)[1:-1] in text]
    return found + url_secrets(text) if "://" in text else found


def loads(text: str, path: Path | None, table: str, key: str, column: str = "value") -> Any:
    """``json.loads``; corrupted stored JSON is an InputError naming the run, table and key."""
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        where = f"the run {path.parent}" if path is not None else "a run"
        raise InputError(
            f"corrupted JSON in {where}: table {table}, key {key}, column {column} ({exc})"
        ) from None
