"""The sweep in ``clearsight view``: :class:`SweepRunView`, the :class:`~clearsight.view.RunView`
of a sweep run (the sweep face's ``view`` part).

* **points**: the curves of the run's analysis (:func:`~clearsight.sweep.numbers.crossings.
  scene_bootstrap`'s point estimates, one draw: the viewer shows no interval), one per model,
  task, wording, signal and condition, each point with the filters that list exactly the
  records its ``n`` counts: the ok records of the cell with a value of the signal (an
  unparsed verbalized reply has no verbal confidence, so it is not behind that point).
* **listing**: the ok records a query selects, read with the store's chunked, filtered frame
  (:meth:`~clearsight.store.RunStore.to_frame`: only the listed columns of the rows that
  match, never the run), ImageNet-C corruptions other than fog left out as the analysis
  leaves them out; outcome, confidence sort and page on the selected rows.
* **detail** and **image**: one record read by its key (the store's key index). The image is
  re-rendered from the stored spec by :func:`~clearsight.sweep.references.human.item_png`
  (:func:`~clearsight.sweep.unit.item_image`, the pixels the sweep sends the model); the spec
  is rebuilt into its typed item and refused unless the rebuilt item's key is the stored key,
  so the image is that of exactly the item asked.

Filter values are those the run's configuration (its manifest) names, so a listing is checked
without reading a record; a store being written is read as it stands (read-only, no lock).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clearsight.faces.viewing import Bar, Detail, Listing, Point, Query, Row
from clearsight.scenes.coco import CocoTarget
from clearsight.specs import Options
from clearsight.store import RunStore, StoredRecord, run_manifest
from clearsight.sweep.results import ARMS, confidence_signal, fog_only, level_label
from clearsight.sweep.signals import SIGNALS, signal_values
from clearsight.sweep.specs import PROTOCOL, Physics, SceneRef, Shown, SweepItem
from clearsight.tasks import Question
from clearsight.validate import InputError

__all__ = ["QuestionOf", "SweepRunView", "sweep_item"]

#: A sweep question from its stored form (:func:`clearsight.sweep.face.question_of`, handed in
#: by the face that declares this view).
QuestionOf = Callable[[Mapping[str, Any]], Question]

#: The columns a listing reads of each selected record.
_COLUMNS = (
    "key",
    "scene.id",
    "model",
    "task",
    "wording",
    "condition",
    "level_m",
    "severity",
    "corruption",
    "answer",
    "question.correct",
    "correct",
    "abstained",
    "internal_conf",
    "verbal_conf",
)


def _scene_ref(stored: Mapping[str, Any]) -> SceneRef:
    coco = stored.get("coco")
    target = None
    if coco is not None:
        target = CocoTarget(**{**coco, "file": Path(coco["file"]), "box": tuple(coco["box"])})
    return SceneRef(stored["source"], stored["id"], (), (), target)


def _physics(stored: Mapping[str, Any]) -> Physics:
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in stored.items()}
    return Physics(**fields)


def sweep_item(key: str, spec: Mapping[str, Any], question_of: QuestionOf) -> SweepItem:
    """The typed sweep item of a stored spec (its question rebuilt by ``question_of``);
    InputError unless its key is ``key`` (the spec read back is then exactly the one the run
    asked)."""
    shown = spec.get("shown")
    names = ("target", "category", "condition", "level_m", "severity", "task", "asked", "wording")
    plain: dict[str, Any] = {name: spec.get(name) for name in (*names, "seed")}
    item = SweepItem(
        **plain,
        scene=_scene_ref(spec["scene"]),
        box=tuple(spec["box"]),
        question=question_of(spec["question"]),
        physics=_physics(spec["physics"]),
        shown=None
        if shown is None
        else Shown(_scene_ref(shown["scene"]), tuple(shown["box"]), shown["category"]),
        model=spec["model"],
        model_options=Options(spec["model_options"]),
        plasma=spec.get("plasma"),
        corruption=spec.get("corruption"),
    )
    if item.key != key:
        raise InputError(f"the stored spec of item {key} does not rebuild into that item")
    return item


def _text(value: Any) -> str:
    """A cell as the page shows it (empty for a missing value)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _flag(frame: pd.DataFrame, column: str) -> pd.Series:
    """A read-out flag as 1.0 (True) or 0.0 (False, None, absent), as the analysis reads it."""
    values = frame[column] if column in frame else pd.Series(False, index=frame.index)
    return values.astype(object).isin([True]).astype(float)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """The selected records with the signals' columns as the analysis types them."""
    out = frame.copy()
    for column in ("correct", "abstained"):
        out[column] = _flag(frame, column)
    for column in ("internal_conf", "verbal_conf", "level_m", "severity"):
        values = frame[column] if column in frame else pd.Series(np.nan, index=frame.index)
        out[column] = pd.to_numeric(values, errors="coerce").astype(float)
    return out


