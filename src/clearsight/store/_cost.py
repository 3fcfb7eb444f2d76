"""What a run's models cost, read from the raw outputs its records store.

Every backend's raw reply carries the model's seconds (``latency_s``) and its token counts
(``usage``: ``prompt_tokens``, ``completion_tokens`` and, for ``hf:``, ``images`` shown); a
record whose raw output holds several replies (a probe episode's sensor turns, a grounding
item's slots) carries them nested. :func:`record_cost` sums each measure over the whole raw
output; :func:`run_cost` tabulates, per model, the totals over the run's records and the
per-record medians. Every record counts, ok or failed: a failed reply spent the model's time
too. A measure no record of a model carries is NaN (not recorded), never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np
import pandas as pd
from pydantic import JsonValue

#: The measures, in the order a cost table shows them.
MEASURES: Final = ("model_s", "prompt_tokens", "completion_tokens", "images")

#: The columns of :func:`run_cost`'s table.
COST_COLUMNS: Final = (
    "model",
    "device",
    "records",
    *(f"{m}_{what}" for m in MEASURES for what in ("total", "median", "n")),
)


def _walk(value: Any, found: dict[str, float], in_usage: bool) -> None:
    """Add the measures ``value`` holds (at any depth) into ``found``."""
    if isinstance(value, list):
        for v in value:
            _walk(v, found, in_usage)
        return
    if not isinstance(value, Mapping):
        return
    for key, v in value.items():
        number = isinstance(v, int | float) and not isinstance(v, bool)
        if number and key == "latency_s":
            found["model_s"] = found.get("model_s", 0.0) + float(v)
        elif number and key in ("prompt_tokens", "completion_tokens"):
            found[key] = found.get(key, 0.0) + float(v)
        elif number and key == "images" and in_usage:
            found["images"] = found.get("images", 0.0) + float(v)
        else:
            _walk(v, found, in_usage or key == "usage")


def record_cost(raw: Any) -> dict[str, float]:
    """The measures (:data:`MEASURES`) one record's raw output carries, each summed over the
    replies it holds; a measure it does not carry is absent."""
    found: dict[str, float] = {}
    _walk(raw, found, False)
    return found


def cost_table(rows: Iterable[tuple[str | None, Any]]) -> pd.DataFrame:
    """Per model (in first-seen order) of ``(model, raw output)`` rows: ``records``, and for
    each measure its ``_total`` (sum over the records carrying it), ``_median`` (median over
    them) and ``_n`` (how many carry it); NaN total and median where none does. Rows of no
    model (None: an item no model answered, such as a sweep's depth or V_eq) are left out.
    ``device``: None here (:func:`run_cost` fills it from the run's manifest)."""
    per: dict[str, list[dict[str, float]]] = {}
    for model, raw in rows:
        if model is not None:
            per.setdefault(model, []).append(record_cost(raw))
    out = []
    for model, costs in per.items():
        row: dict[str, str | int | float | None] = {
            "model": model,
            "device": None,
            "records": len(costs),
        }
        for m in MEASURES:
            values = np.array([c[m] for c in costs if m in c], dtype=float)
            row[f"{m}_total"] = float(values.sum()) if values.size else float("nan")
            row[f"{m}_median"] = float(np.median(values)) if values.size else float("nan")
            row[f"{m}_n"] = int(values.size)
        out.append(row)
    return pd.DataFrame(out, columns=list(COST_COLUMNS))


ModelOf = Callable[[Mapping[str, JsonValue]], str | None]


def spec_model(*fields: str) -> ModelOf:
    """A record's model: the first of ``fields`` its spec names (None: it names none)."""

    def model_of(spec: Mapping[str, JsonValue]) -> str | None:
        return next((str(spec[f]) for f in fields if spec.get(f)), None)

    return model_of


def run_cost(run_dir: Path | str, model_of: ModelOf) -> pd.DataFrame:
    """:func:`cost_table` of every record of the run in ``run_dir`` (read-only), each
    attributed to ``model_of(spec)`` (:func:`spec_model`), with the device and dtype each model
    was loaded on where the manifest's ``loaded_models`` says (``cuda:0, bfloat16``)."""
    from clearsight.store._run_store import RunStore

    with RunStore.open(run_dir, read_only=True) as store:
        table = cost_table((model_of(r.spec), r.raw) for r in store.iter_records(raw=True))
        loaded = store.manifest().get("loaded_models") or {}
    table["device"] = [_device(loaded.get(m)) for m in table["model"]]
    return table


def _device(info: Any) -> str | None:
    """``device, dtype`` of a loaded model's ``info`` (None: not recorded)."""
    if not isinstance(info, Mapping) or not info.get("device"):
        return None
    return ", ".join(str(info[k]) for k in ("device", "dtype") if info.get(k))
