"""DataFrames built chunk by chunk in bounded memory, repeated strings as categoricals.

A run's records are read a chunk at a time (a few thousand rows of Python values, dropped once
the chunk is a frame); each chunk's text columns whose values repeat (models, conditions,
wordings, answers) become categoricals; the chunks are joined at the end with one set of
categories per column. Memory is then the typed frame plus one chunk, instead of one Python
object per cell (a text column of 1.8 million rows as Python strings is ~100 MB; as a
categorical of a handful of values, 1.8 MB).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["compact", "join_chunks"]


def _is_text(column: pd.Series) -> bool:
    """Whether every non-missing value of ``column`` is a string (and one is)."""
    return bool(pd.api.types.infer_dtype(column, skipna=True) == "string")


def compact(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each text column whose values repeat (at most half the rows distinct)
    as a categorical with sorted categories; other columns unchanged."""
    out = {}
    for name in frame.columns:
        column = frame[name]
        if (
            not isinstance(column.dtype, pd.CategoricalDtype)
            and not pd.api.types.is_numeric_dtype(column.dtype)
            and _is_text(column)
            and column.nunique() * 2 <= max(len(column), 2)
        ):
            column = column.astype("category")
        out[name] = column
    return pd.DataFrame(out, index=frame.index)


def join_chunks(chunks: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    """The chunks one under the other (index 0..n-1), with ``columns`` in that order; a column
    missing from a chunk is missing values there; categoricals are joined on the union of their
    categories (sorted) without turning into objects; any other column gets the dtype one frame
    of all its rows would have (numbers with gaps as floats, text as strings)."""
    sizes = [len(c) for c in chunks]
    total = sum(sizes)
    out: dict[str, pd.Series | np.ndarray | pd.Categorical] = {}
    for name in columns:
        parts = [c.get(name) for c in chunks]
        present = [p for p in parts if p is not None and not (p.isna().all() and len(p))]
        if present and all(isinstance(p.dtype, pd.CategoricalDtype) for p in present):
            out[name] = _join_categoricals(parts, sizes)
            continue
        filled = [
            p if p is not None else pd.Series(np.nan, index=range(n), dtype=object)
            for p, n in zip(parts, sizes, strict=True)
        ]
        if any(isinstance(p.dtype, pd.CategoricalDtype) for p in filled):
            filled = [p.astype(object) for p in filled]
        joined = pd.concat(filled, ignore_index=True) if filled else pd.Series([], dtype=object)
        if joined.dtype == object:  # numbers or text beside a chunk's missing values: as a
            joined = joined.infer_objects()  # frame of all the rows would type them
        out[name] = compact(joined.to_frame(name))[name] if len(chunks) > 1 else joined
    return pd.DataFrame(out, index=range(total), columns=list(columns))


def _join_categoricals(parts: Sequence[pd.Series | None], sizes: Sequence[int]) -> pd.Categorical:
    """Categorical parts (None, or all missing, where a chunk lacks the column) joined."""
    categories = sorted(
        {
            c
            for p in parts
            if p is not None and isinstance(p.dtype, pd.CategoricalDtype)
            for c in p.cat.categories
        }
    )
    dtype = pd.CategoricalDtype(categories)
    codes: list[np.ndarray] = []
    for part, n in zip(parts, sizes, strict=True):
        if part is None or not isinstance(part.dtype, pd.CategoricalDtype):
            codes.append(np.full(n, -1, dtype=np.int32))
        else:
            codes.append(part.cat.set_categories(categories).cat.codes.to_numpy(np.int32))
    joined = np.concatenate(codes) if codes else np.empty(0, dtype=np.int32)
    return pd.Categorical.from_codes(joined, dtype=dtype)
