"""The run store: one SQLite file per run directory holding a run's items, records and manifest.

The public face is small: :class:`RunStore` (open, add items, write records, read them back),
:class:`Record` / :class:`StoredRecord` (``StoredRecord[T]``: read back with its kind's read-out
type, :func:`readouts_of`), :func:`load_run` (a run as one frame), :func:`read_shared` (a
protocol's reader of a run, its value shared by the threads that read the run at once),
:class:`ConfigMismatch`, and
the items a protocol offers the driver: :class:`Items`, one sequence protocol (keys, kinds, the
wanted ones, the stored rows) that a plain sequence of specs gets from :func:`as_items` and
:class:`SpecGrid` / :class:`SpecGrids` (a product of groups of fields, built as items only when
iterated) have of their own; and a side index of a run (:class:`SideIndex`, laid out by an
:class:`IndexDesign`, read with typed :class:`Select` values: the viewer's listings), the one
other SQLite file a run has. How rows are encoded, keys stored, frames joined and old schemas
migrated is private to this package.
"""

from __future__ import annotations

from clearsight.store._bulk import collector_paused
from clearsight.store._connect import DB_NAME
from clearsight.store._cost import (
    COST_COLUMNS,
    MEASURES,
    cost_table,
    record_cost,
    run_cost,
    spec_model,
)
from clearsight.store._items import Items, SpecGrid, SpecGrids, as_items, keys_of, select
from clearsight.store._json import compact_json
from clearsight.store._manifest import ConfigMismatch
from clearsight.store._readouts import readouts_of
from clearsight.store._records import Record, StoredRecord
from clearsight.store._run_store import RunStore, load_run, run_manifest, run_protocol
from clearsight.store._schema import FRAME_COLUMNS, SCHEMA_VERSION
from clearsight.store._shared import read_shared
from clearsight.store._side import IndexDesign, Order, Range, Select, SideIndex, Value
from clearsight.store._stream import RecordChunk, last_record_id, record_chunks

__all__ = [
    "COST_COLUMNS",
    "DB_NAME",
    "FRAME_COLUMNS",
    "MEASURES",
    "SCHEMA_VERSION",
    "ConfigMismatch",
    "IndexDesign",
    "Items",
    "Order",
    "Range",
    "Record",
    "RecordChunk",
    "RunStore",
    "Select",
    "SideIndex",
    "SpecGrid",
    "SpecGrids",
    "StoredRecord",
    "Value",
    "as_items",
    "collector_paused",
    "compact_json",
    "cost_table",
    "keys_of",
    "last_record_id",
    "load_run",
    "read_shared",
    "readouts_of",
    "record_chunks",
    "record_cost",
    "run_cost",
    "run_manifest",
    "run_protocol",
    "select",
    "spec_model",
]
