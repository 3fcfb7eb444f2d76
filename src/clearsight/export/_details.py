"""Per-record details as a Hugging Face dataset: every row of the run's face (one per finished
item, its ``key`` the item's) in ``data/details.parquet``; where the face shows items' images
(``shown``: the sweep's questions, grounding's problems, the probe's direct answers), a
stratified sample of those rows with the image the model was shown as an
``Image`` feature in ``data/sample.parquet``; and a dataset card ``README.md`` whose YAML header
names each file (``configs``: ``default``, ``sample``) and its features (``dataset_info``), so
``datasets.load_dataset`` and the Hub's viewer read them as they are typed."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import yaml

from clearsight.export._files import Files

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]

    from clearsight.export._source import ExportRun
    from clearsight.faces.face import Row

__all__ = ["DETAILS", "SAMPLE", "details_files", "details_table"]

#: Where the details and the sample go inside the export (and the dataset repository).
DETAILS, SAMPLE = "data/details.parquet", "data/sample.parquet"

#: Arrow type names whose ``datasets`` dtype is spelled otherwise.
_DTYPES = {"double": "float64", "float": "float32", "halffloat": "float16"}


def details_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """``rows`` as one Arrow table, columns in first-seen order (a row lacking a column holds
    null there)."""
    import pyarrow as pa

    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return pa.Table.from_pylist([{c: row.get(c) for c in columns} for row in rows])


def _sample(run: ExportRun, rows: list[Row], n: int, seed: int) -> pa.Table | None:
    """``n`` rows drawn stratified as ``clearsight verify`` draws its sample
    (:func:`~clearsight.faces.sample.sample_rows`), each with the image its item was shown as
    column ``image`` (null for an item shown none: a text problem); None where no drawn item
    was shown an image (the face shows none, ``n`` is 0, a text-only run)."""
    from clearsight.faces.sample import sample_rows

    if run.face.shown is None:
        return None
    drawn = sample_rows(run.run_dir, run.face, n, seed, rows=rows)
    if all(s.image is None for s in drawn):
        return None
    picked = [
        {**s.row, "image": None if s.image is None else _image(s.image, s.row.get("key"))}
        for s in drawn
    ]
    return _with_image_feature(details_table(picked))


def _image(png: bytes, key: object) -> dict[str, object]:
    """An ``Image`` feature's cell: the PNG and a file name after the item's key."""
    return {"bytes": png, "path": f"{key}.png"}


def _features(table: pa.Table) -> list[dict[str, str]]:
    """The card's features of ``table``: each column's ``datasets`` dtype."""
    return [
        {
            "name": f.name,
            "dtype": "image" if f.name == "image" else _DTYPES.get(str(f.type), str(f.type)),
        }
        for f in table.schema
    ]


def _with_image_feature(table: pa.Table) -> pa.Table:
    """``table`` with the schema metadata that makes ``datasets`` read its ``image`` column as
    an ``Image`` feature (and every other column as the Value it holds)."""
    features = {
        f["name"]: {"_type": "Image"}
        if f["dtype"] == "image"
        else {"dtype": f["dtype"], "_type": "Value"}
        for f in _features(table)
    }
    meta = json.dumps({"info": {"features": features}})
    return table.replace_schema_metadata({"huggingface": meta})


def _card(run: ExportRun, tables: dict[str, tuple[str, pa.Table]]) -> str:
    """The dataset card: YAML header (configs, features, sizes) and what the rows are."""
    header: dict[str, Any] = {
        "configs": [
            {"config_name": name, "data_files": [{"split": "train", "path": path}]}
            for name, (path, _) in tables.items()
        ],
        "dataset_info": [
            {
                "config_name": name,
                "features": _features(table),
                "splits": [
                    {"name": "train", "num_bytes": table.nbytes, "num_examples": table.num_rows}
                ],
            }
            for name, (_, table) in tables.items()
        ],
        "tags": ["clearsight", run.face.name],
    }
    n = tables["default"][1].num_rows
    body = (
        f"# {run.benchmark}: per-record details\n\n"
        f"One row per finished item of a clearsight {run.face.name} run ({n} rows), exported by "
        f"clearsight {run.version} from run `{run.run_dir.name}`"
        + (f" (clearsight revision {run.revision})" if run.revision else "")
        + ". The columns are the protocol's records as its report reads them; docs/methods.md "
        "of clearsight says what each means; `key` is the item's content key in the run's "
        "store.\n"
    )
    if "sample" in tables:
        body += (
            f"\nConfig `sample`: {tables['sample'][1].num_rows} of those rows, drawn stratified "
            "as `clearsight verify` draws, each with the image the model was shown (`image`; "
            "empty for an item shown none).\n"
        )
    return f"---\n{yaml.safe_dump(header, sort_keys=False)}---\n\n{body}"


def _parquet(table: pa.Table) -> bytes:
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def details_files(run: ExportRun, images: int = 0, seed: int = 0) -> Files:
    """``data/details.parquet``, ``data/sample.parquet`` (``images`` rows, drawn with ``seed``,
    where the face shows images) and ``README.md`` of the run's details dataset."""
    rows = list(run.face.need(run.face.rows, "rows for export")(run.run_dir))
    tables = {"default": (DETAILS, details_table(rows))}
    sample = _sample(run, rows, images, seed)
    if sample is not None:
        tables["sample"] = (SAMPLE, sample)
    files = {path: _parquet(table) for path, table in tables.values()}
    return {**files, "README.md": _card(run, tables).encode("utf-8")}
