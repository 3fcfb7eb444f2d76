"""How a sweep record reads in ``clearsight view``: a curve point of the analysis with the
filters of its items, a listing's row and an item's page."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from clearsight.faces.viewing import Bar, Detail, Point, Row
from clearsight.store import StoredRecord
from clearsight.sweep.results import ARMS, level_label

__all__ = ["detail_of", "point_of", "row_of"]


def _text(value: Any) -> str:
    """A cell as the page shows it (empty for a missing value)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _x_label(condition: str, x: float) -> str:
    if condition in ARMS:
        return f"{level_label(x)} m"
    return f"severity {int(x)}" if condition == "imagenet_c" else condition


def point_of(row: Any) -> Point:
    """One row of the analysis's curves as a point, with its listing's filters."""
    filters = {"model": row.model, "task": row.task, "wording": row.wording}
    filters |= {"signal": row.signal, "condition": row.condition}
    if row.condition in ARMS:
        filters["level"] = level_label(row.x)
    elif row.condition == "imagenet_c":
        filters["severity"] = str(int(row.x))
    curve = " · ".join((row.model, row.task, row.wording, row.signal, row.condition))
    x_label = _x_label(row.condition, row.x)
    return Point(curve, x_label, float(row.estimate), int(row.n), filters)


def _outcome_label(row: Mapping[str, Any]) -> str:
    if row["abstained"] == 1.0:
        return "abstained"
    return "correct" if row["correct"] == 1.0 else "wrong"


def row_of(row: Mapping[str, Any]) -> Row:
    """One selected record as a listing's row."""
    level = row["level_m"]
    labels = {
        "scene": _text(row.get("scene.id")),
        "model": _text(row["model"]),
        "task": _text(row["task"]),
        "wording": _text(row["wording"]),
        "condition": _text(row["condition"]),
        "level": "" if np.isnan(level) else f"{level_label(level)} m",
        "answer": _text(row.get("answer")),
        "gold": _text(row.get("question.correct")),
        "outcome": _outcome_label(row),
    }
    confidence = row["confidence"]
    return Row(str(row["key"]), labels, None if np.isnan(confidence) else float(confidence))


def _raw_text(raw: Any) -> str:
    """What the model returned: its generated texts, else the raw output as JSON."""
    texts = raw.get("texts") if isinstance(raw, Mapping) else None
    if texts:
        return "\n---\n".join(str(t) for t in texts)
    return json.dumps(raw, indent=1, default=str)


def detail_of(record: StoredRecord) -> Detail:
    """A sweep record as its item's page shows it."""
    spec, readouts = record.spec, record.readouts or {}
    question = spec["question"]
    probs = readouts.get("letter_probs") or {}
    bars = tuple(
        Bar(
            f"{letter}. {option}",
            probs.get(letter),
            letter == readouts.get("answer"),
            letter == question["correct"],
        )
        for letter, option in zip(question["letters"], question["options"], strict=True)
    )
    level = spec.get("level_m")
    labels = {
        "model": str(spec["model"]),
        "scene": str(spec["scene"]["id"]),
        "target": str(spec["category"]),
        "task": str(spec["task"]),
        "wording": str(spec["wording"]),
        "condition": str(spec["condition"]),
        "level": "" if level is None else f"{level_label(level)} m",
    }
    names = ("answer", "correct", "abstained", "internal_conf", "verbal_conf", "letter_mass")
    values = {"status": record.status, "gold": str(question["correct"])}
    values |= {name: _text(readouts.get(name)) for name in names}
    return Detail(record.key, labels, question["prompt"], bars, values, _raw_text(record.raw))
