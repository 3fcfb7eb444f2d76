"""A leaderboard from exported records: every Every Eval Ever record under some folders
(``clearsight export --format eee``, or a downloaded copy of a Hub dataset of them) read as one
table, and the models ranked per evaluation (``fog W internal`` as \\|W\\|, ``fog V*_acc``,
``fog ECE internal``, ...) by its direction (``lower_is_better``), each with its 95 % interval
and the models it is not separable from: those whose intervals overlap its own. Written as
``leaderboard.csv`` and ``leaderboard.html`` (``clearsight board --records DIR``)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from clearsight.validate import InputError

__all__ = ["LEADERBOARD_COLUMNS", "leaderboard", "read_records", "write_leaderboard"]

LEADERBOARD_COLUMNS = (
    "evaluation",
    "rank",
    "model",
    "score",
    "low",
    "high",
    "lower_is_better",
    "not_separable_from",
    "n",
    "library",
)


def _row(record: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """One evaluation result of one record as a row (NaN bounds where it has no interval)."""
    score = result["score_details"]
    interval = (score.get("uncertainty") or {}).get("confidence_interval") or {}
    library = record.get("eval_library") or {}
    return {
        "evaluation": str(result["evaluation_name"]),
        "model": str(record["model_info"]["name"]),
        "score": float(score["score"]),
        "low": float(interval.get("lower", math.nan)),
        "high": float(interval.get("upper", math.nan)),
        "lower_is_better": bool(result["metric_config"]["lower_is_better"]),
        "n": (score.get("uncertainty") or {}).get("num_samples"),
        "library": f"{library.get('name', '')} {library.get('version', '')}".strip(),
    }


def read_records(folders: Sequence[Path]) -> pd.DataFrame:
    """Every evaluation result of every record (``*.json`` with ``evaluation_results``) under
    ``folders``, one row each; an InputError where a folder is missing or none holds one."""
    rows = []
    for folder in folders:
        if not Path(folder).is_dir():
            raise InputError(f"{folder} is no folder of exported records")
        for path in sorted(Path(folder).rglob("*.json")):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                rows += [_row(record, r) for r in record["evaluation_results"]]
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{path} is no Every Eval Ever record: {exc!r}") from None
    if not rows:
        raise InputError(
            f"no Every Eval Ever record under {', '.join(map(str, folders))}: export some with "
            "clearsight export RUN --format eee"
        )
    return pd.DataFrame(rows)


def _overlapping(group: pd.DataFrame) -> list[str]:
    """Per row of ``group`` (one evaluation), the other models whose interval overlaps its
    own (none where either has no interval)."""
    out = []
    for _, row in group.iterrows():
        overlap = (group["low"] <= row["high"]) & (row["low"] <= group["high"])
        others = group.loc[overlap & (group["model"] != row["model"]), "model"]
        out.append(", ".join(others))
    return out


def leaderboard(records: pd.DataFrame) -> pd.DataFrame:
    """Per evaluation, the models best first (rank 1; ties share the better rank), with the
    models each is not separable from; evaluations in first-seen order."""
    parts = []
    for _, group in records.groupby("evaluation", sort=False):
        group = group.reset_index(drop=True)
        lower = bool(group["lower_is_better"].iloc[0])
        key = group["score"] if lower else -group["score"]
        group["rank"] = key.rank(method="min").astype(int)
        group["not_separable_from"] = _overlapping(group)
        parts.append(group.sort_values(["rank", "model"], kind="stable"))
    return pd.concat(parts)[list(LEADERBOARD_COLUMNS)].reset_index(drop=True)


def write_leaderboard(folders: Sequence[Path], out: Path) -> tuple[Path, Path]:
    """Write ``out/leaderboard.html`` and ``out/leaderboard.csv`` from the records under
    ``folders`` (each replaced atomically)."""
    from clearsight.pages.html import esc, fmt_ci, frame_table, page
    from clearsight.pages.output import csv_text, write_atomic

    table = leaderboard(read_records(folders))
    shown = table.assign(
        score=[
            fmt_ci(s, lo, hi, 3)
            for s, lo, hi in zip(table["score"], table["low"], table["high"], strict=True)
        ],
        direction=[
            "lower is better" if v else "higher is better" for v in table["lower_is_better"]
        ],
    )[["evaluation", "rank", "model", "score", "direction", "not_separable_from", "n"]]
    shown = shown.rename(
        columns={"score": "score [95 % CI]", "not_separable_from": "not separable from"}
    )
    body = (
        f"<h1>clearsight leaderboard: {table['model'].nunique()} models</h1>"
        "<p class='note'>Per evaluation the models best first, each score with its 95 % "
        "bootstrap interval; a model is not separable from those whose intervals overlap its "
        "own. W is ranked as |W| (no gap between confidence and accuracy is best).</p>"
        f"{frame_table(shown)}"
        f"<p class='note'>From {esc(', '.join(map(str, folders)))}.</p>"
    )
    out.mkdir(parents=True, exist_ok=True)
    csv_path, html_path = out / "leaderboard.csv", out / "leaderboard.html"
    write_atomic(csv_path, csv_text(table))
    write_atomic(html_path, page("clearsight leaderboard", body))
    return html_path, csv_path
