"""Per-record details as a Hugging Face dataset: every row of the run's face (one per finished
item) in ``data/details.parquet`` and a dataset card ``README.md`` whose YAML header names the
file (``configs``) and its features (``dataset_info``), so ``datasets.load_dataset`` and the
Hub's viewer read it as it is typed."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import yaml

from clearsight.export._files import Files

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]

    from clearsight.export._source import ExportRun

__all__ = ["DETAILS", "details_files", "details_table"]

#: Where the details go inside the export (and the dataset repository).
DETAILS = "data/details.parquet"

#: Arrow type names whose ``datasets`` dtype is spelled otherwise.
_DTYPES = {"double": "float64", "float": "float32", "halffloat": "float16"}


def details_table(run: ExportRun) -> pa.Table:
    """The run's rows (its face's ``rows``) as one Arrow table, columns in first-seen order
    (a row lacking a column holds null there)."""
    import pyarrow as pa

    rows = list(run.face.need(run.face.rows, "rows for export")(run.run_dir))
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return pa.Table.from_pylist([{c: row.get(c) for c in columns} for row in rows])


def _card(run: ExportRun, table: pa.Table) -> str:
    """The dataset card: YAML header (configs, features, size) and what the rows are."""
    features = [
        {"name": f.name, "dtype": _DTYPES.get(str(f.type), str(f.type))} for f in table.schema
    ]
    header: dict[str, Any] = {
        "configs": [
            {"config_name": "default", "data_files": [{"split": "train", "path": DETAILS}]}
        ],
        "dataset_info": {
            "features": features,
            "splits": [{"name": "train", "num_examples": table.num_rows}],
        },
        "tags": ["clearsight", run.face.name],
    }
    body = (
        f"# {run.benchmark}: per-record details\n\n"
        f"One row per finished item of a clearsight {run.face.name} run ({table.num_rows} rows), "
        f"exported by clearsight {run.version} from run `{run.run_dir.name}`"
        + (f" (clearsight revision {run.revision})" if run.revision else "")
        + ". The columns are the protocol's records as its report reads them; docs/methods.md "
        "of clearsight says what each means.\n"
    )
    return f"---\n{yaml.safe_dump(header, sort_keys=False)}---\n\n{body}"


def details_files(run: ExportRun) -> Files:
    """``data/details.parquet`` and ``README.md`` of the run's details dataset."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    table = details_table(run)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return {DETAILS: buffer.getvalue(), "README.md": _card(run, table).encode("utf-8")}
