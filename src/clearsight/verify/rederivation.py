"""Read-outs derived again from the stored raw outputs, with today's code and no model.

Every record keeps the backend's raw output, so its read-outs can be computed again: the check
to run after upgrading clearsight (did the parsing change a number?) and the one that catches a
store edited by hand. :func:`rederive` reads each ``ok`` record of a kind whose protocol says
how its read-outs are derived (its face's ``derive``: :mod:`clearsight.faces`), each by its
protocol's own code, and a re-ask of one (on the stored spec of the record it repeats), and
lists the records whose stored read-outs differ from the derived ones (numbers equal within
:data:`TOLERANCE`; any other value exactly). Records of other kinds are counted, not read.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clearsight.faces import face_of_kind
from clearsight.faces.verifying import Derive
from clearsight.store import RunStore
from clearsight.verify.specs import VERIFY_KIND

__all__ = ["TOLERANCE", "Rederived", "rederive", "same_value"]

#: Two numbers of read-outs derived by the same code from the same raw output are equal within
#: this (absolute); a number stored as JSON keeps every bit of a float64, so this only forgives
#: the last bits.
TOLERANCE = 1e-12


def same_value(a: Any, b: Any, tolerance: float = TOLERANCE) -> bool:
    """Whether two JSON values are equal: numbers within ``tolerance`` (NaN equals NaN), a
    bool only to a bool, mappings key by key, lists item by item, anything else exactly."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (type(a) is type(b) and a == b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= tolerance
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_value(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        pairs = zip(a, b, strict=False)
        return len(a) == len(b) and all(same_value(x, y, tolerance) for x, y in pairs)
    return bool(a == b)


def _derive(kind: str) -> Derive | None:
    """How the read-outs of a record of ``kind`` are derived again (None: its protocol's face
    derives none)."""
    face = face_of_kind(kind)
    return None if face is None else face.derive.get(kind)


@dataclass(frozen=True)
class Rederived:
    """What :func:`rederive` found: ``checked`` records per kind, ``skipped`` records per kind
    it cannot read, and ``differ``: (key, kind, the read-out names whose values differ)."""

    checked: dict[str, int]
    skipped: dict[str, int]
    differ: list[tuple[str, str, tuple[str, ...]]]

    @property
    def exit_code(self) -> int:
        """0 when every derived read-out equals the stored one, 3 when some differ."""
        return 3 if self.differ else 0


def _changed(stored: Mapping[str, object], derived: Mapping[str, object]) -> tuple[str, ...]:
    """The read-out names whose stored and derived values differ (a name only one has too)."""
    names = sorted(set(stored) | set(derived))
    return tuple(
        n
        for n in names
        if n not in stored or n not in derived or not same_value(stored[n], derived[n])
    )


def rederive(run_dir: Path) -> Rederived:
    """Derive every known record's read-outs again from its raw output (module docstring)."""
    checked: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    differ: list[tuple[str, str, tuple[str, ...]]] = []
    with RunStore.open(run_dir, read_only=True) as store:
        for rec in store.iter_records("ok"):
            kind, spec = rec.protocol, rec.spec
            if kind == VERIFY_KIND:  # a re-ask: read as the record it repeats
                original = store.record(rec.spec["of"])
                spec = {} if original is None else original.spec
                derive = _derive(rec.spec.get("of_kind", "")) if original else None
            else:
                derive = _derive(kind)
            if derive is None:
                skipped[kind] += 1
                continue
            checked[kind] += 1
            changed = _changed(rec.readouts, derive(spec, rec.raw, rec.readouts))
            if changed:
                differ.append((rec.key, kind, changed))
    return Rederived(dict(checked), dict(skipped), differ)
