"""The run store: one SQLite file per run directory holding a run's items, records and manifest.

The public face is small: :class:`RunStore` (open, add items, write records, read them back),
:class:`Record` / :class:`StoredRecord`, :func:`load_run` (a run as one frame) and the items a
protocol offers the driver — typed specs in any sequence, or :class:`SpecGrid` /
:class:`SpecGrids` (a product of groups of fields, built as items only when iterated) — with
:func:`keys_of`, :func:`kinds_of` and :func:`select` over either. How rows are encoded, grids
keyed, frames joined and old schemas migrated is private to this package.
"""

from __future__ import annotations

from clearsight.store._bulk import collector_paused
from clearsight.store._grid import SpecGrid, SpecGrids, keys_of, kinds_of, select
from clearsight.store._store import (
    DB_NAME,
    FRAME_COLUMNS,
    SCHEMA_VERSION,
    ConfigMismatch,
    Record,
    RunStore,
    Status,
    StoredRecord,
    compact_json,
    load_run,
)

__all__ = [
    "DB_NAME",
    "FRAME_COLUMNS",
    "SCHEMA_VERSION",
    "ConfigMismatch",
    "Record",
    "RunStore",
    "SpecGrid",
    "SpecGrids",
    "Status",
    "StoredRecord",
    "collector_paused",
    "compact_json",
    "keys_of",
    "kinds_of",
    "load_run",
    "select",
]