class SweepRunView:
    """The viewer's reads of one sweep run (module docstring)."""

    def __init__(self, run_dir: Path, question_of: QuestionOf) -> None:
        """Read ``run_dir``'s manifest (an InputError where it holds no sweep run);
        ``question_of`` rebuilds a stored question (for the images' items)."""
        self.run_dir = Path(run_dir)
        self.question_of = question_of
        manifest = run_manifest(self.run_dir)
        if (manifest.get("protocol") or PROTOCOL) != PROTOCOL:
            raise InputError(f"{self.run_dir} is a {manifest['protocol']} run, not a sweep")
        self.config: Mapping[str, Any] = manifest.get("config") or {}

    @property
    def title(self) -> str:
        """The run's directory name and protocol."""
        return f"{self.run_dir.resolve().name} (sweep)"

    @cached_property
    def _levels(self) -> dict[str, float]:
        return {level_label(v): float(v) for v in self.config.get("levels_m", ())}

    def filters(self) -> Mapping[str, tuple[str, ...]]:
        """model, task, wording, condition, level, severity and signal, as the run's
        configuration names them."""
        config = self.config
        controls = tuple(config.get("controls", ()))
        severities = config.get("imagenet_c_severities", ()) if "imagenet_c" in controls else ()
        return {
            "model": tuple(config.get("models", ())),
            "task": tuple(config.get("tasks", ())),
            "wording": tuple(config.get("wordings", ())),
            "condition": (*config.get("arms", ()), *controls),
            "level": tuple(self._levels),
            "severity": tuple(str(s) for s in severities),
            "signal": tuple(s.name for s in SIGNALS),
        }

    def points(self) -> tuple[Point, ...]:
        """Every curve point of the run's analysis, with the filters of its items."""
        from clearsight.sweep.numbers.crossings import scene_bootstrap
        from clearsight.sweep.results import load_run_data

        curves = scene_bootstrap(load_run_data(self.run_dir), n_boot=1).curves
        return tuple(_point(row) for row in curves.itertuples(index=False))

    def _where(self, filters: Mapping[str, str]) -> dict[str, Any]:
        where: dict[str, Any] = {
            name: filters[name] for name in ("model", "task", "wording") if name in filters
        }
        if "condition" in filters:
            where["condition"] = filters["condition"]
        if "level" in filters:
            where["level_m"] = self._levels[filters["level"]]
        if "severity" in filters:
            where["severity"] = int(filters["severity"])
        return where

    def _selected(self, query: Query) -> pd.DataFrame:
        """The ok records ``query`` selects, typed, before sorting and paging."""
        with RunStore.open(self.run_dir, read_only=True) as store:
            frame = store.to_frame(
                status="ok", kind=PROTOCOL, columns=_COLUMNS, where=self._where(query.filters)
            )
        frame = _typed(fog_only(frame))
        if frame.empty:
            return frame
        if "signal" in query.filters:
            frame = frame[np.isfinite(signal_values(frame, query.filters["signal"]))]
        pairs = zip(frame["model"].astype(str), frame["wording"].astype(str), strict=True)
        columns = [confidence_signal(m, w) for m, w in pairs]
        values = frame[["internal_conf", "verbal_conf"]].to_numpy()
        pick = np.array([c == "verbal_conf" for c in columns], dtype=np.intp)
        frame = frame.assign(confidence=values[np.arange(len(frame)), pick])
        return frame[_outcome(frame, query.outcome, query.threshold)]

    def listing(self, query: Query) -> Listing:
        """The page of records ``query`` asks for (module docstring)."""
        frame = self._selected(query)
        if frame.empty:
            return Listing((), 0)
        if query.sort:
            frame = frame.sort_values(
                "confidence", ascending=query.sort == "asc", kind="stable", na_position="last"
            )
        start = query.page * query.per_page
        page = frame.iloc[start : start + query.per_page]
        rows = page.to_dict("records")
        return Listing(tuple(_row({str(k): v for k, v in r.items()}) for r in rows), len(frame))

    def _record(self, key: str) -> StoredRecord | None:
        with RunStore.open(self.run_dir, read_only=True) as store:
            found = store.record(key)
        return found if found is not None and found.protocol == PROTOCOL else None

    def detail(self, key: str) -> Detail | None:
        """The record of ``key`` as its page shows it (None: no sweep record of that key)."""
        found = self._record(key)
        return None if found is None else _detail(found)

    def image(self, key: str) -> bytes | None:
        """The PNG the model was shown for ``key``, re-rendered from its stored spec."""
        from clearsight.sweep.references.human import item_png

        found = self._record(key)
        if found is None:
            return None
        depth = self.config.get("coco_depth_model") or _default_depth()
        return item_png(sweep_item(key, found.spec, self.question_of), str(depth))


def _default_depth() -> str:
    from clearsight.sweep.config import SweepConfig

    return str(SweepConfig.model_fields["coco_depth_model"].default)


def _outcome(frame: pd.DataFrame, outcome: str, threshold: float) -> Any:
    """The rows of ``frame`` with ``outcome`` (every row for ``""``)."""
    wrong = (frame["correct"] == 0.0) & (frame["abstained"] == 0.0)
    return {
        "": pd.Series(True, index=frame.index),
        "correct": frame["correct"] == 1.0,
        "wrong": wrong,
        "abstained": frame["abstained"] == 1.0,
        "confidently-wrong": wrong & (frame["confidence"] > threshold),
    }[outcome]


def _x_label(condition: str, x: float) -> str:
    if condition in ARMS:
        return f"{level_label(x)} m"
    return f"severity {int(x)}" if condition == "imagenet_c" else condition


def _point(row: Any) -> Point:
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


def _row(row: Mapping[str, Any]) -> Row:
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


def _detail(record: StoredRecord) -> Detail:
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
