"""Results where researchers keep them: a finished run exported as a Hugging Face details
dataset (Parquet and its dataset card), the Hub's evaluation results of a model repository,
Every Eval Ever records (``clearsight export``), pushed to the Hub (``clearsight push``), and
many runs' records ranked as a leaderboard (``clearsight board --records``).

Every protocol is reached through its face (:func:`clearsight.faces.face_of`): the rows are
its ``rows``, the numbers its card section's (with their bootstrap intervals); a protocol
registered from outside gets every format without an edit here. docs/export.md says what each
file holds.
"""

from __future__ import annotations

from clearsight.export._export import FORMATS, ExportOptions, export_files, export_run
from clearsight.export._hub import Pushed, push_run
from clearsight.export._leaderboard import leaderboard, read_records, write_leaderboard
from clearsight.export._repo_ids import hub_model_id, parse_repo_id
from clearsight.export._source import ExportRun, finished_run

__all__ = [
    "FORMATS",
    "ExportOptions",
    "ExportRun",
    "Pushed",
    "export_files",
    "export_run",
    "finished_run",
    "hub_model_id",
    "leaderboard",
    "parse_repo_id",
    "push_run",
    "read_records",
    "write_leaderboard",
]
