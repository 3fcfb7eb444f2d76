"""Records: the outcome of one item as a worker hands it to the store, and as it is read back.

A record holds the backend's raw output (always stored, so read-outs can be recomputed without
the model) and the read-outs computed from it. Read back, a record also carries its item (kind
and spec) and attempt number; read back with its kind's read-out type
(:mod:`clearsight.store._readouts`), its read-outs are typed: ``StoredRecord[SweepReadouts]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, Literal

from typing_extensions import TypeVar

from clearsight.validate import InputError

__all__ = ["STATUSES", "R", "Record", "Status", "StoredRecord", "utc_now"]

Status = Literal["ok", "failed"]
STATUSES: tuple[str, ...] = ("ok", "failed")

#: The read-out type of a record read back (a ``TypedDict`` registered for its item kind;
#: untyped reads see a plain mapping).
R = TypeVar("R", bound=Mapping[str, object], default=Mapping[str, Any])


def utc_now() -> str:
    """The current time as ISO-8601 UTC with milliseconds (what ``finished_at`` holds)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Record:
    """The outcome of one item, as the executor hands it to :meth:`RunStore.write_records`.

    ``raw`` is the backend's raw output (any JSON-able value; always stored so read-outs can be
    recomputed without the model), ``readouts`` the flat-or-nested dict of read-outs computed from
    it. A failed record carries the error message and whatever raw output exists (often None).
    ``finished_at`` defaults to the moment the record is made, i.e. when the work finished.
    ``shown`` is never stored: the pixels the model was shown, where the unit was asked to keep
    them (an item of an experiment tracker's sample: :mod:`clearsight.faces.sample`), handed
    back to the writer's process with the record.
    """

    key: str
    status: Status
    error: str | None
    raw: Any
    readouts: Mapping[str, object]
    elapsed_s: float
    finished_at: str = field(default_factory=utc_now)
    shown: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def failed(
        cls, key: str, reason: str | BaseException, elapsed_s: float = 0.0, raw: Any = None
    ) -> Record:
        """The one failed form of a record: ``reason`` says why (an exception reads
        ``"Type: message"``); ``raw`` is whatever output exists, else None."""
        if isinstance(reason, BaseException):
            reason = f"{type(reason).__name__}: {reason}"
        return cls(key, "failed", reason, raw, {}, elapsed_s)

    def __post_init__(self) -> None:
        """Reject a record the database would reject, with a message naming the key."""
        if not isinstance(self.key, str) or not self.key:
            raise InputError(f"record key must be a non-empty string, got {self.key!r}")
        if self.status not in STATUSES:
            raise InputError(
                f"record {self.key}: status must be 'ok' or 'failed', got {self.status!r}"
            )
        if self.status == "ok" and self.error is not None:
            raise InputError(
                f"record {self.key}: an 'ok' record has error None, got {self.error!r}"
            )
        if self.status == "failed" and (not isinstance(self.error, str) or not self.error):
            raise InputError(f"record {self.key}: a 'failed' record needs an error message")
        if not isinstance(self.readouts, Mapping):
            raise InputError(
                f"record {self.key}: readouts must be a mapping, got {self.readouts!r}"
            )
        elapsed = float(self.elapsed_s)
        if not math.isfinite(elapsed) or elapsed < 0:
            raise InputError(f"record {self.key}: elapsed_s must be >= 0, got {self.elapsed_s!r}")
        try:
            datetime.fromisoformat(self.finished_at)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"record {self.key}: finished_at {self.finished_at!r} is not ISO-8601"
            ) from exc


@dataclass(frozen=True, kw_only=True)
class StoredRecord(Record, Generic[R]):
    """A record read back from the store, with its item (protocol, spec) and attempt number.

    ``StoredRecord[T]``: read with its kind's read-out type ``T``
    (:meth:`RunStore.iter_records` with ``readouts=T``), so ``record.readouts["answer"]`` is
    checked by the type checker; a plain ``StoredRecord``'s read-outs are a mapping. (It is
    built by the store, by keyword: ``readouts`` is redeclared here with that type.)
    """

    readouts: R
    protocol: str
    spec: dict[str, Any]
    attempt: int
